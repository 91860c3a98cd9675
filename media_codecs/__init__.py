"""Format codecs: detect a file's format, carry a token, watermark and hash its content.

Pure: bytes in, bytes out; no Django, no database, no network. Callers use `open_media` (or
`detect`) and `get_codec`, never branch on the format themselves.
"""

from media_codecs.base import Codec, Media
from media_codecs.errors import CodecError, CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.families import FAMILIES as FAMILIES
from media_codecs.registry import detect, get_codec, open_media, register, registered_codecs

__all__ = [
    "Codec",
    "CodecError",
    "CorruptMedia",
    "Media",
    "MediaTooLarge",
    "UnsupportedFormat",
    "detect",
    "get_codec",
    "open_media",
    "register",
    "registered_codecs",
]
