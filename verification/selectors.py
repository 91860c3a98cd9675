"""Finding the record a piece of content points to: by token, watermark id, exact content hash or near-match
fingerprint."""

import uuid
from datetime import datetime

from django.db import connection
from django.db.models import Q

from core.hot_sql import ChildWithParents
from generators.models import Generator
from provenance.models import Fingerprint, Record, RecordFingerprint
from provenance.phash_bands import BANDS, band_neighbours, phash_bands, signed_value

# A fingerprint within this many bits of a stored one of the same kind is a match. Multi-index
# hashing over four 16-bit bands: a hash within 7 bits agrees with some band to within 1 bit
# (pigeonhole), so probing each band's 17 neighbours finds every match through the indexes.
PHASH_MAX_DISTANCE = 7
_BAND_RADIUS = PHASH_MAX_DISTANCE // BANDS

# PostgreSQL (14+ for bit_count) weighs the candidates itself and returns only the winner's id, in one
# statement. An exact match is the nearest possible, so the newest one is looked for first, one probe
# of the record's (kind, value, signed_at) index; only without one does the banded search run (UNION
# ALL under LIMIT 1 stops at the first row). The search runs over the distinct values (Fingerprint):
# each band is an index-only scan of (kind, band) INCLUDE (value) keeping the values within the
# distance, so a crowd of records sharing a value costs one row, not one per record. Each candidate
# value's newest record comes from the exact index (a value whose records are gone has none and drops
# out); the nearest value wins, the newest record on ties. The candidates are walked in distance order
# until one value still has a record (usually the first; OFFSET 0 keeps the planner from probing them all
# before sorting), and only the values at that distance are probed for their newest record, not every
# candidate (near a crowded value there are hundreds). There is no candidate cap: every value that shares
# a band within one bit is weighed (a cap over unordered rows once dropped real matches).
# Only constants are formatted into the SQL (table names, band numbers); values are parameters.
_RECORDS = Record._meta.db_table
_MORE = RecordFingerprint._meta.db_table
_VALUES = Fingerprint._meta.db_table
_DISTANCE = "bit_count((value # (%(value)s)::bigint)::bit(64))"
_BAND_SQL = (f"SELECT value, {_DISTANCE} AS distance FROM {_VALUES} WHERE kind = %(kind)s "  # noqa: S608
             f"AND band{{band}} = ANY(%(band{{band}})s::integer[]) AND {_DISTANCE} <= %(max)s")
# A value's newest record: on the record itself or among records' further values (RecordFingerprint).
_NEWEST_WITH = (f"(SELECT id, signed_at FROM ((SELECT id, signed_at FROM {_RECORDS} "  # noqa: S608
                f"WHERE fingerprint_kind = %(kind)s AND phash_value = {{value}} ORDER BY signed_at DESC LIMIT 1) "
                f"UNION ALL (SELECT record_id, signed_at FROM {_MORE} WHERE kind = %(kind)s AND value = {{value}} "
                f"ORDER BY signed_at DESC LIMIT 1)) AS holders ORDER BY signed_at DESC LIMIT 1)")
_NEAREST_SQL = f"""(SELECT id, 0 AS distance FROM {_NEWEST_WITH.format(value="(%(value)s)::bigint")} AS exact)
UNION ALL
(WITH candidates AS MATERIALIZED (
     SELECT DISTINCT value, distance FROM ({" UNION ALL ".join(_BAND_SQL.format(band=band) for band in range(BANDS))})
     AS near),
 nearest AS (SELECT ordered.distance FROM (SELECT value, distance FROM candidates ORDER BY distance OFFSET 0) AS ordered
             CROSS JOIN LATERAL {_NEWEST_WITH.format(value="ordered.value")} AS holder LIMIT 1)
 SELECT winner.id, candidates.distance FROM candidates JOIN nearest USING (distance)
 CROSS JOIN LATERAL {_NEWEST_WITH.format(value="candidates.value")} AS winner
 ORDER BY winner.signed_at DESC LIMIT 1)
LIMIT 1"""  # noqa: S608


# Every verification that carries a token makes this lookup: its SQL is built once (core/hot_sql.py).
_RECORD_WITH_RELATIONS = ChildWithParents(Record, "org", "key", "generator", match=("id",))


def record_for_id(record_id: uuid.UUID) -> Record | None:
    return _RECORD_WITH_RELATIONS.get(record_id)


# The earliest record of a content hash: one probe of the (content_hash, signed_at, id) index, however many
# records share the hash (a client re-sending one file, a picture signed by several organizations).
_EARLIEST_WITH_HASH = ChildWithParents(Record, "org", "key", "generator", match=("content_hash",),
                                       order=("signed_at", "id"))


