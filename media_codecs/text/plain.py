"""Plain UTF-8 text: the zero-width mark in its paragraphs, and no token container.

Plain text has nowhere to carry the token (the spec's text containers are PDF metadata and an HTML
meta element), so `embed_token` leaves it as it is: a signed text is found again through its mark,
or through the token the signer keeps beside it (`token_source: "provided"`). `content_hash` covers
the text with the runs of the mark removed (addendum 4: "zero-width characters in text"), which is
the text exactly as it was submitted: a BOM and CRLF line ends included.
"""

from __future__ import annotations

from media_codecs.base import SCORE_FALLBACK, SCORE_NONE, Media
from media_codecs.disclosure import Disclosure
from media_codecs.label import Label
from media_codecs.progress import Progress
from media_codecs.text import zerowidth
from media_codecs.text.base import Utf8TextCodec, head_text


class PlainTextCodec(Utf8TextCodec):
    format = "txt"
    mime_type = "text/plain; charset=utf-8"
    carries_token = False
    can_label = True  # a leading line
    document_name = "text"

    def score(self, head: bytes) -> int:
        """SCORE_FALLBACK for any UTF-8 text without binary control characters: it could be, nothing says so."""
        return SCORE_FALLBACK if head and head_text(head) is not None else SCORE_NONE

    def watermark_possible(self, content: bytes | Media) -> bool:
        text = self.media(content).container
        return len(text) <= zerowidth.MAX_MARKED_CHARS and bool(zerowidth.sites(text))

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        text = self.media(content).container
        return zerowidth.embed(text if label is None else labelled_text(text, label), mark_id).encode("utf-8")

    def embed_label(self, content: bytes | Media, label: Label) -> bytes:
        """The label's line, a blank line, then the text."""
        return labelled_text(self.media(content).container, label).encode("utf-8")

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Plain text carries no token: the content comes back as it is."""
        return self.media(content).data

    def extract_token(self, content: bytes | Media) -> str | None:
        return None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The text without the mark's runs: what `content_hash` covers."""
        return zerowidth.strip_marks(self.media(content).container).encode("utf-8")


def labelled_text(text: str, label: Label) -> str:
    """The text after a leading line with the label and a blank line, in the text's own line ending."""
    newline = "\r\n" if "\r\n" in text else "\n"
    return f"{label.text}{newline}{newline}{text}"


CODEC = PlainTextCodec()
