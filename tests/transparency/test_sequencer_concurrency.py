"""The sequencer under real concurrency and a real kill: PostgreSQL only (row locks, a shared database)."""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection

from provenance.models import Record
from tests.transparency import rfc9162
from tests.transparency.logs import make_key, make_records
from tests.waiting import wait_for_process
from transparency import services
from transparency.models import LogState, LogTile

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks and a shared database"),
]
ROOT = Path(__file__).resolve().parents[2]


def _assert_log_is_whole(expected: int) -> None:
    indexes = sorted(Record.objects.exclude(log_index=None).values_list("log_index", flat=True))
    assert indexes == list(range(expected))
    state = LogState.objects.get(pk=1)
    tiles = {(t.level, t.index): bytes(t.hashes) for t in LogTile.objects.filter(level=0)}
    leaves = [tiles[(0, i // 256)][(i % 256) * 32:(i % 256 + 1) * 32] for i in range(expected)]
    assert state.tree_size == expected and bytes(state.root_hash) == rfc9162.mth(leaves)


def test_two_sequencers_and_writers_at_once_integrate_every_record_once():
    from django.db import connections

    key = make_key()
    make_records(key, 500)
    errors = []

    def run(target):
        try:
            target()
        except Exception as error:  # reported by the assertion below
            errors.append(error)
        finally:
            connections.close_all()

    def write():
        for _ in range(10):
            make_records(key, 50)

    threads = [threading.Thread(target=run, args=(lambda: [services.log_sequence(limit=70) for _ in range(8)],))
               for _ in range(2)] + [threading.Thread(target=run, args=(write,))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    services.log_sequence()
    _assert_log_is_whole(1000)


def test_a_sequencer_killed_mid_batch_loses_and_duplicates_nothing():
    make_records(make_key(), 12_000)
    LogState.objects.get_or_create(pk=1)  # a flushed database has none; the poll below reads it
    settings_dict = connection.settings_dict
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true",
           "DATABASE_URL": f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
                           f"/{settings_dict['NAME']}"}
    process = subprocess.Popen([sys.executable, "manage.py", "log_sequencer", "--batch-size", "2000"], cwd=ROOT,
                               env=env, stdout=subprocess.DEVNULL)
    try:
        # Until its first batch committed (the next one is then in flight), bounded by the sequencer's CPU.
        wait_for_process(lambda: LogState.objects.get(pk=1).tree_size >= 2000, process, what="first batch")
        time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    killed_at = LogState.objects.get(pk=1).tree_size
    assert 0 < killed_at < 12_000 and killed_at % 2000 == 0
    assert Record.objects.filter(log_index__isnull=True).count() == 12_000 - killed_at
    services.log_sequence()
    _assert_log_is_whole(12_000)
