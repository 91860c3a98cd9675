"""python manage.py purge_expired: delete email tokens and 2FA challenges that can no longer be used.

Run it daily (cron or a scheduler); the auth flows never read expired rows, so this only keeps the
tables small.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts.models import EmailToken, TwoFactorChallenge

GRACE = timedelta(days=1)  # keep a day of history for support questions ("my link did not work")


class Command(BaseCommand):
    help = "Delete expired or used email tokens and 2FA challenges older than a day."

    def handle(self, *args, **options):
        cutoff = timezone.now() - GRACE
        tokens, _ = EmailToken.objects.filter(expires_at__lt=cutoff).delete()
        used_tokens, _ = EmailToken.objects.filter(used_at__lt=cutoff).delete()
        challenges, _ = TwoFactorChallenge.objects.filter(expires_at__lt=cutoff).delete()
        self.stdout.write(f"Deleted {tokens + used_tokens} email tokens and {challenges} 2FA challenges.")
