"""Client-managed signing: the content hash the service computes, signed locally over the canonical payload."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from media_codecs import CodecError, Media, MediaTooLarge, open_media
from record_format.hashing import content_hash_of_file, content_hash_of_media
from record_format.payload import signed_payload_bytes
from svc_client.errors import ClientError
from svc_client.keys import SigningKey

NO_WATERMARK = "none"  # the service's own watermark_id for content signed without a watermark
# The fingerprints verification looks up: a picture's pHash, a video's first-frame pHash.
FINGERPRINT_KINDS = ("image-phash", "video-phash")


class EmbeddingError(ClientError):
    """The token could not be put into the file without changing what its content hash covers."""


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


def content_phash(data: bytes | Media) -> str | None:
    """The fingerprint the service itself stores for an image or a video (16 hex), None for other files.

    An image's is its 64-bit DCT pHash, a video's the pHash of its first frame: each format's own
    `fingerprint`, the value verification computes for an upload and looks up when a file lost its token.
    A flat picture has none. Raises CodecError for a malformed file, ImportError when decoding needs a
    library the client's `phash` extra installs (OpenCV for WebP, PyAV for video).
    """
    if isinstance(data, Media):
        media = data
    else:
        try:
            media = open_media(data)
        except CodecError:
            return None
    if media.codec.fingerprint_kind not in FINGERPRINT_KINDS:
        return None
    return media.codec.fingerprint(media)


def content_family(data: bytes | Media) -> str | None:
    """The family the service's codecs detect (`image`, `audio`, `text`, `video`); None for content no codec
    reads (signed as opaque bytes). Sent as the record's `format`: the service checks it against the
    generator's formats and, for a video, reads the pHash as a video's."""
    if isinstance(data, Media):
        return data.codec.family
    try:
        return open_media(data).codec.family
    except CodecError:
        return None


def token_carrier(data: bytes) -> Media | None:
    """The file parsed, when its format has a place for a token (`embed_token` can put it there); None for
    a format without one (plain text) or content no codec reads (it is signed as opaque bytes).

    Raises MediaTooLarge for a file over the service's limits.
    """
    try:
        media = open_media(data)
    except MediaTooLarge:
        raise
    except CodecError:
        return None
    return media if media.codec.carries_token else None


def embed_token(data: bytes, token: str, signed_hash: str) -> bytes:
    """`data` carrying `token` in its own container, as the service's signing writes it.

    The content hash leaves the token's container out, so the signed file hashes to `signed_hash`, the
    hash the record signed; this is checked on the output. Raises EmbeddingError when it does not (the
    file changed since it was hashed), or when the format cannot carry a token.
    """
    media = token_carrier(data)
    if media is None:
        raise EmbeddingError("this file's format has no place for a token")
    try:
        signed = media.codec.open(media.codec.embed_token(media, token))
        output_hash = content_hash_of_media(signed)
    except CodecError as error:
        raise EmbeddingError(f"the token cannot be embedded: {error}") from None
    if output_hash != signed_hash:
        raise EmbeddingError(f"the signed file hashes to {output_hash}, the record signed {signed_hash} "
                             "(was the file changed while it was being signed?)")
    return signed.data


@dataclass(frozen=True)
class RecordDraft:
    """A record signed locally, ready for POST /v1/records (or one item of a batch)."""

    content_hash: str
    generator_id: str
    model: str
    watermark_id: str
    signature: bytes
    phash: str | None = None
    format: str | None = None  # the content's family; outside the signed payload, like `phash`

    @property
    def signed_payload(self) -> dict[str, str]:
        return {"content_hash": self.content_hash, "generator_id": self.generator_id, "model": self.model,
                "watermark_id": self.watermark_id}

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {**self.signed_payload, "signature": base64.b64encode(self.signature).decode(),
                                "signed_payload": self.signed_payload}
        if self.phash is not None:
            body["phash"] = self.phash
        if self.format is not None:
            body["format"] = self.format
        return body


def record_sign(*, key: SigningKey, generator_id: str, model: str, data: bytes | None = None,
                content_hash_value: str | None = None, watermark_id: str = NO_WATERMARK,
                phash: str | None = None, format: str | None = None) -> RecordDraft:
    """Hash `data` (or take its precomputed `content_hash_value`) and sign the payload with `key`.

    Raises TypeError unless exactly one of `data` and `content_hash_value` is given.
    """
    if (data is None) == (content_hash_value is None):
        raise TypeError("give the content or its content hash, not both")
    digest = content_hash_value if content_hash_value is not None else content_hash(data or b"")
    message = signed_payload_bytes(content_hash=digest, generator_id=generator_id, model=model,
                                   watermark_id=watermark_id)
    return RecordDraft(content_hash=digest, generator_id=generator_id, model=model, watermark_id=watermark_id,
                       signature=key.sign(message), phash=phash, format=format)
