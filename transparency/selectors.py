"""Public reads of the transparency log: the checkpoint, proofs, tiles, entry bundles and keys.

Every proof is computed from the stored tiles against the latest checkpoint, both read by one SQL
statement (one snapshot): a record's `log` costs a single query whatever the tree's size.
"""

import base64
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from core.errors import NotFound, ValidationFailed
from provenance.models import Record
from record_format.payload import SIGNED_FIELDS
from transparency import merkle
from transparency.entries import entry_bundle, entry_bytes
from transparency.keys import ALGORITHMS, published_log_keys
from transparency.models import LogState, LogTile
from transparency.tiles import ENTRIES, TILE_HEIGHT, TILE_WIDTH, SubtreeCache, TilePath, TileReader, tiles_needed

PENDING = {"status": "pending"}
# A record's columns that its log entry is made of, in `entry_of`'s order.
ENTRY_COLUMNS = ("id", *SIGNED_FIELDS, "signature", "key__kid", "signed_at")
_MAX_TILES = (1 << 63) // TILE_WIDTH  # log indexes are bigints
_PATH_LEVELS = 8  # tile levels a leaf's path may cross: 256**8 leaves is beyond any tree we will hold

_TILES = connection.ops.quote_name(LogTile._meta.db_table)
_STATE = connection.ops.quote_name(LogState._meta.db_table)
_INDEX = connection.ops.quote_name("index")
_RECORDS = connection.ops.quote_name(Record._meta.db_table)
# A record's id in the tiles' bytes column (PostgreSQL's UNION wants one type; SQLite has none to match).
_RECORD_ID_BYTES = "CAST(CAST(id AS TEXT) AS BYTEA)" if connection.vendor == "postgresql" else "id"
# The signed tree's edge tile at each level: (level L, index tree_size >> 8(L + 1)), the size read in SQL.
_EDGE_LEVELS = _PATH_LEVELS - 1  # level 7 would shift by 64 bits; its tiles exist past 2**56 entries only
_SIGNED_EDGE = " OR ".join(f"(level = {level} AND {_INDEX} = (SELECT tree_size FROM {_STATE} WHERE id = %s) >> "  # noqa: S608
                           f"{TILE_HEIGHT * (level + 1)})" for level in range(_EDGE_LEVELS))  # constants only
_SUBTREES = SubtreeCache()  # the process's proofs share the hashing of the upper tiles' subtrees


@dataclass(frozen=True)
class LogSnapshot:
    """The tree at its latest checkpoint, and the tiles read with it."""

    tree_size: int
    checkpoint: str
    reader: TileReader
    record_id: uuid.UUID | None = None  # the record at `record_at`, when asked for


def record_logs(records: list[Record]) -> dict[uuid.UUID, dict]:
    """The `log` object of each record: pending, or its index and inclusion proof. One query at most."""
    indexes = {record.log_index for record in records if record.log_index is not None}
    snapshot = _snapshot(set().union(*(_path_tiles(index) for index in indexes))) if indexes else None
    return {record.pk: _record_log(record.log_index, snapshot) for record in records}


def record_log(record: Record) -> dict:
    return record_logs([record])[record.pk]


def inclusion_for_record(*, record_id: uuid.UUID) -> dict:
    """Public: the record's `log` object and its id. Raises NotFound for an unknown record."""
    record = Record.objects.filter(pk=record_id).only("id", "log_index").first()
    if record is None:
        raise NotFound("Record not found.")
    return {"record_id": str(record.pk), **record_log(record)}


def inclusion_for_index(*, index: int) -> dict:
    """Public: the inclusion proof of leaf `index` against the latest checkpoint. Raises NotFound."""
    snapshot = _snapshot(_path_tiles(index), record_at=index)
    if snapshot is None or index >= snapshot.tree_size:
        raise NotFound("No entry at this index yet.")
    return {"record_id": str(snapshot.record_id), **_record_log(index, snapshot)}


def consistency_between(*, first: int, second: int | None) -> dict:
    """Public: the proof that the tree of size `first` is a prefix of the one of size `second` (default:
    the latest). Raises ValidationFailed unless first <= second, NotFound beyond the tree."""
    if second is not None and first > second:
        raise ValidationFailed("The first tree size may not exceed the second.",
                               details={"first": ["Must not exceed second."]})
    size, checkpoint = _state_row()
    target = size if second is None else second
    if not checkpoint or target > size or first > target:
        raise NotFound("The tree is not that large yet.")
    snapshot = _snapshot(tiles_needed(lambda node: merkle.consistency_proof(first, target, node)))
    proof = merkle.consistency_proof(first, target, snapshot.reader.node)
    return {"first": first, "second": target, "consistency_proof": _encoded(proof), "checkpoint": snapshot.checkpoint}


def latest_checkpoint() -> str:
    """Public: the latest signed checkpoint note. Raises NotFound before the first one."""
    _, checkpoint = _state_row()
    if not checkpoint:
        raise NotFound("The log has no checkpoint yet: the sequencer signs the first one.")
    return checkpoint


