"""python manage.py log_checkpoint: sign a checkpoint of the log as it is now, on demand.

The sequencer signs one after every batch; this is for the times nothing is pending but a fresh
signature is wanted, such as right after LOG_SIGNING_KEY or LOG_ORIGIN changed.
"""

from django.core.management.base import BaseCommand

from transparency.services import log_checkpoint_sign


class Command(BaseCommand):
    help = "Sign a checkpoint of the transparency log's current tree and print it."

    def handle(self, *args, **options):
        self.stdout.write(bytes(log_checkpoint_sign().checkpoint).decode(), ending="")
