"""python manage.py purge_expired: delete email tokens, 2FA challenges, blocklisted JWTs, rate
counters, idempotent responses (after 24 hours) and the dashboard's signed-file downloads (after their
hour) that can no longer matter.

Run it daily (cron or a scheduler); nothing reads expired rows, so this only keeps the tables small.
"""

from datetime import timedelta

from django.core.management.base import BaseCommand
from django.utils import timezone

from accounts import blocklist
from accounts.models import EmailToken, TwoFactorChallenge
from config import idempotency, ratelimit
from dashboard.services import signed_files_purge

GRACE = timedelta(days=1)  # keep a day of history for support questions ("my link did not work")


class Command(BaseCommand):
    help = ("Delete expired or used email tokens and 2FA challenges older than a day, expired JWT blocklist "
            "entries, closed rate-limit windows, Idempotency-Key responses older than 24 hours and expired "
            "signed-file downloads.")

    def handle(self, *args, **options):
        cutoff = timezone.now() - GRACE
        tokens, _ = EmailToken.objects.filter(expires_at__lt=cutoff).delete()
        used_tokens, _ = EmailToken.objects.filter(used_at__lt=cutoff).delete()
        challenges, _ = TwoFactorChallenge.objects.filter(expires_at__lt=cutoff).delete()
        blocked = blocklist.purge_expired()
        counters = ratelimit.purge_expired()
        responses = idempotency.purge_expired()
        # Signed files go as soon as their hour is over: they are the bulkiest rows, and nothing reads them after.
        downloads = signed_files_purge(before=timezone.now())
        self.stdout.write(f"Deleted {tokens + used_tokens} email tokens, {challenges} 2FA challenges, "
                          f"{blocked} blocklisted JWTs, {counters} rate counters, {responses} idempotent "
                          f"responses and {downloads} signed-file downloads.")
