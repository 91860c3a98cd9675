"""RIFF (WebP, WAV): the store travels in one top-level `C2PA` chunk, the last chunk of the RIFF payload.

As c2pa-rs writes it (riff_io.rs): the chunk `C2PA`, its 32-bit little-endian size, the store, and a zero
pad byte when the store's size is odd; the RIFF size at offset 4 grows by the whole chunk. The exclusion of
`c2pa.hash.data` is the chunk header and the store (8 + size bytes, the pad byte hashed), so the hashed
bytes include the rewritten RIFF size: `layout` writes it for the planned store size. c2pa-rs finds the
first `C2PA` chunk among the top-level chunks and reads no further; we refuse a file with two. A WebP
keeps its form (a simple VP8/VP8L file gains no VP8X: c2pa-rs adds none, and decoders skip the chunk).
Bytes after the RIFF payload stay after it, as the codecs keep them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from media_codecs import riff
from media_codecs.audio import wav
from media_codecs.c2pa.carriers.base import MAX_STORE_BYTES, Carrier, Found, Layout
from media_codecs.errors import CorruptMedia, MediaTooLarge
from media_codecs.image import webp
from media_codecs.riff import C2PA_CHUNK, Chunk

# A codec's chunk walk: the top-level chunks (within its limits) and the bytes after the RIFF payload.
ChunkReader = Callable[[bytes], tuple[Sequence[Chunk], bytes | memoryview]]


class RiffCarrier(Carrier):
    """The `C2PA` chunk of one RIFF form; `read` is its codec's chunk walk (limits and form checks)."""

    def __init__(self, mime_type: str, form_type: bytes, read: ChunkReader):
        self.mime_type = mime_type
        self.form_type = form_type
        self._read = read

    def find(self, data: bytes) -> Found | None:
        """The store in the `C2PA` chunk, or None. Raises CodecError for a bad file or two stores."""
        chunks, _ = self._read(data)
        offset, found = riff.HEADER_BYTES, None
        for chunk in chunks:
            if chunk.fourcc == C2PA_CHUNK:
                if found is not None:
                    raise CorruptMedia("the file has two C2PA manifest stores")
                if chunk.size > MAX_STORE_BYTES:
                    raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")
                found = Found(chunk.payload, offset, 8 + chunk.size)
            offset += len(chunk.raw)
        return found

    def strip(self, data: bytes) -> bytes:
        chunks, trailer = self._read(data)
        kept = [chunk.raw for chunk in chunks if chunk.fourcc != C2PA_CHUNK]
        return data if len(kept) == len(chunks) else riff.assemble(self.form_type, kept, trailer)

    def layout(self, stripped: bytes, store_size: int) -> Layout:
        """The chunks as they are, the store's chunk last, the RIFF size rewritten for it."""
        chunks, trailer = self._read(stripped)
        view = memoryview(stripped)
        end = len(stripped) - len(trailer)
        # A last chunk a writer left without its pad byte gets it, so the store's chunk starts even.
        pad = b"\x00" if chunks and len(chunks[-1].raw) % 2 else b""
        chunks_size = end - riff.HEADER_BYTES + len(pad) + self.wrapped_size(store_size) + store_size % 2
        head = (riff.header(self.form_type, chunks_size), view[riff.HEADER_BYTES : end], pad)
        tail = (b"\x00" * (store_size % 2), view[end:])
        return Layout(head, tail, self.wrapped_size(store_size))

    def wrapped(self, store: bytes) -> bytes:
        """The chunk header and the store; its pad byte belongs to the layout's tail (it is hashed)."""
        self.check_store_size(len(store))
        return C2PA_CHUNK + len(store).to_bytes(4, "little") + store

    def wrapped_size(self, store_size: int) -> int:
        return 8 + store_size


def _wav_chunks(data: bytes) -> tuple[Sequence[Chunk], bytes | memoryview]:
    parsed = wav.parse_wav(data)
    return parsed.chunks, parsed.trailer


WEBP_CARRIER = RiffCarrier("image/webp", b"WEBP", webp.parse_chunks)
WAV_CARRIER = RiffCarrier("audio/wav", b"WAVE", _wav_chunks)
