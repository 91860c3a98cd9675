"""The table of codecs, keyed by format, and content sniffing over it.

Like Pillow's `accept(prefix)` and mutagen's `score`, detection asks each codec in turn
whether the first bytes look like its format; the first to say yes wins. Built-in codecs
are imported on first use so that importing `media_codecs` stays cheap.
"""

from __future__ import annotations

import importlib

from media_codecs.base import Codec, Media
from media_codecs.errors import UnsupportedFormat

SNIFF_BYTES = 64

# Module paths of the built-in codecs, in sniffing order; each module exposes `CODEC`.
BUILTIN_CODEC_MODULES: tuple[str, ...] = (
    "media_codecs.image.jpeg",
    "media_codecs.image.png",
    "media_codecs.image.webp",
)

_codecs: dict[str, Codec] = {}
_builtins_loaded = False


def register(codec: Codec) -> None:
    """Add `codec` to the table (or replace the one with the same format).

    Raises ValueError when the codec declares no format.
    """
    if not getattr(codec, "format", ""):
        raise ValueError(f"{codec!r} declares no format")
    _codecs[codec.format] = codec


def _load_builtins() -> None:
    global _builtins_loaded
    if _builtins_loaded:
        return
    for module_path in BUILTIN_CODEC_MODULES:
        codec = importlib.import_module(module_path).CODEC
        _codecs.setdefault(codec.format, codec)
    _builtins_loaded = True


def registered_codecs() -> tuple[Codec, ...]:
    """Every codec, in sniffing order."""
    _load_builtins()
    return tuple(_codecs.values())


def detect(data: bytes) -> Codec:
    """Return the codec whose `sniff` accepts the first bytes of `data`.

    Raises UnsupportedFormat when no codec recognises them.
    """
    head = bytes(data[:SNIFF_BYTES])
    for codec in registered_codecs():
        if codec.sniff(head):
            return codec
    raise UnsupportedFormat("content is not in a supported format")


def get_codec(format: str) -> Codec:
    """Return the codec registered for `format` ("jpeg", "png", ...).

    Raises UnsupportedFormat for an unknown format.
    """
    _load_builtins()
    try:
        return _codecs[format]
    except KeyError:
        raise UnsupportedFormat(f"no codec for format {format!r}") from None


def open_media(data: bytes) -> Media:
    """Detect the format of `data` and parse it once, checking every limit before anything decodes it.

    Raises UnsupportedFormat for unknown content, MediaTooLarge over the limits, and
    CorruptMedia when the container cannot be read.
    """
    return detect(data).open(data)
