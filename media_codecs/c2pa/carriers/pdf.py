"""PDF: the store travels as an embedded file named by the catalog's /AF (`AFRelationship /C2PA_Manifest`),
appended in one incremental update; the layout and how it is recognised are in media_codecs.text.pdf.c2pa.

Binding: `c2pa.hash.data` with one exclusion, exactly the stream's data (from the store's first byte, its
length). c2pa-rs 0.91.3 checks that the exclusion is where it finds the store ("data hash exclusion does
not match the manifest location in the asset" otherwise), and reads a store added in an incremental update
as well as one in a rewritten file (what its own Builder writes). Everything else, the update's object
headers, catalog and cross-reference section included, is hashed, so nothing may be appended afterwards.
"""

from __future__ import annotations

from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES, Carrier, Found, Layout
from media_codecs.text.pdf import c2pa as pdf_c2pa
from media_codecs.text.pdf.document import read_document


class PdfCarrier(Carrier):
    mime_type = "application/pdf"

    def find(self, data: bytes) -> Found | None:
        """The store the current catalog's /AF names, or None. Raises CodecError for a bad PDF or store."""
        location = pdf_c2pa.find_store(read_document(data), MAX_STORE_BYTES)
        if location is None:
            return None
        return Found(location.store, location.start, len(location.store))

    def strip(self, data: bytes) -> bytes:
        """The bytes before our update when the file ends with it; for a store someone else wrote, the file
        with an update that drops it from /AF; the same bytes when there is none."""
        document = read_document(data)
        before = pdf_c2pa.without_our_manifest(document)
        if before is not document:
            return before.data
        location = pdf_c2pa.find_store(document, MAX_STORE_BYTES)
        if location is None:
            return data
        return data + pdf_c2pa.removal_update(document, location)

    def layout(self, stripped: bytes, store_size: int) -> Layout:
        """The stripped file untouched, then our update with a gap of `store_size` bytes for the store."""
        self.check_store_size(store_size)
        # Parsing reads the cross-reference chain and the catalog only (~20 ms for 3,000 pages), so each
        # plan parses again rather than keeping a file alive between calls.
        planned = pdf_c2pa.plan_update(read_document(stripped), store_size)
        return Layout((memoryview(stripped), planned.head), (planned.tail,), store_size)

    def wrapped(self, store: bytes) -> bytes:
        """The store as written in the stream: as is (readers take the data unfiltered)."""
        self.check_store_size(len(store))
        return store

    def wrapped_size(self, store_size: int) -> int:
        return store_size


PDF_CARRIER = PdfCarrier()
