"""python manage.py log_sequencer: integrate new records into the transparency log, forever.

Run one or more beside the web processes: on PostgreSQL exactly one leads and sequences, the others
stand by and take over within a round of the leader's end (transparency/leadership.py); on SQLite run
one. Each round, every LOG_SEQUENCER_INTERVAL seconds, the leader takes all pending records in batches,
one transaction and one signed checkpoint each. Stopping or killing it loses nothing: records stay
pending until the next leader's round. `--once` integrates what is pending and exits, leader or not (a
cron job, a deploy step, tests): the log's row lock keeps it from interleaving with a running leader.
"""

import contextlib
import logging

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import connection

from transparency.leadership import SequencerLeadership
from transparency.services import BATCH_SIZE, log_sequence, log_sequencer_run


class Command(BaseCommand):
    help = "Integrate pending records into the transparency log and sign checkpoints."

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one round, then exit")
        parser.add_argument("--batch-size", type=int, default=BATCH_SIZE, help="records a transaction")
        parser.add_argument("--interval", type=float, default=None,
                            help="seconds between rounds (default: LOG_SEQUENCER_INTERVAL)")

    def handle(self, *args, once: bool, batch_size: int, interval: float | None, verbosity: int, **options):
        if once:
            self.stdout.write(f"Integrated {log_sequence(limit=max(1, batch_size))} records.")
            return
        _name_connection()
        if verbosity >= 2:  # a line for every round a standby waits, naming the leader
            logging.getLogger("transparency").setLevel(logging.DEBUG)
        seconds = interval or settings.LOG_SEQUENCER_INTERVAL
        self.stdout.write(f"Log sequencer: a round every {seconds:g} s.")
        self.stdout.flush()
        leadership = SequencerLeadership()
        try:
            with contextlib.suppress(KeyboardInterrupt):  # a batch in flight rolls back; its records stay pending
                log_sequencer_run(interval=seconds, limit=max(1, batch_size), leads=leadership.hold)
        finally:
            leadership.release()  # at once, not when the process's sockets close


def _name_connection() -> None:
    """Label the connection `log_sequencer` in pg_stat_activity: operators (and bench/transparency_log.py,
    which measures the CPU of its PostgreSQL backend) can tell it from the web workers'. The leadership
    lock has a connection of its own, `log_sequencer leader ...` or `log_sequencer standby ...`."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET application_name TO 'log_sequencer'")
