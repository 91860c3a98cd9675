"""Codec errors as API errors, for every route that reads or writes a file the caller sent."""

from collections.abc import Iterator
from contextlib import contextmanager

from core.errors import FormatNotSupported, PayloadTooLarge, ValidationFailed
from media_codecs import Codec, CodecError, CorruptMedia, MediaTooLarge


@contextmanager
def codec_errors(codec: Codec) -> Iterator[None]:
    """Codec errors as API errors: over a limit 413, malformed 400 validation_error, else format_not_supported."""
    try:
        yield
    except MediaTooLarge as error:
        raise PayloadTooLarge(f"The content is over the signing limits: {error}") from None
    except CorruptMedia as error:
        raise ValidationFailed(details={"content": [f"The {codec.format} file is malformed: {error}"]}) from None
    except CodecError as error:
        raise FormatNotSupported(f"This {codec.format} file cannot be signed: {error}") from None
