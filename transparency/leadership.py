"""Which of several sequencers sequences: the one holding a PostgreSQL advisory lock.

The log sequencer may run in several instances for availability. Exactly one leads: it holds a
session-level `pg_try_advisory_lock` on a connection of its own, kept open while it runs. The others
stand by and try for the lock once a round; they never touch the log's state row, so they neither
wait on the leader's row lock nor load the database. The lock belongs to the leader's database
session, so PostgreSQL releases it the moment that session ends: a leader that is killed, crashes or
loses its connection hands over at a standby's next try (one LOG_SEQUENCER_INTERVAL).

Safety does not rest on the lock: every batch still locks the log's state row (transparency.services),
so even two sequencers that both believe they lead for a moment (a leader that lost its connection and
has not noticed yet) cannot give a record two indices or leave a gap. The lock only keeps the standbys idle.

Who leads is visible in pg_stat_activity: the lock connection is named `log_sequencer leader <host>:<pid>`
while it holds the lock and `log_sequencer standby <host>:<pid>` while it waits; each change is logged.
SQLite (development) has no advisory locks: there every sequencer leads, and one instance is enough
(SQLite's single writer serialises batches anyway).
"""

import contextlib
import logging
import os
import socket

from django.db import DatabaseError, connections

logger = logging.getLogger(__name__)

# Any 64-bit number no other part of the application locks: "tlogseq" in ASCII. Advisory locks are per
# database, so logs in two databases of one cluster do not share it.
LOCK_KEY = int.from_bytes(b"tlogseq", "big")
_HOLDER_SQL = ("SELECT a.pid, a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
               "WHERE l.locktype = 'advisory' AND l.granted AND l.database = "
               "(SELECT oid FROM pg_database WHERE datname = current_database()) "
               "AND l.classid = %s AND l.objid = %s AND l.objsubid = 1")


class SequencerLeadership:
    """This process's claim to lead, on a database connection of its own (not Django's thread connection,
    which Django may close and reopen, silently dropping a session lock)."""

    def __init__(self) -> None:
        self.leading = False
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self._connection = None

    def hold(self) -> bool:
        """Whether this process leads now: takes the lock when it is free, and checks a held one is still
        held (its session alive). A lost connection means a lost lock: False, and a new try next round."""
        if connections["default"].vendor != "postgresql":
            return True
        was_leading = self.leading
        try:
            self.leading = self._still_held() if was_leading else self._try_lock()
            if self.leading and not was_leading:
                self._set_name("leader")
        except DatabaseError as error:
            self._disconnect()
            self.leading = False
            if was_leading:
                logger.error("log sequencer %s: leadership lost with its database connection (%s)", self.name,
                             error)
            return False
        if self.leading and not was_leading:
            logger.info("log sequencer %s leads: it holds the advisory lock", self.name)
        elif not self.leading and logger.isEnabledFor(logging.DEBUG):  # naming the leader costs a query
            logger.debug("log sequencer %s stands by: %s leads", self.name, self.holder() or "nobody yet")
        return self.leading

    def holder(self) -> str | None:
        """The leading session, as 'backend <pid> (<application_name>)', or None when the lock is free."""
        try:
            with self._cursor() as cursor:
                cursor.execute(_HOLDER_SQL, [LOCK_KEY >> 32, LOCK_KEY & 0xFFFFFFFF])
                row = cursor.fetchone()
        except DatabaseError:
            return None
        return f"backend {row[0]} ({row[1]})" if row else None

    def release(self) -> None:
        """Give the lock up (on a clean stop): a standby takes over at its next try. Unlocked before the
        session is closed: a closed connection's backend ends (and frees the lock) a moment after `close`
        returns, and a standby asking in that moment would be refused."""
        if self._connection is not None and self.leading:
            logger.info("log sequencer %s stops leading", self.name)
            with contextlib.suppress(DatabaseError), self._cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
        self._disconnect()
        self.leading = False

    def _try_lock(self) -> bool:
        if self._connection is None:
            self._set_name("standby")
            logger.info("log sequencer %s asks for the advisory lock", self.name)
        with self._cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY])
            return bool(cursor.fetchone()[0])

    def _still_held(self) -> bool:
        # A session lock lasts as long as the session: the session answering is the lock held.
        with self._cursor() as cursor:
            cursor.execute("SELECT 1")
        return True

    def _set_name(self, role: str) -> None:
        with self._cursor() as cursor:
            cursor.execute("SELECT set_config('application_name', %s, false)", [f"log_sequencer {role} {self.name}"])

    def _cursor(self):
        if self._connection is None:
            self._connection = connections.create_connection("default")  # autocommit, outside any transaction
        return self._connection.cursor()

    def _disconnect(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(DatabaseError):
                self._connection.close()
            self._connection = None
