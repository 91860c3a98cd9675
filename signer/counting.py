"""Every signature counted, exactly, per organization, generator, purpose, algorithm and UTC day, without a
database write on the signing path (docs/decisions.md, "Counting signatures").

`signature_counted` is called once per signature made (signer/service.py, in the signer and in process alike):
- with Redis, one HINCRBY into a hash every signer instance shares; a background thread folds that hash into
  SignatureCount every second. A fold first RENAMEs the live hash to a folding key of its own (new counts go
  to a new live hash), then adds the folding key's counts in one transaction that also stores the fold's
  token, then deletes the folding key. A crash before the commit leaves the folding key for the next fold;
  a crash after it leaves a folding key whose token is stored, deleted without adding it again.
- without Redis (or while Redis fails), in this process's memory, written to the database every second by a
  background thread and when the process stops: a crash loses at most the last second's counts.
"""

import datetime
import functools
import logging
import os
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import F
from django.utils import timezone

from core.cache import cache_key, redis_client, redis_failed, redis_skipped
from signer.models import SignatureCount, SignatureCountFold

logger = logging.getLogger("signer")

FLUSH_SECONDS = 1.0
FOLD_TOKENS_KEPT = datetime.timedelta(days=7)  # a folding key older than this is long gone from Redis
_SEPARATOR = "|"

# KEYS: live hash, folding key, set of folding tokens; ARGV: the token. Atomic in Redis: a count lands either
# in the hash this fold takes or in the next live hash, and the token is listed whenever its key exists.
_CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[2])
  redis.call('SADD', KEYS[3], ARGV[1])
  return 1
