"""PNG: the store travels in one `caBX` chunk before the first IDAT (C2PA 2.2 Appendix A.3)."""

from __future__ import annotations

from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES, Carrier, Found
from media_codecs.errors import CorruptMedia, MediaTooLarge
from media_codecs.image import png

CHUNK_TYPE = png.C2PA_CHUNK_TYPE


class PngCarrier(Carrier):
    mime_type = "image/png"

    def find(self, data: bytes) -> Found | None:
        """The C2PA store in the `caBX` chunk, or None. Raises CodecError for a bad PNG or store."""
        chunks, _ = png.parse_chunks(data)
        offset = len(png.SIGNATURE)
        found = None
        for chunk in chunks:
            if chunk.type == CHUNK_TYPE:
                if found is not None:
                    raise CorruptMedia("the PNG has two C2PA manifest stores")
                if len(chunk.raw) - 12 > MAX_STORE_BYTES:
                    raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
                found = Found(chunk.data, offset, len(chunk.raw))
            offset += len(chunk.raw)
        return found

    def strip(self, data: bytes) -> bytes:
        chunks, trailer = png.parse_chunks(data)
        kept = [chunk for chunk in chunks if chunk.type != CHUNK_TYPE]
        return data if len(kept) == len(chunks) else png.assemble(kept, trailer)

    def insert_offset(self, stripped: bytes) -> int:
        """Before the first IDAT (or fcTL), as the spec recommends."""
        chunks, _ = png.parse_chunks(stripped)
        offset = len(png.SIGNATURE)
        for chunk in chunks:
            if chunk.type in (b"IDAT", b"fcTL"):
                return offset
            offset += len(chunk.raw)
        raise CorruptMedia("the PNG has no IDAT chunk")

    def wrapped(self, store: bytes) -> bytes:
        self.check_store_size(len(store))
        return bytes(png.make_chunk(CHUNK_TYPE, store).raw)

    def wrapped_size(self, store_size: int) -> int:
        return store_size + 12


PNG_CARRIER = PngCarrier()
