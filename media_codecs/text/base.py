"""What the text formats share: the family, and for the formats read as UTF-8 characters (plain text, HTML)
strict decoding, detection on a head that may end mid-character, and the zero-width mark in their text.

A format module knows its own container: where the token goes (HTML's meta element, PDF's XMP metadata
stream, nowhere in plain text) and where the mark's runs may go. PDF is text by family but binary by
container: it shares the family alone.
"""

from __future__ import annotations

import codecs
import re
from typing import ClassVar

from media_codecs.base import Codec, Media, Work, file_units
from media_codecs.errors import UnsupportedFormat
from media_codecs.text import zerowidth

# C0 controls a text file does not hold (tab, line feed, vertical tab, form feed and carriage return
# are fine); one of these in the head means binary content.
_BINARY_CONTROLS = re.compile("[\x00-\x08\x0e-\x1f]")


def head_text(head: bytes) -> str | None:
    """The head decoded as UTF-8 (a character cut at its end is fine), or None when it is not text."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return None
    return None if _BINARY_CONTROLS.search(text) else text


def decode(data: bytes, what: str) -> str:
    """`data` as text. Raises UnsupportedFormat for bytes that are not UTF-8 text (a BOM is kept as U+FEFF)."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise UnsupportedFormat(f"the {what} is not UTF-8 text (byte {error.start})") from None
    if _BINARY_CONTROLS.search(text):
        raise UnsupportedFormat(f"the {what} holds control characters: binary content, not text")
    return text


def text_work(media: Media, invisible: str) -> Work:
    """Verification reads the text's characters (the zero-width mark's runs, the hash of the text without
    them): a unit for every two million characters, and one for every 250,000 of the mark's `invisible`
    characters, which the reader takes run by run (bench/verify_budget.py: 4.4 million of them, 3 s).
    Counting them is a few C scans of the decoded text, no reading."""
    text = media.container
    characters = len(text)
    marks = sum(text.count(ch) for ch in invisible)
    return Work(media.family, characters, "characters", file_units(media.data) + characters / 2e6 + marks / 250_000)


class TextCodec(Codec):
    """A text format: PDF, HTML or plain text."""

    family = "text"


class Utf8TextCodec(TextCodec):
    """A text format whose container is its UTF-8 characters: parsed to the decoded text, marked with
    zero-width runs in it (media_codecs.text.zerowidth), read by counting them."""

    can_watermark = True
    document_name: ClassVar[str]  # what errors call the content ("text", "HTML document")

    def parse(self, data: bytes) -> str:
        """The decoded text. Raises UnsupportedFormat for bytes that are not UTF-8 text."""
        return decode(data, self.document_name)

    def decode_work(self, content: bytes | Media) -> Work:
        return text_work(self.media(content), zerowidth.ALPHABET)

    def extract_watermark(self, content: bytes | Media) -> int | None:
        return zerowidth.extract(self.media(content).container)
