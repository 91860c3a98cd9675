"""The sequencer: records into the log in batches, and signed checkpoints of the tree.

Record creation never waits for the log: it inserts records with a null `log_index`, and the
sequencer (manage.py log_sequencer, its own process) later takes them in (signed_at, id) order. Each
batch is one transaction holding the lock on the log's state row: indices, tiles, tree state and the
new checkpoint commit together or not at all, so a sequencer killed mid-batch leaves the records
pending and the next run integrates them, each exactly once (a unique index on `log_index` and the
`log_index IS NULL` guard on every update back that up).

With a signer service (SIGNER_SOCKET) the checkpoint is signed there, and the signer signs only a tree it
can read from the database (transparency.checkpoint_policy): so the batch (indices, tiles, the integrated
tree) commits first and the checkpoint in a second transaction, under the same lock. Readers only ever
see the signed tree (LogState.tree_size); a signer that is down leaves the integrated tree unsigned until a
later round signs it.
"""

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import ServiceUnavailable
from core.signer_client import SignerRefused, signer_configured
from provenance.models import Record
from provenance.services import record_log_indices_assign
from transparency import merkle, note
from transparency.keys import checkpoint_signers, published_log_keys
from transparency.models import LogState, LogTile
from transparency.selectors import ENTRY_COLUMNS, entry_of
from transparency.tiles import TILE_WIDTH, TileReader, append_leaves, edge_tiles

logger = logging.getLogger(__name__)

BATCH_SIZE = 5000  # records a transaction: large enough to amortise the checkpoint, short enough to hold a lock


@dataclass(frozen=True)
class BatchResult:
    integrated: int
    tree_size: int
    checkpoint_signed: bool


def log_integrate_batch(*, limit: int = BATCH_SIZE) -> BatchResult:
    """Add up to `limit` pending records to the log and sign a checkpoint of the new tree: atomically in
    this process, or, with a signer service, the batch first and the checkpoint after.

    With nothing pending, signs a checkpoint only if none exists, it is not of the integrated tree, or it
    is not by the current keys and origin (a rotated LOG_SIGNING_KEY). Returns what was done; with a
    signer that cannot be reached or refuses, `checkpoint_signed` is False (logged, tried again next round).
    """
    with transaction.atomic():
        state = _locked_state()
        pending = list(Record.objects.filter(log_index__isnull=True).order_by("signed_at", "id")
                       .values_list(*ENTRY_COLUMNS)[:limit])
        if pending:
            state.integrated_size, state.integrated_root = _append(state, pending)
        signed = not signer_configured() and _checkpoint_due(state)
        if signed:
            _checkpoint_sign(state)
        if pending or signed:
            state.save()
    if signer_configured():
        signed = _checkpoint_through_signer()
    return BatchResult(integrated=len(pending), tree_size=state.integrated_size, checkpoint_signed=signed)


def log_sequence(*, limit: int = BATCH_SIZE) -> int:
    """Integrate every record pending now, batch after batch (a round of the sequencer). Returns how many."""
    total = 0
    while True:
        result = log_integrate_batch(limit=limit)
        total += result.integrated
        if result.integrated < limit:
            if total:
                logger.info("log: %d records integrated, tree size %d", total, result.tree_size)
            return total


def log_sequencer_run(*, interval: float, limit: int = BATCH_SIZE, rounds: int | None = None,
                      leads: Callable[[], bool] = lambda: True) -> None:
    """The sequencer loop: a round every `interval` seconds, forever or for `rounds` rounds.

    Rounds start at a fixed rate, so a round's own time does not stretch the interval; a round that
    overruns starts the next at once, without trying to catch up on the ones it missed. A round in which
    `leads()` is false (another instance sequences: transparency.leadership) does nothing else.
    """
    next_round, done = time.monotonic(), 0
    while rounds is None or done < rounds:
        if leads():
            log_sequence(limit=limit)
        done += 1
        next_round = max(next_round + interval, time.monotonic())
        time.sleep(max(0.0, next_round - time.monotonic()))


def log_checkpoint_sign() -> LogState:
    """Sign a checkpoint of the tree as it is now, on demand (after a key rotation, say)."""
    with transaction.atomic():
        state = _locked_state()
        _checkpoint_sign(state)
        state.save()
    return state


def _checkpoint_through_signer() -> bool:
    # The batch is committed: the signer reads the tree it is asked to sign. The lock keeps another
    # sequencer from appending between its check and our save.
    with transaction.atomic():
        state = _locked_state()
        try:
            if not _checkpoint_due(state):
                return False
            _checkpoint_sign(state)
        except (ServiceUnavailable, SignerRefused) as error:
            logger.error("log: the checkpoint of tree size %d is not signed: %s", state.integrated_size, error)
            return False
        state.save()
    return True


def _checkpoint_due(state: LogState) -> bool:
    return (not state.checkpoint or state.tree_size != state.integrated_size
            or _signed_by_other_keys(bytes(state.checkpoint)))


def _locked_state() -> LogState:
    state = LogState.objects.select_for_update().filter(pk=LogState.SINGLETON).first()
    if state is None:  # a new (or flushed test) database has no row yet
        LogState.objects.get_or_create(pk=LogState.SINGLETON)
        state = LogState.objects.select_for_update().get(pk=LogState.SINGLETON)
    return state


def _append(state: LogState, pending: list[tuple]) -> tuple[int, bytes]:
    """Give the pending records the next indices and write the tiles they change. Returns size and root."""
    leaves = [merkle.leaf_hash(entry_of(row)) for row in pending]
    edge = {(level, index): bytes(hashes) for level, index, hashes
            in LogTile.objects.filter(width__lt=TILE_WIDTH).values_list("level", "index", "hashes")}
    appended = append_leaves(state.integrated_size, edge_tiles(state.integrated_size, edge), leaves)
    record_log_indices_assign(record_ids=[row[0] for row in pending], first_index=state.integrated_size)
    LogTile.objects.bulk_create(
        [LogTile(level=level, index=index, width=len(hashes) // merkle.HASH_BYTES, hashes=hashes)
         for (level, index), hashes in appended.tiles.items()],
        update_conflicts=True, unique_fields=["level", "index"], update_fields=["width", "hashes"])
    return appended.tree_size, merkle.root_hash(appended.tree_size, TileReader({**edge, **appended.tiles}).node)


def _checkpoint_sign(state: LogState) -> None:
    """Sign the integrated tree and make it the checkpoint's. Raises ServiceUnavailable, SignerRefused (a
    signer service)."""
    checkpoint = note.Checkpoint(origin=settings.LOG_ORIGIN, tree_size=state.integrated_size,
                                 root_hash=bytes(state.integrated_root))
    state.checkpoint = note.sign_note(checkpoint.text(), checkpoint_signers()).encode()
    state.tree_size, state.root_hash = state.integrated_size, bytes(state.integrated_root)
    state.checkpoint_at = timezone.now()


def _signed_by_other_keys(signed: bytes) -> bool:
    try:
        _, signatures = note.split_note(signed.decode())
    except ValueError:
        return True
    return {(s.name, s.key_id) for s in signatures} != {(k.name, k.key_id) for k in published_log_keys()}
