"""The interface every format implements: bytes in, bytes out, no I/O, deterministic.

A file is parsed once per request into a `Media` (as mutagen's `FileType.load` and Pillow's
`ImageFile` do): the codec's container structure, checked against the structural and size
limits before anything decodes it, plus a cache for what is expensive to compute twice (the
decoded pixels). Every codec method takes that `Media`; for one-off calls (tests, scripts)
they also accept raw bytes and parse them on the spot.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from media_codecs.disclosure import Disclosure
from media_codecs.errors import CodecError, UnsupportedFormat
from media_codecs.label import Label

if TYPE_CHECKING:
    from media_codecs.c2pa.carriers import Carrier
    from media_codecs.progress import Progress

T = TypeVar("T")


class Media:
    """One file, parsed once: the codec that reads it, its bytes and its container structure."""

    __slots__ = ("_cache", "codec", "container", "data")

    def __init__(self, codec: Codec, data: bytes, container: Any):
        self.codec = codec
        self.data = data
        self.container = container
        self._cache: dict[str, Any] = {}

    @property
    def family(self) -> str:
        return self.codec.family

    def cached(self, name: str, compute: Callable[[], T]) -> T:
        """`compute()` once per Media; a CodecError it raises is remembered and raised again."""
        if name not in self._cache:
            try:
                self._cache[name] = compute()
            except CodecError as error:
                self._cache[name] = error
        value = self._cache[name]
        if isinstance(value, CodecError):
            raise value
        return value

    def forget(self, name: str) -> None:
        """Drop a cached value (large decoded pixels) once no step needs it."""
        self._cache.pop(name, None)

    def __repr__(self) -> str:
        return f"<Media {self.codec.format} {len(self.data)} bytes>"


# Verification units: 1 unit is about 100 ms of one worker's CPU on the reference machine (a 2-core
# server), a little less than verifying a 1-megapixel JPEG. Every file costs a floor (parse, lookups,
# signature check) and its hashing; each family adds what reading its mark or fingerprint decodes.
# The coefficients are measured (bench/verify_budget.py, docs/performance.md) and kept on the high side.
UNITS_PER_FILE = 0.1
BYTES_PER_UNIT = 100 * 1024 * 1024  # hashing (SHA-256) and the copies around it


@dataclass(frozen=True)
class Work:
    """What reading a file for verification decodes, as its header declares it, and its cost in units."""

    family: str
    quantity: int  # in `measure`: what the family's decoding grows with
    measure: str  # "pixels", "samples" (frames x channels decoded), "frame pixels", "characters", "objects"
    units: float


def file_units(data: bytes) -> float:
    """The part of a file's cost every family pays: the floor and the bytes hashed."""
    return UNITS_PER_FILE + len(data) / BYTES_PER_UNIT


# How sure a codec is that a head is its format (mutagen's `score`): the registry takes the best.
SCORE_NONE = 0
SCORE_FALLBACK = 1  # could be, with nothing to say so (plain text: any valid UTF-8)
SCORE_WEAK = 20  # a marker found past the start, or a sign that is not a signature (HTML tags)
SCORE_MAGIC = 100  # the format's signature where the format puts it; the highest (detection stops at it)


