"""The table of codecs, keyed by format, and scored detection over it.

As mutagen's `File()` does, every codec scores the head of the data and the best score wins
(registration order breaks ties): a signature at offset 0 beats a marker found further in,
which beats a codec that merely could read the bytes (plain text, the lowest). A declared
family restricts the candidates. Built-in codecs are imported on first use so that importing
`media_codecs` stays cheap, and detection imports them in order only until one finds its signature at
offset 0 (SCORE_MAGIC, the highest score: no codec after it could win), so hashing a JPEG imports the
JPEG codec alone (`svc verify --offline`'s start-up; docs/performance.md).
"""

from __future__ import annotations

import importlib
import threading

from media_codecs.base import SCORE_MAGIC, SCORE_NONE, Codec, Media
from media_codecs.errors import UnsupportedFormat

HEAD_BYTES = 4096  # room for a PDF's %PDF within its first 1024 bytes, an HTML head, a text sample

# Module paths of the built-in codecs, in registration order; each module exposes `CODEC`.
BUILTIN_CODEC_MODULES: tuple[str, ...] = (
    "media_codecs.image.jpeg",
    "media_codecs.image.png",
    "media_codecs.image.webp",
    "media_codecs.audio.wav",
    "media_codecs.audio.flac",
    "media_codecs.audio.mp3",
    "media_codecs.video.mp4",
    "media_codecs.video.mov",
    "media_codecs.video.mkv",
    "media_codecs.video.webm",
    "media_codecs.text.html",
    "media_codecs.text.pdf",
    "media_codecs.text.plain",  # the fallback: any UTF-8 text nothing else claims
)

_codecs: dict[str, Codec] = {}
_builtins_loaded = 0  # how many of BUILTIN_CODEC_MODULES are in the table, a prefix
_loading = threading.Lock()


def register(codec: Codec) -> None:
    """Add `codec` to the table (or replace the one with the same format).

    Raises ValueError when the codec declares no format.
    """
    if not getattr(codec, "format", ""):
        raise ValueError(f"{codec!r} declares no format")
    _codecs[codec.format] = codec


def _load_builtins(count: int = len(BUILTIN_CODEC_MODULES)) -> None:
    """Put the first `count` built-in codecs in the table (after any registered before them)."""
    global _builtins_loaded
    if _builtins_loaded >= count:
        return
    with _loading:
        while _builtins_loaded < count:
            codec = importlib.import_module(BUILTIN_CODEC_MODULES[_builtins_loaded]).CODEC
            _codecs.setdefault(codec.format, codec)  # a new format goes to the end of the table
            _builtins_loaded += 1


def registered_codecs() -> tuple[Codec, ...]:
    """Every codec, in registration order."""
    _load_builtins()
    return tuple(_codecs.values())


def detect(data: bytes, family: str | None = None) -> Codec:
    """Return the codec that scores the head of `data` best, among `family`'s codecs if given.

    Raises UnsupportedFormat when no codec (of the family) recognises the data.
    """
    head = _head(data)
    best, best_score, scored = None, SCORE_NONE, 0
    while True:
        # The table in registration order; loading a built-in only ever appends, so the codecs not yet
        # scored are its tail. A tie goes to the earlier codec, as with the whole table at once.
        codecs = tuple(_codecs.values())
        for codec in codecs[scored:]:
            if family is not None and codec.family != family:
                continue
            score = codec.score(head)
            if score > best_score:
                best, best_score = codec, score
        scored = len(codecs)
        if best_score >= SCORE_MAGIC or _builtins_loaded == len(BUILTIN_CODEC_MODULES):
            break
        _load_builtins(_builtins_loaded + 1)
    if best is None:
        where = f" {family}" if family else ""
        raise UnsupportedFormat(f"the content is not in a supported{where} format")
    return best


def _head(data: bytes) -> bytes:
    """What codecs score: the first HEAD_BYTES bytes; for a file that starts with an ID3v2 tag, the tag's
    10-byte header and then the bytes after the tag. A tag is often longer than the head (a cover picture;
    the C2PA manifest store c2pa-rs puts in front of a FLAC), and what follows it tells MP3 from FLAC."""
    head = bytes(data[:HEAD_BYTES])
    if not head.startswith(b"ID3"):
        return head
    from media_codecs.audio import id3  # small; loaded only for tagged files

    length = id3.tag_length(head[: id3.HEADER_BYTES])
    if length is None:
        return head
    return head[: id3.HEADER_BYTES] + bytes(data[length : length + HEAD_BYTES - id3.HEADER_BYTES])


def get_codec(format: str) -> Codec:
    """Return the codec registered for `format` ("jpeg", "png", ...).

    Raises UnsupportedFormat for an unknown format.
    """
    _load_builtins()
    try:
        return _codecs[format]
    except KeyError:
        raise UnsupportedFormat(f"no codec for format {format!r}") from None


def open_media(data: bytes, family: str | None = None) -> Media:
    """Detect the format of `data` (among `family`'s) and parse it once, checking every limit before
    anything decodes it.

    Raises UnsupportedFormat for unknown content, MediaTooLarge over the limits, and
    CorruptMedia when the container cannot be read.
    """
    return detect(data, family).open(data)
