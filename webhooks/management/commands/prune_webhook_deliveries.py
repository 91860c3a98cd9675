"""python manage.py prune_webhook_deliveries: delete delivery log entries older than 30 days.

The log keeps 30 days (spec, Events rule 7). Run it daily from the same scheduler as purge_expired
(a cron line, a Kubernetes CronJob); the API already hides older entries, so a missed day only lets
the table grow. Deletes in batches so no statement holds locks over millions of rows.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from webhooks.models import DELIVERY_LOG_DAYS, WebhookDelivery

BATCH = 5000


class Command(BaseCommand):
    help = f"Delete webhook delivery log entries older than {DELIVERY_LOG_DAYS} days."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=DELIVERY_LOG_DAYS,
                            help=f"keep this many days (default {DELIVERY_LOG_DAYS}, at least 1)")

    def handle(self, *args, days: int, **options):
        cutoff = timezone.now() - timedelta(days=max(1, days))
        deleted = 0
        while True:
            ids = list(WebhookDelivery.objects.filter(created_at__lt=cutoff).order_by("created_at")
                       .values_list("pk", flat=True)[:BATCH])
            if not ids:
                break
            deleted += WebhookDelivery.objects.filter(pk__in=ids).delete()[0]
        self.stdout.write(f"Deleted {deleted} webhook deliveries older than {max(1, days)} days.")
