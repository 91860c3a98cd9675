"""python manage.py log_sequencer: integrate new records into the transparency log, forever.

Run exactly one beside the web processes (a second one only waits on the first's lock). Each round,
every LOG_SEQUENCER_INTERVAL seconds, takes all pending records in batches, one transaction and one
signed checkpoint each. Stopping or killing it loses nothing: records stay pending until the next
run. `--once` integrates what is pending and exits (a cron job, a deploy step, tests).
"""

import contextlib

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from transparency.services import BATCH_SIZE, log_sequence, log_sequencer_run


class Command(BaseCommand):
    help = "Integrate pending records into the transparency log and sign checkpoints."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one round, then exit")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="records a transaction")
        parser.add_argument("--interval", type=float, default=None,
                            help="seconds between rounds (default: LOG_SEQUENCER_INTERVAL)")

    def handle(self, *args, once: bool, batch_size: int, interval: float | None, **options):
        if once:
            self.stdout.write(f"Integrated {log_sequence(limit=max(1, batch_size))} records.")
            return
        _name_connection()
        seconds = interval or settings.LOG_SEQUENCER_INTERVAL
        self.stdout.write(f"Log sequencer: a round every {seconds:g} s.")
        self.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):  # a batch in flight rolls back; its records stay pending
            log_sequencer_run(interval=seconds, limit=max(1, batch_size))


def _name_connection() -> None:
    """Label the connection `log_sequencer` in pg_stat_activity: operators (and bench/transparency_log.py,
    which measures the CPU of its PostgreSQL backend) can tell it from the web workers'."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET application_name TO 'log_sequencer'")