def record_for_content_hash(content_hash: str) -> Record | None:
    """The earliest record (by `signed_at`) whose content hash is `content_hash`, of any organization."""
    return _EARLIEST_WITH_HASH.get(content_hash)


def record_for_watermark(mark_id: int) -> Record | None:
    """The newest record whose server-made watermark id is `mark_id`.

    Only records the service signed and marked itself (a server-managed generator's). A client-managed
    record's `watermark_id` is whatever its caller signed, and public: counting it would let anyone claim
    another organization's mark by submitting a record that names it."""
    return _NEWEST_SERVER_MARK.get(f"{mark_id:016x}")


# The records whose watermark id counts: the ones a server-managed generator signed (record_for_watermark).
_SERVER_MARKED = Record.objects.filter(generator__mode=Generator.Mode.SERVER)
# Every verification that reads a mark makes this lookup (a re-shared copy's): SQL built once, as above.
_NEWEST_SERVER_MARK = ChildWithParents(Record, "org", "key", "generator", match=("watermark_id",),
                                       order=("-signed_at",), where=_SERVER_MARKED)


def record_ids_for_watermark(*, mark_id: int, family: str, limit: int) -> list[uuid.UUID]:
    """The records of one content family whose server-made watermark id is `mark_id`, newest first."""
    return list(_SERVER_MARKED.filter(watermark_id=f"{mark_id:016x}", format=family).order_by("-signed_at")
                .values_list("pk", flat=True)[:limit])


def record_for_fingerprint(*, kind: str, value: str) -> Record | None:
    """The closest record whose fingerprint is of `kind` and within PHASH_MAX_DISTANCE bits of `value`
    (16 hex digits), the newest on ties; None when there is none.

    Every distinct stored value sharing a band within one bit is weighed, however many records share it.
    """
    return record_for_fingerprints(kind=kind, values=[value])


def record_for_fingerprints(*, kind: str, values: list[str]) -> Record | None:
    """`record_for_fingerprint` of whichever of `values` comes nearest (the earlier one on ties)."""
    found = [best for best in (nearest_fingerprint(kind=kind, value=value) for value in values) if best]
    best = min(found, key=lambda pair: pair[1], default=None)
    return record_for_id(best[0]) if best is not None else None


def nearest_fingerprint(*, kind: str, value: str) -> tuple[uuid.UUID, int] | None:
    """`record_for_fingerprint`'s choice as (record id, distance in bits), without loading the record."""
    neighbours = [band_neighbours(band, _BAND_RADIUS) for band in phash_bands(value)]
    nearest = _nearest_in_sql if connection.vendor == "postgresql" else _nearest_in_python
    return nearest(kind, value, neighbours)


def _nearest_in_sql(kind: str, value: str, neighbours: list[list[int]]) -> tuple[uuid.UUID, int] | None:
    params = {"kind": kind, "value": signed_value(value), "max": PHASH_MAX_DISTANCE,
              **{f"band{band}": values for band, values in enumerate(neighbours)}}
    with connection.cursor() as cursor:
        cursor.execute(_NEAREST_SQL, params)
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def _nearest_in_python(kind: str, value: str, neighbours: list[list[int]]) -> tuple[uuid.UUID, int] | None:
    """The same choice in Python (SQLite, for development and tests): the same tables, same order."""
    exact = _newest_record_with(kind, signed_value(value))
    if exact is not None:
        return exact[0], 0
    probe = Q()
    for band, values in enumerate(neighbours):
        probe |= Q(**{f"band{band}__in": values})
    target = int(value, 16)
    distances = {stored: ((stored & _ALL_BITS) ^ target).bit_count()
                 for stored in Fingerprint.objects.filter(probe, kind=kind).values_list("value", flat=True)}
    best = None
    for stored, distance in distances.items():
        if distance > PHASH_MAX_DISTANCE:
            continue
        newest = _newest_record_with(kind, stored)
        if newest is not None and (best is None or (distance, -newest[1].timestamp()) < best[0]):
            best = ((distance, -newest[1].timestamp()), newest[0])
    return (best[1], best[0][0]) if best is not None else None


_ALL_BITS = (1 << 64) - 1


def _newest_record_with(kind: str, stored_value: int) -> tuple[uuid.UUID, datetime] | None:
    holders = [Record.objects.filter(fingerprint_kind=kind, phash_value=stored_value).order_by("-signed_at")
               .values_list("pk", "signed_at").first(),
               RecordFingerprint.objects.filter(kind=kind, value=stored_value).order_by("-signed_at")
               .values_list("record_id", "signed_at").first()]
    return max((holder for holder in holders if holder), key=lambda holder: holder[1], default=None)
