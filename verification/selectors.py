"""Finding the record a piece of content points to: by token, watermark id or near-match fingerprint."""

import uuid

from django.db import connection
from django.db.models import Q

from provenance.models import Record
from provenance.phash_bands import BANDS, band_neighbours, hamming, phash_bands, signed_value

# A fingerprint within this many bits of a stored one of the same kind is a match. Multi-index
# hashing over four 16-bit bands: a hash within 7 bits agrees with some band to within 1 bit
# (pigeonhole), so probing each band's 17 neighbours finds every match through the indexes.
PHASH_MAX_DISTANCE = 7
_BAND_RADIUS = PHASH_MAX_DISTANCE // BANDS

# PostgreSQL (14+ for bit_count) weighs the candidates itself and returns only the winner's id, in one
# statement. An exact match is the nearest possible, so the newest one is looked for first, one probe
# of the (kind, value, signed_at) index; only without one does the banded search run (UNION ALL under
# LIMIT 1 stops at the first row). Each band is its own index-only scan of (kind, band) INCLUDE
# (phash_value) keeping the values within the distance; of the nearest values, each one's newest
# record comes from the (kind, value, signed_at) index. No heap page is read but the winner's.
# There is no candidate cap: every record that shares a band within one bit is weighed (a cap over
# unordered rows dropped real matches), so a near miss costs in proportion to how many records crowd
# its bands (flat images do); an exact match costs the same in a crowd as anywhere.
# Only constants are formatted into the SQL (the table name, band numbers); values are parameters.
_TABLE = Record._meta.db_table
_DISTANCE = "bit_count((phash_value # (%(value)s)::bigint)::bit(64))"
_BAND_SQL = (f"SELECT phash_value, {_DISTANCE} AS distance FROM {_TABLE} WHERE fingerprint_kind = %(kind)s "  # noqa: S608
             f"AND phash_band{{band}} = ANY(%(band{{band}})s::integer[]) AND {_DISTANCE} <= %(max)s")
_NEAREST_SQL = f"""(SELECT id FROM {_TABLE} WHERE fingerprint_kind = %(kind)s AND phash_value = (%(value)s)::bigint
 ORDER BY signed_at DESC LIMIT 1)
UNION ALL
(SELECT winner.id FROM (
     SELECT phash_value, rank() OVER (ORDER BY distance) AS place FROM (
         SELECT phash_value, min(distance) AS distance
         FROM ({" UNION ALL ".join(_BAND_SQL.format(band=band) for band in range(BANDS))}) AS near
         GROUP BY phash_value) AS near_values) AS nearest
 CROSS JOIN LATERAL (SELECT id, signed_at FROM {_TABLE}
                     WHERE fingerprint_kind = %(kind)s AND phash_value = nearest.phash_value
                     ORDER BY signed_at DESC LIMIT 1) AS winner
 WHERE nearest.place = 1
 ORDER BY winner.signed_at DESC LIMIT 1)
LIMIT 1"""  # noqa: S608


def _with_relations():
    return Record.objects.select_related("org", "key", "generator")


def record_for_id(record_id: uuid.UUID) -> Record | None:
    return _with_relations().filter(pk=record_id).first()


def record_for_watermark(mark_id: int) -> Record | None:
    """The newest record whose server-made watermark id is `mark_id`."""
    return _with_relations().filter(watermark_id=f"{mark_id:016x}").order_by("-signed_at").first()


def record_for_fingerprint(*, kind: str, value: str) -> Record | None:
    """The closest record whose fingerprint is of `kind` and within PHASH_MAX_DISTANCE bits of `value`
    (16 hex digits), the newest on ties; None when there is none.

    Every record sharing a band within one bit is weighed, however many there are.
    """
    neighbours = [band_neighbours(band, _BAND_RADIUS) for band in phash_bands(value)]
    nearest = _nearest_in_sql if connection.vendor == "postgresql" else _nearest_in_python
    best = nearest(kind, value, neighbours)
    return record_for_id(best) if best is not None else None


def _nearest_in_sql(kind: str, value: str, neighbours: list[list[int]]) -> uuid.UUID | None:
    params = {"kind": kind, "value": signed_value(value), "max": PHASH_MAX_DISTANCE,
              **{f"band{band}": values for band, values in enumerate(neighbours)}}
    with connection.cursor() as cursor:
        cursor.execute(_NEAREST_SQL, params)
        row = cursor.fetchone()
    return row[0] if row else None


def _nearest_in_python(kind: str, value: str, neighbours: list[list[int]]) -> uuid.UUID | None:
    """The same choice over every candidate, in Python (SQLite, for development and tests)."""
    probe = Q()
    for band, values in enumerate(neighbours):
        probe |= Q(**{f"phash_band{band}__in": values})
    candidates = Record.objects.filter(probe, fingerprint_kind=kind).values_list("pk", "phash", "signed_at")
    scored = [(hamming(value, stored), -signed_at.timestamp(), pk) for pk, stored, signed_at in candidates]
    best = min(scored, default=None)
    return best[2] if best is not None and best[0] <= PHASH_MAX_DISTANCE else None
