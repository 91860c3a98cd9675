"""The interface every format implements: bytes in, bytes out, no I/O, deterministic."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar


class Codec(ABC):
    """One container format. Instances are stateless and shared through the registry.

    Every method takes the whole file as bytes and raises only `CodecError` subclasses
    (`UnsupportedFormat`, `CorruptMedia`, `MediaTooLarge`) for bad input.
    """

    format: ClassVar[str]
    family: ClassVar[str]
    mime_type: ClassVar[str]
    # Where the token travels, as verification reports it (addendum 5): "xmp" or another "metadata" box.
    token_source: ClassVar[str] = "metadata"

    @abstractmethod
    def sniff(self, head: bytes) -> bool:
        """Whether the first bytes of a file (up to 64) look like this format. Never raises."""

    @abstractmethod
    def embed_token(self, data: bytes, token: str) -> bytes:
        """Return `data` carrying `token`, replacing any token of ours; other metadata is kept."""

    @abstractmethod
    def extract_token(self, data: bytes) -> str | None:
        """Return the token carried by `data`, or None when it carries none."""

    @abstractmethod
    def strip_token(self, data: bytes) -> bytes:
        """Return the bytes `content_hash` covers: `data` with our token container removed."""

    @abstractmethod
    def embed_watermark(self, data: bytes, mark_id: int) -> bytes:
        """Return `data` re-encoded in the same format with `mark_id` in its content."""

    @abstractmethod
    def extract_watermark(self, data: bytes) -> int | None:
        """Return the mark id found in the content, or None (never a wrong id)."""

    @abstractmethod
    def perceptual_hash(self, data: bytes) -> str | None:
        """Return a 16-hex-digit perceptual hash, or None where the format has none."""

    @abstractmethod
    def check_limits(self, data: bytes) -> None:
        """Raise `MediaTooLarge` when the header declares more than we agree to decode."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.format}>"
