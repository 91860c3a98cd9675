"""SequencerLeadership in one process: two claims are two database sessions (tests/transparency/
test_sequencer_leadership.py runs real sequencer processes)."""

import time

import pytest
from django.db import connection

from transparency.leadership import SequencerLeadership

pytestmark = pytest.mark.django_db(transaction=True)
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL advisory locks")


def _wait_gone(backend: int, polls: int = 2000) -> None:
    """Until PostgreSQL no longer lists the backend; `polls` bounds the wait (a guard, not a speed check)."""
    for _ in range(polls):
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", [backend])
            if cursor.fetchone()[0] == 0:
                return
        time.sleep(0.005)
    raise AssertionError(f"backend {backend} still listed after {polls} polls")


@postgres_only
def test_one_claim_leads_and_the_other_takes_over_when_it_is_released():
    first, second = SequencerLeadership(), SequencerLeadership()
    try:
        assert first.hold() is True
        assert second.hold() is False
        assert first.hold() is True  # still held, checked round after round
        assert "log_sequencer leader" in second.holder()
        first.release()
        assert second.hold() is True
        assert first.hold() is False
    finally:
        first.release()
        second.release()


@postgres_only
def test_a_leader_whose_session_is_ended_stops_leading_and_the_standby_takes_over(caplog):
    first, second = SequencerLeadership(), SequencerLeadership()
    try:
        assert first.hold() and not second.hold()
        backend = int(second.holder().split()[1])
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [backend])  # as a PostgreSQL restart would
        _wait_gone(backend)  # pg_terminate_backend only signals: the session (and its lock) ends a moment later
        assert second.hold() is True
        assert first.hold() is False
        assert "leadership lost" in caplog.text
    finally:
        first.release()
        second.release()


@pytest.mark.skipif(connection.vendor == "postgresql", reason="SQLite only")
def test_on_sqlite_every_sequencer_leads():
    assert SequencerLeadership().hold() is True
    assert SequencerLeadership().hold() is True
