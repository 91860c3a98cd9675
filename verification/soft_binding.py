"""C2PA's soft-binding resolution (the Soft Binding Resolution API, `/matches/byBinding` and
`/matches/byContent`): from a watermark id or a fingerprint to the manifests it resolves to.

Our manifest ids are record ids: a record is what our manifest describes (`service.provenance`), and
`GET /v1/records/:id` and its C2PA JSON serve it. The algorithm names are the ones our manifests
register in their `c2pa.soft-binding` assertion; a value is the 64-bit id or hash, big-endian, in
base64, as that assertion carries it.
"""

import base64
import binascii
import uuid
from dataclasses import dataclass

from core.errors import ApiError, ValidationFailed
from media_codecs import CodecError
from media_codecs.c2pa.manifest import WATERMARK_ALGORITHM
from verification import selectors
from verification.services import Charge, contents_admit

DEFAULT_MAX_RESULTS = 10
_VALUE_BYTES = 8
_BITS = 64


@dataclass(frozen=True)
class Algorithm:
    name: str
    family: str  # the content family it is computed on
    fingerprint_kind: str | None = None  # None: a watermark id

    @property
    def is_watermark(self) -> bool:
        return self.fingerprint_kind is None


ALGORITHMS = {algorithm.name: algorithm for algorithm in (
    Algorithm(WATERMARK_ALGORITHM, "image"),
    Algorithm("service.audio-watermark.1", "audio"),
    Algorithm("service.image-phash.1", "image", "image-phash"),
    Algorithm("service.video-phash.1", "video", "video-phash"),
)}


@dataclass(frozen=True)
class Match:
    record_id: uuid.UUID
    similarity: int  # 0-100: 100 for a watermark id or an identical fingerprint


class UnsupportedAssetType(ApiError):
    status_code, code, message = 415, "unsupported_media_type", "No algorithm of this service reads this asset."


def supported_algorithms() -> dict:
    """`/services/supportedAlgorithms`: our names, as the API lists them."""
    return {"watermarks": [{"alg": name} for name, a in ALGORITHMS.items() if a.is_watermark],
            "fingerprints": [{"alg": name} for name, a in ALGORITHMS.items() if not a.is_watermark]}


def matches_by_binding(*, alg: str, value: str, max_results: int = DEFAULT_MAX_RESULTS) -> list[Match]:
    """The records a soft-binding value resolves to, best first. Raises ValidationFailed for an unknown
    algorithm or a value that is not base64 of 8 bytes."""
    return _matches(_algorithm(alg), _decoded_value(value), max_results)


def matches_by_content(*, data: bytes, alg: str | None, max_results: int = DEFAULT_MAX_RESULTS,
                       charge: Charge | None = None) -> list[Match]:
    """The records an asset's watermark or fingerprint resolves to, best first, by every algorithm that
    reads its family (or `alg` alone). Raises PayloadTooLarge past the verification limits and budget
    (checked, and `charge`d, before anything is decoded), UnsupportedAssetType for content no algorithm
    reads, ValidationFailed for an unknown `alg`."""
    wanted = [_algorithm(alg)] if alg else list(ALGORITHMS.values())
    [media] = contents_admit([data], charge)
    algorithms = [a for a in wanted if media is not None and a.family == media.family]
    if not algorithms:
        raise UnsupportedAssetType()
    found: dict[uuid.UUID, int] = {}
    for algorithm in algorithms:
        for value in _read_bindings(media, algorithm):
            for match in _matches(algorithm, value, max_results):
                found[match.record_id] = max(found.get(match.record_id, 0), match.similarity)
    ranked = sorted(found.items(), key=lambda item: -item[1])
    return [Match(record_id, similarity) for record_id, similarity in ranked[:max_results]]


def _algorithm(name: str) -> Algorithm:
    algorithm = ALGORITHMS.get(name)
    if algorithm is None:
        raise ValidationFailed(details={"alg": [f"Unknown algorithm; this service reads {', '.join(ALGORITHMS)}."]})
    return algorithm


def _decoded_value(value: str) -> int:
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != _VALUE_BYTES:
        raise ValidationFailed(details={"value": ["Send the 64-bit value, big-endian, in base64 (12 characters)."]})
    return int.from_bytes(raw, "big")


def _read_bindings(media, algorithm: Algorithm) -> list[int]:
    """The algorithm's values read from the asset (a video turned by its display matrix gives two), none
    when the asset carries none."""
    codec = media.codec
    try:
        if algorithm.is_watermark:
            mark = codec.extract_watermark(media) if codec.can_watermark else None
            return [] if mark is None else [mark]
        fingerprints = codec.query_fingerprints(media) if codec.fingerprint_kind == algorithm.fingerprint_kind else []
    except CodecError:
        return []
    return [int(fingerprint, 16) for fingerprint in fingerprints]


def _matches(algorithm: Algorithm, value: int, max_results: int) -> list[Match]:
    if algorithm.is_watermark:
        return [Match(record_id, 100) for record_id in
                selectors.record_ids_for_watermark(mark_id=value, family=algorithm.family, limit=max_results)]
    nearest = selectors.nearest_fingerprint(kind=algorithm.fingerprint_kind, value=f"{value:016x}")
    if nearest is None:
        return []
    record_id, distance = nearest
    return [Match(record_id, round(100 * (_BITS - distance) / _BITS))]
