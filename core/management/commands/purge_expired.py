"""python manage.py purge_expired: delete the rows that can no longer matter: used or expired email tokens
and 2FA challenges, blocklisted JWTs past their expiry, closed rate-limit windows, Idempotency-Key
responses after 24 hours, the dashboard's signed-file downloads after their hour (each app registers its
own, core/housekeeping.py).

Run it daily (cron or a scheduler); nothing reads expired rows, so this only keeps the tables small.
"""

from django.core.management.base import BaseCommand

from core import housekeeping


class Command(BaseCommand):
    help = ("Delete expired or used email tokens and 2FA challenges older than a day, expired JWT blocklist "
            "entries, closed rate-limit windows, Idempotency-Key responses older than 24 hours and expired "
            "signed-file downloads.")

    def handle(self, *args, **options):
        counts = housekeeping.purge_all()
        self.stdout.write("Deleted " + ", ".join(f"{count} {what}" for what, count in counts.items()) + ".")
