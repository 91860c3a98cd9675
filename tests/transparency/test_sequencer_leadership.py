"""Two sequencer processes: one leads, the other stands by and takes over when the leader is killed (SIGKILL)
while records keep arriving; the log ends whole. PostgreSQL only (advisory locks, a shared database)."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection, connections

from provenance.models import Record
from tests.transparency import rfc9162
from tests.transparency.logs import decode, leaves_from_records, make_key, make_records
from tests.waiting import process_tree, wait_until
from transparency import note, selectors
from transparency.leadership import _HOLDER_SQL, LOCK_KEY
from transparency.models import LogState

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL advisory locks"),
]
ROOT = Path(__file__).resolve().parents[2]
INTERVAL = 0.2


class Sequencer:
    """`manage.py log_sequencer -v 2` (a line for each round it stands by), its JSON log lines collected."""

    def __init__(self, env: dict[str, str]):
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "log_sequencer", "--interval", str(INTERVAL), "--verbosity", "2"],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.startswith("{"):
                self.lines.append(json.loads(line))

    def said(self, words: str) -> list[dict]:
        return [line for line in list(self.lines) if words in line["message"]]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)


def _holder_backend() -> int | None:
    with connection.cursor() as cursor:
        cursor.execute(_HOLDER_SQL, [LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF])
        row = cursor.fetchone()
    return row[0] if row else None


def _seconds(line: dict) -> float:
    return datetime.fromisoformat(line["timestamp"].replace("Z", "+00:00")).timestamp()


def test_one_sequencer_leads_and_the_standby_takes_over_a_killed_leader_without_gap_or_duplicate():
    key = make_key()
    LogState.objects.get_or_create(pk=1)
    settings_dict = connection.settings_dict
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "true", "LOG_FORMAT": "json",
           "PYTHONUNBUFFERED": "1",
           "DATABASE_URL": f"postgres://{settings_dict['USER']}@{settings_dict['HOST']}:{settings_dict['PORT']}"
                           f"/{settings_dict['NAME']}"}
    sequencers = [Sequencer(env), Sequencer(env)]
    pids = lambda: [pid for s in sequencers for pid in process_tree(s.process.pid)]  # noqa: E731
    arriving, writer_errors = threading.Event(), []

    def write() -> None:  # records keep arriving, 20 at a time, until told to stop
        try:
            while not arriving.is_set():
                make_records(key, 20)
                time.sleep(0.05)
        except Exception as error:  # reported below
            writer_errors.append(error)
        finally:
            connections.close_all()

    writer = threading.Thread(target=write)
    try:
        leader = wait_until(lambda: next((s for s in sequencers if s.said(" leads: ")), None), pids=pids,
                            cpu_budget=60, what="a leader")
        standby = next(s for s in sequencers if s is not leader)
        writer.start()
        wait_until(lambda: LogState.objects.get(pk=1).tree_size >= 200, pids=pids, cpu_budget=60,
                   what="the leader integrates")
        wait_until(lambda: len(standby.said(" stands by: ")) >= 3, pids=pids, cpu_budget=30, what="standby rounds")
        # Only the leader integrates, and pg_stat_activity names it.
        assert leader.said("records integrated") and not standby.said("records integrated")
        assert not standby.said(" leads: ")
        with connection.cursor() as cursor:
            cursor.execute("SELECT application_name FROM pg_stat_activity WHERE application_name LIKE "
                           "'log_sequencer leader %' AND datname = current_database()")
            named = [row[0] for row in cursor.fetchall()]
        assert named == [f"log_sequencer leader {leader.said(' leads: ')[0]['message'].split()[2]}"]
        old_backend = _holder_backend()
        size_at_kill = LogState.objects.get(pk=1).tree_size
        root_at_kill = bytes(LogState.objects.get(pk=1).root_hash)

        leader.process.send_signal(signal.SIGKILL)
        leader.process.wait()
        wait_until(lambda: _holder_backend() != old_backend, pids=lambda: process_tree(standby.process.pid),
                   cpu_budget=30, what="PostgreSQL releases the dead leader's lock")
        released_at = time.time()
        taken = wait_until(lambda: standby.said(" leads: "), pids=lambda: process_tree(standby.process.pid),
                           cpu_budget=30, what="the standby takes over")
        # The standby's first try after the lock came free took it: at most one round standing by after that
        # (a try that ran just before the release and logged just after).
        late_rounds = [line for line in standby.said(" stands by: ") if _seconds(line) > released_at]
        assert len(late_rounds) <= 1, late_rounds
        assert _seconds(taken[0]) >= released_at - 1  # it took over after the kill, not before

        taken_size = LogState.objects.get(pk=1).tree_size
        wait_until(lambda: LogState.objects.get(pk=1).tree_size >= taken_size + 200,
                   pids=lambda: process_tree(standby.process.pid), cpu_budget=60, what="the new leader integrates")
        arriving.set()
        writer.join()
        assert writer_errors == []
        wait_until(lambda: not Record.objects.filter(log_index__isnull=True).exists()
                   and LogState.objects.get(pk=1).tree_size == Record.objects.count(),
                   pids=lambda: process_tree(standby.process.pid), cpu_budget=60, what="every record integrated")
    finally:
        arriving.set()
        if writer.is_alive():
            writer.join()
        for sequencer in sequencers:
            sequencer.stop()

    total = Record.objects.count()
    assert sorted(Record.objects.values_list("log_index", flat=True)) == list(range(total))
    state = LogState.objects.get(pk=1)
    leaves = leaves_from_records()
    assert state.tree_size == total and bytes(state.root_hash) == rfc9162.mth(leaves)
    checkpoint = selectors.latest_checkpoint()
    for published in selectors.log_public_keys()["keys"]:
        note.verify_note(checkpoint, published["vkey"])
    assert note.parse_checkpoint(note.split_note(checkpoint)[0]).tree_size == total
    # The tree before the kill is a prefix of the tree after it: the new leader appended, rewrote nothing.
    proof = selectors.consistency_between(first=size_at_kill, second=None)
    assert rfc9162.verify_consistency(size_at_kill, total, root_at_kill, bytes(state.root_hash),
                                      decode(proof["consistency_proof"]))
