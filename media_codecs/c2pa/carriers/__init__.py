"""Where a C2PA manifest store travels in a file, one module per format behind `base.Carrier`.

A codec names its format's carrier (`Codec.c2pa_carrier`, None for a format that carries no store here);
`carrier_for` asks the codec that detects the file.
"""

from __future__ import annotations

import importlib

from media_codecs.c2pa.carriers.base import (
    DATA_HASH_LABEL,
    MAX_STORE_BYTES,
    Carrier,
    Found,
    Layout,
    data_hash_content,
    data_hash_matches,
)
from media_codecs.errors import UnsupportedFormat
from media_codecs.registry import detect

__all__ = [
    "CHUNK_TYPE",
    "DATA_HASH_LABEL",
    "JPEG_CARRIER",
    "MAX_STORE_BYTES",
    "PNG_CARRIER",
    "SLICE_BYTES",
    "Carrier",
    "Found",
    "JpegCarrier",
    "Layout",
    "PngCarrier",
    "carrier_for",
    "data_hash_content",
    "data_hash_matches",
    "splice",
]


# Each format's carrier is imported with its module, when first asked for: reading a JPEG's manifest never
# loads the PNG codec (offline verification imports only what the file's format needs).
_LAZY = {"JPEG_CARRIER": "jpeg", "SLICE_BYTES": "jpeg", "JpegCarrier": "jpeg", "CHUNK_TYPE": "png",
         "PNG_CARRIER": "png", "PngCarrier": "png"}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)


def carrier_for(data: bytes) -> Carrier:
    """The carrier of the file's format. Raises UnsupportedFormat for a format that carries no store."""
    try:
        carrier = detect(data).c2pa_carrier
    except UnsupportedFormat:
        carrier = None
    if carrier is None:
        raise UnsupportedFormat("this format carries no C2PA manifest here")
    return carrier


def splice(stripped: bytes, offset: int, wrapped: bytes) -> bytes:
    """Insert the wrapped store at `offset` of the stripped file."""
    return b"".join((stripped[:offset], wrapped, stripped[offset:]))
