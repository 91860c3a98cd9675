"""The PDF codec: detection, and the token as an incremental update (see media_codecs.text.pdf)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from media_codecs import xmp
from media_codecs.base import SCORE_MAGIC, SCORE_NONE, SCORE_WEAK, Media, Work, file_units
from media_codecs.disclosure import Disclosure
from media_codecs.text.base import TextCodec
from media_codecs.text.pdf.c2pa import without_our_manifest
from media_codecs.text.pdf.document import HEADER, HEADER_WINDOW, Document, read_document
from media_codecs.text.pdf.update import compose_update, without_our_update

if TYPE_CHECKING:
    from media_codecs.c2pa.carriers import Carrier

_VERSIONED_HEADER = re.compile(rb"%PDF-\d\.\d")


class PdfCodec(TextCodec):
    format = "pdf"
    mime_type = "application/pdf"
    token_source = "xmp"
    discloses_in_metadata = True  # in the document's XMP, beside the token
    can_watermark = False  # the zero-width text mark is for plain text and HTML only
    fingerprint_kind = None

    def score(self, head: bytes) -> int:
        """SCORE_MAGIC for `%PDF-` at offset 0; SCORE_WEAK for `%PDF-n.n` later in the first 1,024 bytes."""
        if head.startswith(HEADER):
            return SCORE_MAGIC
        if _VERSIONED_HEADER.search(head, 0, HEADER_WINDOW + 8):
            return SCORE_WEAK
        return SCORE_NONE

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels as an embedded file in an incremental update; the C2PA package is imported when
        a manifest is first met."""
        from media_codecs.c2pa.carriers.pdf import PDF_CARRIER

        return PDF_CARRIER

    def parse(self, data: bytes) -> Document:
        """The cross-reference chain, the catalog and its XMP packet.

        Raises UnsupportedFormat (not a PDF, encrypted), CorruptMedia, MediaTooLarge.
        """
        return read_document(data)

    def decode_work(self, content: bytes | Media) -> Work:
        """The objects the cross-reference chain numbers: the parse (done when opened) reads the catalog and
        its metadata stream among them; a unit for every 100,000."""
        media = self.media(content)
        objects = media.container.size
        return Work(self.family, objects, "objects", file_units(media.data) + objects / 1e5)

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Append our incremental update carrying `token` (replacing our update if the file ends with it).

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        original = self._original(self.media(content))
        return original.data + compose_update(original, token, disclosure)

    def extract_token(self, content: bytes | Media) -> str | None:
        """Our token from the current catalog's XMP packet. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        document = self.media(content).container
        return None if document.metadata is None else xmp.read_token(document.metadata)

    def strip_token(self, content: bytes | Media) -> bytes:
        """The file without our C2PA manifest update when it is the last one, then without our token update
        when that is the last one; the file unchanged otherwise.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge.
        """
        media = self.media(content)
        # A signed file is the original, our token update, then (once a manifest is embedded) our C2PA
        # update: dropping both gives the same bytes before and after the manifest.
        return media.cached("hashed", lambda: self._original_of(without_our_manifest(media.container))).data

    def _original(self, media: Media) -> Document:
        return media.cached("original", lambda: self._original_of(media.container))

    @staticmethod
    def _original_of(document: Document) -> Document:
        token = None if document.metadata is None else xmp.read_token(document.metadata)
        return without_our_update(document, token)


CODEC = PdfCodec()