class Codec(ABC):
    """One container format. Instances are stateless and shared through the registry.

    Every family has a token container (`embed_token`, `extract_token`, `strip_token`). The watermark,
    the fingerprint and a place for a C2PA manifest are capabilities a codec may lack: callers check
    `can_watermark`, `fingerprint_kind` and `c2pa_carrier`, never the format's name. Every method raises only
    `CodecError` subclasses (`UnsupportedFormat`, `CorruptMedia`, `MediaTooLarge`) for bad input.
    """

    format: ClassVar[str]
    family: ClassVar[str]
    mime_type: ClassVar[str]
    # Where the token travels, as verification reports it (addendum 5): "xmp" or another "metadata" box.
    token_source: ClassVar[str] = "metadata"
    can_watermark: ClassVar[bool] = False
    discloses_in_metadata: ClassVar[bool] = False  # embed_token writes a Disclosure (media_codecs/disclosure.py)
    can_label: ClassVar[bool] = False  # a visible label (media_codecs/label.py) can be shown on the content
    # Whether the content hash covers every byte the watermark reader decodes: then two files with a record's
    # hash read alike, and verification keeps what the record's own file gave (Record.mark_in_file).
    hash_covers_mark: ClassVar[bool] = False
    # Whether the format has a place for the token. Plain text has none: its token travels beside it.
    carries_token: ClassVar[bool] = True
    # What `fingerprint` returns ("image-phash"), or None for a format without a near-match fingerprint.
    fingerprint_kind: ClassVar[str | None] = None

    @abstractmethod
    def score(self, head: bytes) -> int:
        """How sure this codec is that a file starting with `head` (up to registry.HEAD_BYTES) is its format.

        SCORE_NONE when it is not; SCORE_MAGIC for the format's signature. Never raises.
        """

    @abstractmethod
    def parse(self, data: bytes) -> Any:
        """Return the container structure of `data`.

        Raises UnsupportedFormat, CorruptMedia, and MediaTooLarge when the structure or the
        declared size passes the documented limits: all before any decoding.
        """

    def open(self, data: bytes) -> Media:
        """Parse `data` once into a Media every other method accepts."""
        return Media(self, data, self.parse(data))

    def media(self, content: bytes | Media) -> Media:
        """`content` as a Media of this codec: parsed now when given bytes."""
        if isinstance(content, Media):
            return content
        return self.open(bytes(content))

    def pixel_count(self, content: bytes | Media) -> int:
        """Pixels that decoding the content would produce (0 where nothing is decoded)."""
        return 0

    def decode_work(self, content: bytes | Media) -> Work:
        """What verifying the content decodes, from the parsed container alone (never by decoding), and its
        cost in verification units. A header that understates its payload is refused when parsed
        (CorruptMedia), so the quantity is the payload's. Formats that decode nothing cost their bytes."""
        media = self.media(content)
        return Work(self.family, len(media.data), "bytes", file_units(media.data))

    @abstractmethod
    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Return the content carrying `token`, replacing any token of ours; other metadata is kept.

        Formats whose `discloses_in_metadata` write `disclosure` beside the token, in the same container (it
        comes and goes with the token); the others carry the token alone."""

    @abstractmethod
    def extract_token(self, content: bytes | Media) -> str | None:
        """Return the token carried by the content, or None when it carries none."""

    @abstractmethod
    def strip_token(self, content: bytes | Media) -> bytes:
        """Return the bytes `content_hash` covers: the content with our token container removed."""

    @property
    def c2pa_carrier(self) -> Carrier | None:
        """What finds, strips and inserts a C2PA manifest store in this format's files, or None for a format
        whose files carry none here."""
        return None

    def watermark_possible(self, content: bytes | Media) -> bool:
        """Whether this content can carry the watermark: its format can, and it is long or large enough.

        Read from the parsed container, never by decoding. Content that cannot is signed with its
        token alone (audio shorter than the watermark's minimum, for one).
        """
        return self.can_watermark

    def watermark_fits_request(self, content: bytes | Media) -> bool:
        """Whether marking this content is short enough work for a synchronous request (a long video is
        not: it is marked through a job). Read from the parsed container, never by decoding."""
        return True

    def hashed_parts(self, content: bytes | Media) -> list[bytes | memoryview]:
        """What `content_hash` covers, as pieces hashed in order: `strip_token`'s bytes, or views into the
        file where a format can spare building that copy (a video's 50 MB)."""
        return [self.strip_token(content)]

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        """Return the content re-encoded in the same format with `mark_id` in it (when `can_watermark`).

        `progress` (media_codecs/progress.py) hears how far the work is, where it takes long enough to say;
        the bytes returned are the same with it or without. `label` (formats whose `can_label`) is shown on
        the content first, in the same pass, so the mark covers it too."""
        raise UnsupportedFormat(f"{self.format} content carries no watermark")

    def embed_label(self, content: bytes | Media, label: Label) -> bytes:
        """Return the content with the visible `label` (media_codecs/label.py) and no mark (when `can_label`)."""
        raise UnsupportedFormat(f"{self.format} content carries no visible label here")

    def extract_watermark(self, content: bytes | Media) -> int | None:
        """Return the mark id found in the content, or None (never a wrong id)."""
        return None

    def fingerprint(self, content: bytes | Media) -> str | None:
        """Return the content's near-match fingerprint (16 hex digits) of `fingerprint_kind`, or None."""
        return None

    def fingerprints(self, content: bytes | Media, progress: Progress | None = None) -> list[str]:
        """Every fingerprint signing stores for the content, `fingerprint()` first (a video adds its
        later frames so a trimmed clip is still found); verification looks up `query_fingerprints()`.
        `progress` as for `embed_watermark`."""
        first = self.fingerprint(content)
        return [first] if first is not None else []

    def query_fingerprints(self, content: bytes | Media) -> list[str]:
        """The values verification looks up, `fingerprint()` first (a video turned by its display matrix
        adds its frame as stored, so a rotation written only in the headers still finds its original)."""
        first = self.fingerprint(content)
        return [first] if first is not None else []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.format}>"
