"""Client-managed signing: the content hash the service computes, signed locally over the canonical payload."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from media_codecs import CodecError, open_media
from record_format.hashing import content_hash_of_file
from record_format.payload import signed_payload_bytes
from svc_client.keys import SigningKey

NO_WATERMARK = "none"  # the service's own watermark_id for content signed without a watermark


def content_hash(data: bytes) -> str:
    """`sha3-256:<hex>` of a file exactly as the service computes it (its token container left out).

    Raises media_codecs.MediaTooLarge for a file over the service's limits.
    """
    return content_hash_of_file(data)


def image_phash(data: bytes) -> str | None:
    """The 64-bit DCT pHash (16 hex) the service stores for an image, by its own code; None for other files.

    A record's `phash` lets verification find content that lost its token (spec: POST /v1/records).
    The service reads a client's `phash` as an image pHash, so only images get one. WebP decoding needs
    OpenCV (the client's `phash` extra). Raises CodecError for a malformed image.
    """
    try:
        media = open_media(data)
    except CodecError:
        return None
    if media.codec.fingerprint_kind != "image-phash":
        return None
    return media.codec.fingerprint(media)


@dataclass(frozen=True)
class RecordDraft:
    """A record signed locally, ready for POST /v1/records (or one item of a batch)."""

    content_hash: str
    generator_id: str
    model: str
    watermark_id: str
    signature: bytes
    phash: str | None = None

    @property
    def signed_payload(self) -> dict[str, str]:
        return {"content_hash": self.content_hash, "generator_id": self.generator_id, "model": self.model,
                "watermark_id": self.watermark_id}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {**self.signed_payload, "signature": base64.b64encode(self.signature).decode(),
                                "signed_payload": self.signed_payload}
        if self.phash is not None:
            body["phash"] = self.phash
        return body


def record_sign(*, key: SigningKey, generator_id: str, model: str, data: bytes | None = None,
                content_hash_value: str | None = None, watermark_id: str = NO_WATERMARK,
                phash: str | None = None) -> RecordDraft:
    """Hash `data` (or take its precomputed `content_hash_value`) and sign the payload with `key`.

    Raises TypeError unless exactly one of `data` and `content_hash_value` is given.
    """
    if (data is None) == (content_hash_value is None):
        raise TypeError("give the content or its content hash, not both")
    digest = content_hash_value if content_hash_value is not None else content_hash(data or b"")
    message = signed_payload_bytes(content_hash=digest, generator_id=generator_id, model=model,
                                   watermark_id=watermark_id)
    return RecordDraft(content_hash=digest, generator_id=generator_id, model=model, watermark_id=watermark_id,
                       signature=key.sign(message), phash=phash)