def tile_content(path: TilePath) -> bytes:
    """Public: a tile's hashes or an entry bundle, full or partial. Raises NotFound beyond the tree."""
    width = path.width or TILE_WIDTH
    if path.index >= _MAX_TILES:  # beyond any tree, and beyond what a bigint column can be asked about
        raise NotFound("No such tile in the tree yet.")
    if path.level == ENTRIES:
        return _bundle(path.index, width)
    row = LogTile.objects.filter(level=path.level, index=path.index).values_list("width", "hashes").first()
    if row is None or row[0] < width:
        raise NotFound("No such tile in the tree yet.")
    return bytes(row[1])[:width * merkle.HASH_BYTES]


def log_public_keys() -> dict:
    """Public: the origin and the keys that sign checkpoints, as signed-note vkeys and raw keys."""
    return {"origin": settings.LOG_ORIGIN,
            "keys": [{"algorithm": name, "key_id": key.key_id.hex(), "signature_type": key.type.hex(),
                      "public_key": base64.b64encode(key.public_key).decode(), "vkey": key.vkey}
                     for name, key in zip(ALGORITHMS, published_log_keys(), strict=True)]}


def _bundle(index: int, width: int) -> bytes:
    first = index * TILE_WIDTH
    rows = list(Record.objects.filter(log_index__gte=first, log_index__lt=first + width).order_by("log_index")
                .values_list(*ENTRY_COLUMNS))
    if len(rows) < width:
        raise NotFound("No such entry bundle in the tree yet.")
    return entry_bundle([entry_of(row) for row in rows])


def entry_of(row: tuple) -> bytes:
    """The log entry of a record read as `values_list(*ENTRY_COLUMNS)`."""
    record_id, *signed, signature, kid, signed_at = row
    return entry_bytes(record_id=str(record_id), signed_payload=dict(zip(SIGNED_FIELDS, map(str, signed), strict=True)),
                       signature=bytes(signature), kid=kid, signed_at=signed_at)


def _record_log(index: int | None, snapshot: LogSnapshot | None) -> dict:
    if index is None or snapshot is None or index >= snapshot.tree_size:
        return dict(PENDING)
    proof = merkle.inclusion_proof(index, snapshot.tree_size, snapshot.reader.node)
    return {"status": "integrated", "index": index, "tree_size": snapshot.tree_size,
            "inclusion_proof": _encoded(proof), "checkpoint": snapshot.checkpoint}


def _path_tiles(index: int) -> set[tuple[int, int]]:
    """The tile of each level above leaf `index`: with the right edge, all that its proof reads."""
    return {(level, index >> (TILE_HEIGHT * (level + 1))) for level in range(_PATH_LEVELS)}


def _snapshot(wanted: set[tuple[int, int]], record_at: int | None = None) -> LogSnapshot | None:
    """The latest checkpoint with the right-edge tiles and `wanted` (and the id of the record at index
    `record_at`), in one statement; None before any checkpoint."""
    pairs = sorted(wanted)
    condition = " OR ".join(["(level = %s AND " + _INDEX + " = %s)"] * len(pairs)) or "FALSE"
    # Only quoted names are formatted in; values are parameters. The state row rides along as level -1, the
    # record's id (as text) as level -2. The signed tree's right edge comes by its size as well as by width:
    # with a signer service the tiles may already hold a larger tree, whose edge tiles are full at that size.
    sql = (f"SELECT level, {_INDEX}, hashes FROM {_TILES} WHERE width < %s OR {condition} OR {_SIGNED_EDGE} "  # noqa: S608
           f"UNION ALL SELECT -1, tree_size, checkpoint FROM {_STATE} WHERE id = %s")
    params = [TILE_WIDTH, *(value for pair in pairs for value in pair), *[LogState.SINGLETON] * _EDGE_LEVELS,
              LogState.SINGLETON]
    if record_at is not None:
        sql += f" UNION ALL SELECT -2, log_index, {_RECORD_ID_BYTES} FROM {_RECORDS} WHERE log_index = %s"  # noqa: S608
        params.append(record_at)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    tiles = {(level, index): bytes(hashes) for level, index, hashes in rows if level >= 0}
    state = next(((size, bytes(note).decode()) for level, size, note in rows if level == -1), None)
    if state is None or not state[1]:
        return None
    record_id = next((_uuid_of(value) for level, _, value in rows if level == -2), None)
    return LogSnapshot(tree_size=state[0], checkpoint=state[1], reader=TileReader(tiles, _SUBTREES),
                       record_id=record_id)


def _uuid_of(value: str | bytes | memoryview) -> uuid.UUID:
    return uuid.UUID(value if isinstance(value, str) else bytes(value).decode())  # SQLite: text; PostgreSQL: bytea


def _state_row() -> tuple[int, str]:
    row = LogState.objects.filter(pk=LogState.SINGLETON).values_list("tree_size", "checkpoint").first()
    return (row[0], bytes(row[1]).decode()) if row else (0, "")


def _encoded(hashes: list[bytes]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]
