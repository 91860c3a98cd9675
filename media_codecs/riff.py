"""RIFF, the chunk container WAV and WebP share: walking the chunk list, building chunks, rewriting the size.

A RIFF file is `RIFF`, a 32-bit little-endian size, a form type (`WAVE`, `WEBP`), then chunks of a
FourCC, a 32-bit little-endian size and the payload, padded to an even length with a zero byte
(Microsoft's "Multimedia Programming Interface and Data Specifications 1.0"). Every size is checked
against where it may end: the RIFF size within the file, each chunk within the RIFF payload. Bytes
after the RIFF payload are the format's trailer, kept by its writer as they came.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from media_codecs.errors import CorruptMedia

HEADER_BYTES = 12  # RIFF, size, form type
SIZE_AT = 4  # where the RIFF size is written
C2PA_CHUNK = b"C2PA"  # a C2PA manifest store, the last top-level chunk (media_codecs/c2pa/carriers/riff.py)


@dataclass(frozen=True)
class Form:
    """One RIFF form: its type and how its errors speak (each format kept its own wording)."""

    form_type: bytes  # b"WAVE", b"WEBP"
    name: str  # "WAV", "WebP"
    size_past_end: str  # the RIFF size runs past the end of the file
    chunk_past_end: str  # a chunk runs past the RIFF payload; "{fourcc!r}" names it


@dataclass(frozen=True)
class Chunk:
    fourcc: bytes
    raw: bytes | memoryview  # FourCC, size, payload and pad byte as read

    @property
    def size(self) -> int:
        return int.from_bytes(self.raw[4:8], "little")

    @property
    def payload(self) -> bytes:
        return bytes(self.raw[8 : 8 + self.size])

    @property
    def payload_view(self) -> memoryview:
        """The payload without a copy (a WAV's data chunk is most of the file)."""
        return memoryview(self.raw)[8 : 8 + self.size]

    def head(self, length: int) -> bytes:
        """The first `length` bytes of the payload, without copying the rest."""
        return bytes(self.raw[8 : 8 + min(length, self.size)])

    @property
    def padded(self) -> bytes | memoryview:
        """The chunk with its pad byte, added when the file's last chunk lacked it."""
        return bytes(self.raw) + b"\x00" if len(self.raw) == 8 + self.size and self.size % 2 else self.raw


def is_form(data: bytes | memoryview, form_type: bytes, magic: bytes = b"RIFF") -> bool:
    """Whether `data` starts with `magic` and has the form type `form_type`."""
    return len(data) >= HEADER_BYTES and bytes(data[:4]) == magic and bytes(data[8:12]) == form_type


def payload_end(data: bytes | memoryview, form: Form) -> int:
    """Where the RIFF payload ends. Raises CorruptMedia when its size runs past the file (or is too small)."""
    end = 8 + int.from_bytes(data[4:8], "little")
    if end > len(data) or end < HEADER_BYTES:
        raise CorruptMedia(form.size_past_end)
    return end


def chunks(view: memoryview, position: int, end: int, form: Form) -> Iterator[Chunk]:
    """The chunks from `position` to `end`, as views into `view`, one at a time: a caller counting them
    against its limit stops the walk at the first chunk past it.

    Raises CorruptMedia for a truncated header or a chunk past `end`; the last chunk may lack its pad byte
    (some writers leave it off).
    """
    while position < end:
        if position + 8 > end:
            raise CorruptMedia(f"a {form.name} chunk header is truncated")
        size = int.from_bytes(view[position + 4 : position + 8], "little")
        fourcc = bytes(view[position : position + 4])
        if position + 8 + size > end:
            raise CorruptMedia(form.chunk_past_end.format(fourcc=fourcc))
        chunk_end = min(position + 8 + size + size % 2, end)
        yield Chunk(fourcc, view[position:chunk_end])
        position = chunk_end


def make_chunk(fourcc: bytes, payload: bytes | memoryview) -> Chunk:
    """Build a chunk; an odd-sized payload gets the zero pad byte RIFF requires."""
    padding = b"\x00" if len(payload) % 2 else b""
    return Chunk(fourcc, fourcc + len(payload).to_bytes(4, "little") + payload + padding)


def header(form_type: bytes, payload_size: int) -> bytes:
    """`RIFF`, the size of what follows it (the form type and the chunks), the form type."""
    return b"RIFF" + (4 + payload_size).to_bytes(4, "little") + form_type


def assemble(form_type: bytes, parts: Iterable[bytes | memoryview], trailer: bytes | memoryview = b"") -> bytes:
    """Join the chunks' bytes into a RIFF file with its size rewritten (one copy of the bytes: no
    intermediate body, which would double a 50 MB file)."""
    parts = list(parts)
    return b"".join([header(form_type, sum(len(part) for part in parts)), *parts, trailer])
