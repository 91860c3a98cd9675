"""Format codecs: detect a file's format, carry a token, watermark and hash its content.

Pure: bytes in, bytes out; no Django, no database, no network. Callers use `detect` (or
`codec_for_data`) and `get_codec`, never branch on the format themselves.
"""

from media_codecs.base import Codec
from media_codecs.errors import CodecError, CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.registry import codec_for_data, detect, get_codec, register, registered_codecs

__all__ = [
    "Codec",
    "CodecError",
    "CorruptMedia",
    "MediaTooLarge",
    "UnsupportedFormat",
    "codec_for_data",
    "detect",
    "get_codec",
    "register",
    "registered_codecs",
]
