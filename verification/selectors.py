"""Finding the record a piece of content points to: by token, watermark id or perceptual hash."""

import uuid

from django.db.models import Q

from provenance.models import Record
from provenance.phash_bands import BANDS, band_neighbours, hamming, phash_bands

# A pHash within this many bits of a stored one is a match. Multi-index hashing over four 16-bit
# bands: a hash within 7 bits agrees with some band to within 1 bit (pigeonhole), so probing each
# band's 17 neighbours finds every match through the indexes, never by scanning records.
PHASH_MAX_DISTANCE = 7
_BAND_RADIUS = PHASH_MAX_DISTANCE // BANDS
_CANDIDATE_CAP = 5000


def _with_relations():
    return Record.objects.select_related("org", "key", "generator")


def record_for_id(record_id: uuid.UUID) -> Record | None:
    return _with_relations().filter(pk=record_id).first()


def record_for_watermark(mark_id: int) -> Record | None:
    """The newest record whose server-made watermark id is `mark_id`."""
    return _with_relations().filter(watermark_id=f"{mark_id:016x}").order_by("-signed_at").first()


def record_for_phash(phash: str) -> Record | None:
    """The closest record by perceptual hash within PHASH_MAX_DISTANCE bits (newest on ties), or None."""
    bands = phash_bands(phash)
    probe = Q()
    for index, band in enumerate(bands):
        probe |= Q(**{f"phash_band{index}__in": band_neighbours(band, _BAND_RADIUS)})
    candidates = Record.objects.filter(probe).values_list("pk", "phash", "signed_at")[:_CANDIDATE_CAP]
    scored = [(hamming(phash, stored), -signed_at.timestamp(), pk) for pk, stored, signed_at in candidates]
    best = min(scored, default=None)
    if best is None or best[0] > PHASH_MAX_DISTANCE:
        return None
    return record_for_id(best[2])