end
return 0
"""


@dataclass(frozen=True)
class CountKey:
    """What one count is kept under; ids as text ("" for none: a log checkpoint's)."""

    day: str  # ISO date, UTC
    org_id: str
    generator_id: str
    purpose: str
    algorithm: str

    def as_field(self) -> str:
        return _SEPARATOR.join((self.day, self.org_id, self.generator_id, self.purpose, self.algorithm))

    @classmethod
    def from_field(cls, text: str) -> "CountKey":
        return cls(*text.split(_SEPARATOR))


def signature_counted(*, org_id: str, generator_id: str | None, purpose: str, algorithm: str) -> None:
    """Count one signature made now. Never writes the database; never raises for a Redis failure (the
    count is then kept in this process instead)."""
    key = CountKey(timezone.now().date().isoformat(), org_id or "", generator_id or "", purpose, algorithm)
    tally = _redis_tally()
    if tally is not None:
        try:
            tally.count(key)
            _ensure_flusher()
            return
        except Exception as error:  # redis-py's errors: the count must not be lost nor the signature refused
            redis_failed("signatures counted in the signer's memory", error)
    _memory.count(key)
    _ensure_flusher()


def counts_flush() -> None:
    """Store what is counted and not stored yet: this process's memory, and the shared Redis hash when there
    is one. The flusher thread calls it every second; the signer_counts command before it reads."""
    _memory.flush()
    tally = _redis_tally()
    if tally is not None:
        tally.fold()


def counts_store(counts: Counter, *, fold_token: str | None = None) -> bool:
    """Add `counts` (CountKey -> signatures) to SignatureCount in one transaction. With `fold_token`, the
    token is stored in the same transaction, and False is returned (nothing added) when it already was."""
    with transaction.atomic():
        if fold_token is not None:
            try:
                with transaction.atomic():
                    SignatureCountFold.objects.create(token=fold_token)
            except IntegrityError:
                return False
        for key, signatures in sorted(counts.items(), key=lambda item: item[0].as_field()):
            _add(key, signatures)  # in one order: two folds at once never wait on each other's rows in a cycle
    return True


def _add(key: CountKey, signatures: int) -> None:
    rows = SignatureCount.objects.filter(day=key.day, org_id=_uuid(key.org_id), generator_id=_uuid(key.generator_id),
                                         purpose=key.purpose, algorithm=key.algorithm)
    if rows.update(count=F("count") + signatures):
        return
    try:
        with transaction.atomic():
            SignatureCount.objects.create(day=key.day, org_id=_uuid(key.org_id), generator_id=_uuid(key.generator_id),
                                          purpose=key.purpose, algorithm=key.algorithm, count=signatures)
    except IntegrityError:  # another fold made the row first
        rows.update(count=F("count") + signatures)


def _uuid(text: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None


class MemoryTally:
    """Counts kept in this process until they are written."""

    def __init__(self) -> None:
        self._counts: Counter = Counter()
        self._lock = threading.Lock()
        self._flushing = threading.Lock()  # one flush at a time: a second waits for the first's give-back

    def count(self, key: CountKey) -> None:
        with self._lock:
            self._counts[key] += 1

    def discard(self) -> None:
        with self._lock:
            self._counts = Counter()

    def flush(self) -> None:
        """Write what is counted; on failure keep it for the next flush and raise."""
        with self._flushing:
            with self._lock:
                taken, self._counts = self._counts, Counter()
            if not taken:
                return
            try:
                counts_store(taken)
            except BaseException:
                with self._lock:
                    self._counts.update(taken)
                raise


class RedisTally:
    """Counts in one Redis hash under `prefix`, shared by every process that counts there, folded into the
    database by any of them."""

    def __init__(self, client, prefix: str) -> None:
        self._client, self._prefix = client, prefix
        self._live, self._tokens = f"{prefix}:live", f"{prefix}:folding"
        self._claim_script = client.register_script(_CLAIM)

    def count(self, key: CountKey) -> None:
        self._client.hincrby(self._live, key.as_field(), 1)

    def fold(self) -> int:
        """Move what the live hash holds into the database, with every fold an earlier crash left behind.
        Returns how many folds were stored now."""
        self.claim()
        return sum(self.apply(token.decode()) for token in self._client.smembers(self._tokens))

    def claim(self) -> str | None:
        """Step one: take the live hash under a new folding key; None when there was nothing to take."""
        token = uuid.uuid4().hex
        taken = self._claim_script(keys=[self._live, self._folding_key(token), self._tokens], args=[token])
        return token if taken else None

    def apply(self, token: str) -> bool:
        """Steps two and three: store a folding key's counts, then let the key go."""
        stored = self.store(token)
        self.release(token)
        return stored

    def store(self, token: str) -> bool:
        """Step two: add a folding key's counts to the database, unless its token says they are already."""
        counts = Counter({CountKey.from_field(field.decode()): int(value)
                          for field, value in self._client.hgetall(self._folding_key(token)).items()})
        return bool(counts) and counts_store(counts, fold_token=token)

    def release(self, token: str) -> None:
        """Step three: forget a folding key whose counts are stored."""
        pipeline = self._client.pipeline(transaction=True)
        pipeline.delete(self._folding_key(token))
        pipeline.srem(self._tokens, token)
        pipeline.execute()

    def _folding_key(self, token: str) -> str:
        return f"{self._prefix}:folding:{token}"


def _redis_tally() -> RedisTally | None:
    if not settings.REDIS_URL or redis_skipped():
        return None
    client = redis_client()
    return _tally_for(client) if client is not None else None


@functools.lru_cache(maxsize=64)
def _tally_for(client) -> RedisTally:
    # Bounded like core.cache's clients, which it is keyed by (one per thread's cache): a signer serves each
    # connection on a new thread, and a dict of every client it ever had would hold their pools open.
    return RedisTally(client, cache_key("signer:signature-counts"))


_memory = MemoryTally()


class _Flusher:
    """This process's thread that stores the counts every FLUSH_SECONDS, and once more when it stops."""

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._last_pruned = 0.0
        self._database = _database_name()
        self._is_failing = False
        self._thread = threading.Thread(target=self._run, name="signature-count-flusher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._stopping.is_set():  # stopped already (stop_flusher), and Python's exit asks again
            return
        self._stopping.set()
        self._thread.join(timeout=30)
        self._flush()

    def _run(self) -> None:
        while not self._stopping.wait(FLUSH_SECONDS):
            self._flush()
            if time.monotonic() - self._last_pruned > 3600 and _database_name() == self._database:
                self._last_pruned = time.monotonic()
                self._guarded(lambda: SignatureCountFold.objects.filter(
                    folded_at__lt=timezone.now() - FOLD_TOKENS_KEPT).delete())

    def _flush(self) -> None:
        if _database_name() != self._database:
            # The counts belong to the database the process signed against; a test run that has dropped its
            # test database must not write them into the one configured after it.
            _memory.discard()
            return
        self._guarded(counts_flush)

    def _guarded(self, work) -> None:
        try:
            work()
            if self._is_failing:
                self._is_failing = False
                logger.info("signature counts are stored again")
        except Exception:  # the database or Redis is away: what was counted waits for the next flush
            if not self._is_failing:  # once per outage, not once a second
                self._is_failing = True
                logger.warning("signature counts could not be stored yet; retrying every second", exc_info=True)
        finally:
            # At most one connection a second, and none held between flushes (a restarted database, or one
            # that must be dropped, finds no idle connection of ours).
            connection.close()


def _database_name() -> str:
    return str(settings.DATABASES["default"]["NAME"])


class _FlusherState:
    flusher: _Flusher | None = None
    pid: int | None = None


_state = _FlusherState()
_state_lock = threading.Lock()


def _ensure_flusher() -> None:
    if _state.pid == os.getpid():
        return
    with _state_lock:  # started on first count: after a server forks its workers, one per process
        if _state.pid != os.getpid():
            _state.flusher, _state.pid = (_Flusher() if _writes_in_background() else None), os.getpid()
            if _state.flusher is not None:
                # Before Python joins its threads at exit: a signer that stops stores its last second's counts.
                threading._register_atexit(_state.flusher.stop)


def stop_flusher() -> None:
    """Stop this process's flusher thread after one last flush (a script that signs in process, before the
    database it counts into goes away)."""
    with _state_lock:
        if _state.flusher is not None and _state.pid == os.getpid():
            _state.flusher.stop()
            _state.flusher, _state.pid = None, None


def _writes_in_background() -> bool:
    # An in-memory SQLite database (the test suite's) takes table locks that fail at once instead of waiting:
    # a background writer would fail the request that holds them. There counts_flush() stores the counts.
    return not (connection.vendor == "sqlite" and connection.is_in_memory_db())
