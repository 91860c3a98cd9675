"""Errors raised by every codec; callers catch `CodecError` and map it to one API error."""


class CodecError(Exception):
    """Base class: the bytes could not be handled as the format they claim to be."""


class UnsupportedFormat(CodecError):
    """The bytes are not a format we handle, or use a feature of it we do not support."""


class CorruptMedia(CodecError):
    """The bytes claim a supported format but are truncated or malformed."""


class MediaTooLarge(CodecError):
    """The header declares more pixels (or samples) than we agree to decode."""
