"""WebP: the token in a RIFF `XMP ` chunk of the extended (VP8X) format.

Container surgery on the RIFF chunk list (Google's "WebP Container Specification"): a
simple file (one `VP8 ` or `VP8L` chunk) is converted to the extended format by adding a
VP8X chunk with the canvas size and alpha flag read from the bitstream, then the XMP chunk
is added and the XMP flag set. Stripping undoes exactly that, so a simple file comes back
byte for byte. Chunks are kept as the exact bytes read; only the RIFF size is rewritten.
Stripping also drops the `C2PA` chunk of a manifest store (media_codecs/c2pa/carriers/riff.py).

Limit, checked while parsing: at most MAX_CHUNKS chunks (a still has at most six; an animation
has one ANMF chunk per frame), of which at most MAX_METADATA_CHUNKS are not frames. The decoder
gets a rebuilt still holding only the first image: ALPH and the bitstream, or those of the first
frame of an animation.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from media_codecs import riff, xmp
from media_codecs.base import Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.image import pixels, vp8
from media_codecs.image.base import ImageCodec
from media_codecs.riff import Chunk, make_chunk

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    from media_codecs.c2pa.carriers import Carrier

# VP8X flags byte (container spec, "Extended File Format"): Rsv Rsv I L E X A R.
FLAG_ICC, FLAG_ALPHA, FLAG_EXIF, FLAG_XMP, FLAG_ANIMATION = 0x20, 0x10, 0x08, 0x04, 0x02
_IMAGE_CHUNKS = (b"VP8 ", b"VP8L")
_PIXEL_CHUNKS = (b"ALPH", b"VP8 ", b"VP8L", b"ANIM", b"ANMF")
_METADATA_ORDER = {b"ICCP": 0, b"EXIF": 2, b"XMP ": 3}  # image data sits at 1
# A lossy input is re-encoded at its own quality, estimated from its quantisers (vp8.py), so the file
# keeps its size; never below this floor, which leaves the mark room to survive a later recompression
# (it reads after quality 40 on the sample photographs), nor for a header we cannot read above 90.
_MIN_LOSSY_QUALITY = 60
_FALLBACK_QUALITY = 90
MAX_CHUNKS = 65_536
MAX_METADATA_CHUNKS = 1_024  # chunks other than animation frames: a still has at most six
FORM = riff.Form(b"WEBP", "WebP", "the WebP RIFF size runs past the end of the file",
                 "a WebP chunk runs past the end of the file")


def parse_chunks(data: bytes) -> tuple[list[Chunk], memoryview]:
    """Split a WebP into its chunks and any bytes after the RIFF payload.

    Raises UnsupportedFormat when `data` is not a WebP, CorruptMedia when truncated,
    MediaTooLarge past MAX_CHUNKS.
    """
    if not riff.is_form(data, FORM.form_type):
        raise UnsupportedFormat("not a WebP file")
    end = riff.payload_end(data, FORM)
    chunks = _read_chunks(memoryview(data), riff.HEADER_BYTES, end)
    if not chunks or chunks[0].fourcc not in (b"VP8X", *_IMAGE_CHUNKS):
        raise CorruptMedia("the WebP starts with neither VP8X nor an image chunk")
    if chunks[0].fourcc == b"VP8X" and chunks[0].size < 10:
        raise CorruptMedia("the VP8X chunk is truncated")
    return chunks, memoryview(data)[end:]


def _read_chunks(view: memoryview, position: int, end: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    frames = 0
    for chunk in riff.chunks(view, position, end, FORM):
        if len(chunks) >= MAX_CHUNKS or len(chunks) - frames > MAX_METADATA_CHUNKS:
            raise MediaTooLarge(f"the WebP has more than {MAX_CHUNKS} chunks, or {MAX_METADATA_CHUNKS} besides frames")
        chunks.append(chunk)
        frames += chunk.fourcc == b"ANMF"
    return chunks


def _frame_chunks(anmf: Chunk) -> list[Chunk]:
    """The chunks inside an ANMF frame, after its 16-byte header (offsets, size, duration, flags).

    Raises CorruptMedia for a malformed frame.
    """
    if anmf.size < 16 + 8:
        raise CorruptMedia("the first WebP animation frame is truncated")
    return _read_chunks(memoryview(anmf.raw), 8 + 16, 8 + anmf.size)


def assemble(chunks: list[Chunk], trailer: bytes | memoryview = b"") -> bytes:
    """Join chunks into a RIFF file with the right size field; the chunks' bytes are kept as read (a last
    chunk without its pad byte stays so: a simple file strips back to its original bytes)."""
    return riff.assemble(FORM.form_type, (chunk.raw for chunk in chunks), trailer)


def bitstream_info(chunk: Chunk) -> tuple[int, int, bool]:
    """Width, height and whether alpha is used, from a `VP8 ` or `VP8L` bitstream header.

    Raises CorruptMedia for a malformed header.
    """
    payload = chunk.head(10)
    if chunk.fourcc == b"VP8L":
        # WebP lossless spec 3.: signature 0x2f, then 14-bit width-1, 14-bit height-1,
        # 1-bit alpha_is_used and a 3-bit version that must be 0.
        if len(payload) < 5 or payload[0] != 0x2F:
            raise CorruptMedia("the VP8L header is malformed")
        bits = int.from_bytes(payload[1:5], "little")
        if bits >> 29:
            raise CorruptMedia("the VP8L version is not 0")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, bool(bits >> 28 & 1)
    # RFC 6386 9.1: 3-byte frame tag, start code 9d 01 2a, then 14-bit width and height.
    if len(payload) < 10 or payload[3:6] != b"\x9d\x01\x2a":
        raise CorruptMedia("the VP8 key frame header is malformed")
    width = int.from_bytes(payload[6:8], "little") & 0x3FFF
    height = int.from_bytes(payload[8:10], "little") & 0x3FFF
    if not width or not height:
        raise CorruptMedia("the VP8 frame has no pixels")
    return width, height, False


def canvas_size(chunks: list[Chunk]) -> tuple[int, int]:
    """The canvas size: from VP8X in the extended format, else from the bitstream."""
    first = chunks[0]
    if first.fourcc != b"VP8X":
        width, height, _ = bitstream_info(first)
        return width, height
    header = first.head(10)
    width = int.from_bytes(header[4:7], "little") + 1
    height = int.from_bytes(header[7:10], "little") + 1
    return width, height


def vp8x_for(chunks: list[Chunk]) -> Chunk:
    """The VP8X chunk describing a still image made of `chunks` (no VP8X among them).

    Raises CorruptMedia when there is no image chunk.
    """
    image = next((chunk for chunk in chunks if chunk.fourcc in _IMAGE_CHUNKS), None)
    if image is None:
        raise CorruptMedia("the WebP has no image chunk")
    width, height, has_alpha = bitstream_info(image)
    fourccs = {chunk.fourcc for chunk in chunks}
    flags = FLAG_ALPHA if has_alpha or b"ALPH" in fourccs else 0
    flags |= FLAG_ICC if b"ICCP" in fourccs else 0
    flags |= FLAG_EXIF if b"EXIF" in fourccs else 0
    flags |= FLAG_XMP if b"XMP " in fourccs else 0
    # Canvas width-1 and height-1 as 24-bit little-endian fields after 3 reserved bytes.
    payload = bytes([flags, 0, 0, 0]) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return make_chunk(b"VP8X", payload)


def _with_flags(vp8x: Chunk, set_flags: int, clear_flags: int) -> Chunk:
    payload = vp8x.payload
    payload = bytes([(payload[0] | set_flags) & ~clear_flags & 0xFF]) + payload[1:]
    return make_chunk(b"VP8X", payload)


def _extended(chunks: list[Chunk]) -> list[Chunk]:
    return chunks if chunks[0].fourcc == b"VP8X" else [vp8x_for(chunks), *chunks]


def _simplified(chunks: list[Chunk]) -> list[Chunk]:
    """Drop a VP8X that says nothing the lone bitstream does not (the inverse of _extended)."""
    if len(chunks) == 2 and chunks[1].fourcc in _IMAGE_CHUNKS and chunks[0].raw == vp8x_for(chunks[1:]).raw:
        return chunks[1:]
    return chunks


def _without_token(chunks: list[Chunk]) -> list[Chunk]:
    index = _xmp_index(chunks)
    if index is None:
        return chunks
    remaining = xmp.remove_token(chunks[index].payload)
    if remaining == chunks[index].payload:
        return chunks
    if remaining is not None:
        return [*chunks[:index], make_chunk(b"XMP ", remaining), *chunks[index + 1 :]]
    rest = [*chunks[:index], *chunks[index + 1 :]]
    if rest[0].fourcc == b"VP8X":
        rest[0] = _with_flags(rest[0], 0, FLAG_XMP)
    return rest


def _xmp_insert_index(chunks: list[Chunk]) -> int:
    # Container spec chunk order: VP8X, ICCP, ANIM, image data, EXIF, XMP, then unknown.
    index = len(chunks)
    while index > 1 and chunks[index - 1].fourcc not in (*_PIXEL_CHUNKS, b"EXIF", b"ICCP"):
        index -= 1
    return index


def _xmp_index(chunks: list[Chunk]) -> int | None:
    return next((i for i, chunk in enumerate(chunks) if chunk.fourcc == b"XMP "), None)


class WebpCodec(ImageCodec):
    format = "webp"
    mime_type = "image/webp"
    pillow_format = "WEBP"
    magic = ((0, b"RIFF"), (8, b"WEBP"))  # RIFF with form type WEBP
    max_sign_pixels = 16_777_216  # 4096 x 4096; libwebp's encoder needs about 20 bytes a pixel

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in a `C2PA` chunk; the C2PA package is imported when a manifest is first met."""
        from media_codecs.c2pa.carriers.riff import WEBP_CARRIER

        return WEBP_CARRIER

    def parse(self, data: bytes) -> tuple[list[Chunk], memoryview]:
        return parse_chunks(data)

    def canvas_size(self, container: tuple[list[Chunk], memoryview]) -> tuple[int, int]:
        return canvas_size(container[0])

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `token` in the XMP chunk, converting a simple file to the extended format.

        Raises UnsupportedFormat, CorruptMedia; ValueError for a bad token.
        """
        chunks, trailer = self.media(content).container
        chunks = _extended(list(chunks))
        index = _xmp_index(chunks)
        existing = None if index is None else chunks[index].payload
        chunk = make_chunk(b"XMP ", xmp.merge_token(existing, token, disclosure))
        if index is None:
            chunks.insert(_xmp_insert_index(chunks), chunk)
        else:
            chunks[index] = chunk
        chunks[0] = _with_flags(chunks[0], FLAG_XMP, 0)
        return assemble(chunks, trailer)

    def extract_token(self, content: bytes | Media) -> str | None:
        """Read our token from the XMP chunk. Raises UnsupportedFormat, CorruptMedia."""
        chunks, _ = self.media(content).container
        index = _xmp_index(chunks)
        return None if index is None else xmp.read_token(chunks[index].payload)

    def strip_token(self, content: bytes | Media) -> bytes:
        """Remove our token and any C2PA manifest store (the `C2PA` chunk, the other container a signed
        WebP may gain); the XMP chunk and the XMP flag go when nothing else is left.

        A VP8X that only restates the bitstream is dropped too, which returns a simple
        file to its original bytes. Raises UnsupportedFormat, CorruptMedia.
        """
        media = self.media(content)
        chunks, trailer = media.container
        kept = [chunk for chunk in chunks if chunk.fourcc != riff.C2PA_CHUNK]
        stripped = _simplified(_without_token(kept))
        return media.data if stripped == chunks else assemble(stripped, trailer)

    def decoder_input(self, media: Media) -> bytes:
        """The first image alone, as a still: ALPH and the bitstream (behind a VP8X that says only
        what they say), or the same taken out of the first ANMF frame of an animation."""
        chunks, _ = media.container
        first_frame = next((chunk for chunk in chunks if chunk.fourcc == b"ANMF"), None)
        if first_frame is not None:
            chunks = _frame_chunks(first_frame)
        image = [chunk for chunk in chunks if chunk.fourcc in (b"ALPH", *_IMAGE_CHUNKS)]
        return assemble(_simplified([vp8x_for(image), *image]))

    def decode(self, decoder_input: bytes) -> np.ndarray:
        return pixels.decode_webp(decoder_input)  # an array, read where it lies (pixels.Picture)

    def check_watermarkable(self, media: Media) -> None:
        if any(chunk.fourcc in (b"ANIM", b"ANMF") for chunk in media.container[0]):
            raise UnsupportedFormat("animated WebPs cannot be watermarked")

    def reencode(self, media: Media, marked: Image.Image, options: dict[str, object]) -> bytes:
        """Lossless stays lossless, lossy is re-encoded at its own estimated quality; ICC, EXIF,
        XMP (with any token) and unknown chunks are carried over byte for byte."""
        chunks, trailer = media.container
        bitstream = next(chunk for chunk in chunks if chunk.fourcc in _IMAGE_CHUNKS)
        encoder = {"lossless": True} if bitstream.fourcc == b"VP8L" else {"quality": _reencode_quality(bitstream)}
        encoded, _ = parse_chunks(_encode(marked, encoder))
        image_chunks = [chunk for chunk in encoded if chunk.fourcc in _PIXEL_CHUNKS]
        return assemble(_with_metadata(image_chunks, chunks), trailer)


def _reencode_quality(vp8_chunk: Chunk) -> int:
    try:
        return max(_MIN_LOSSY_QUALITY, vp8.estimated_quality(vp8_chunk.head(vp8.HEADER_BYTES)))
    except ValueError:
        return _FALLBACK_QUALITY


def _encode(marked: Image.Image, encoder: dict[str, object]) -> bytes:
    buffer = io.BytesIO()
    # exact=True keeps the colour under fully transparent pixels: libwebp would otherwise
    # flatten it, erasing the mark there (and changing the input's hidden colours).
    with pixels.decoder_errors():
        marked.save(buffer, "WEBP", exact=True, **encoder)
    return buffer.getvalue()


def _with_metadata(image_chunks: list[Chunk], original: list[Chunk]) -> list[Chunk]:
    """New image chunks with the original's metadata chunks, in container-spec order."""
    metadata = [chunk for chunk in original if chunk.fourcc not in (*_PIXEL_CHUNKS, b"VP8X")]
    ordered = sorted(metadata, key=lambda chunk: _METADATA_ORDER.get(chunk.fourcc, 4))
    before = [chunk for chunk in ordered if chunk.fourcc == b"ICCP"]
    after = [chunk for chunk in ordered if chunk.fourcc != b"ICCP"]
    body = [*before, *image_chunks, *after]
    return _simplified([vp8x_for(body), *body])


CODEC = WebpCodec()
