"""FLAC: the token as an `SVC_TOKEN=<token>` field of the VORBIS_COMMENT block.

Token rule: `embed_token` removes every SVC_TOKEN field and every disclosure field of ours
(DISCLOSURE_FIELDS; field names are case-insensitive, Vorbis comment spec) and appends ours to
the file's one VORBIS_COMMENT block, or creates a block right after STREAMINFO with the vendor
string OUR_VENDOR. `strip_token` removes every field of ours, and drops the block when it is left
with no field and our vendor string (the block we created).
The vendor string and every other field are kept byte for byte and in order, and so is every
other metadata block (STREAMINFO, PADDING, APPLICATION, SEEKTABLE, CUESHEET, PICTURE); only the
last-block flags are rewritten. The audio frames are never touched.

Limits, checked while parsing: STREAMINFO first and exactly once (34 bytes, a rate, a bit depth
of 4 to 32, block sizes of at least 16); at most MAX_BLOCKS metadata blocks and one VORBIS_COMMENT
of at most MAX_COMMENTS fields; audio frames right after the last block. STREAMINFO's total sample
count 0 ("unknown", from live encoders) is refused as UnsupportedFormat: without it the duration
limit cannot be checked before decoding. The decoder gets a rebuilt file, STREAMINFO and the frames alone.

An ID3v2 tag in front of `fLaC` (discouraged by the FLAC spec) is read and kept: it is where c2pa-rs puts a
C2PA manifest store in a FLAC (a GEOB frame, media_codecs/c2pa/carriers/flac.py). `strip_token` drops that
frame too, and the tag when nothing else is left in it; every other frame stays. One tag, right before
`fLaC`, within the ID3 limits (id3.py).
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from media_codecs.audio import id3, pcm
from media_codecs.audio.base import (
    BLOCK_FRAMES,
    TOKEN_DESCRIPTION,
    AudioCodec,
    StreamInfo,
    check_token,
    libsndfile_window,
)
from media_codecs.base import SCORE_MAGIC, SCORE_NONE, Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat

if TYPE_CHECKING:
    import numpy as np

    from media_codecs.c2pa.carriers import Carrier

MAGIC = b"fLaC"
STREAMINFO, PADDING, SEEKTABLE, VORBIS_COMMENT = 0, 1, 3, 4
OUR_VENDOR = b"provenance-service"
TOKEN_FIELD = TOKEN_DESCRIPTION.upper().encode("ascii")  # SVC_TOKEN
# The disclosure's fields, written after the token and removed with it (Disclosure.fields() name -> field name).
DISCLOSURE_FIELDS = {"source_type": b"SVC_DIGITAL_SOURCE_TYPE", "provider_name": b"SVC_PROVIDER",
                     "system_name": b"SVC_SYSTEM", "system_version": b"SVC_SYSTEM_VERSION",
                     "created": b"SVC_CREATED", "identifier": b"SVC_IDENTIFIER"}
_OUR_FIELDS = frozenset({TOKEN_FIELD, *DISCLOSURE_FIELDS.values()})
MAX_BLOCKS = 1_024
MAX_COMMENTS = 10_000
_MAX_BLOCK_LENGTH = (1 << 24) - 1
_ENCODER_SUBTYPES = {8: "PCM_S8", 16: "PCM_16", 24: "PCM_24"}  # what libsndfile writes
# The frame walk (`_frames_samples`) reads at most this many frame headers: 20 minutes of 48 kHz in
# frames of 1,152 samples is 50,000, of 192 kHz in frames of 4,096 56,000.
MAX_FRAMES = 120_000
_FRAME_SYNC = re.compile(rb"\xff[\xf8\xf9]")
_TRAILER_SLACK = 128 + 64  # an ID3v1 tag some taggers append, and a little more


@dataclass(frozen=True)
class Block:
    type: int
    payload: bytes | memoryview


@dataclass(frozen=True)
class FlacFile:
    blocks: tuple[Block, ...]
    frames: bytes | memoryview  # the audio frames, and anything after them, as read
    info: StreamInfo
    id3_raw: bytes | memoryview = b""  # an ID3v2 tag in front of `fLaC`, as read (empty without one)
    id3_tag: id3.Tag | None = None


@dataclass(frozen=True)
class VorbisComment:
    vendor: bytes
    fields: tuple[bytes, ...]  # "NAME=value" entries as read

    def is_ours(self, field: bytes) -> bool:
        return field.split(b"=", 1)[0].upper() in _OUR_FIELDS

    def is_token(self, field: bytes) -> bool:
        return field.split(b"=", 1)[0].upper() == TOKEN_FIELD


def parse_flac(data: bytes) -> FlacFile:
    """Split a FLAC into its metadata blocks and its frames, and read STREAMINFO.

    Raises UnsupportedFormat (not FLAC, unknown length), CorruptMedia, MediaTooLarge past MAX_BLOCKS.
    """
    view = memoryview(data)
    tag, start = leading_tag(view)
    if bytes(view[start : start + len(MAGIC)]) != MAGIC:
        raise UnsupportedFormat("not a FLAC file")
    blocks: list[Block] = []
    position, is_last = start + len(MAGIC), False
    while not is_last:
        if len(blocks) >= MAX_BLOCKS:
            raise MediaTooLarge(f"the FLAC has more than {MAX_BLOCKS} metadata blocks")
        if position + 4 > len(data):
            raise CorruptMedia("the FLAC metadata is truncated")
        header = data[position]
        end = position + 4 + int.from_bytes(data[position + 1 : position + 4], "big")
        if end > len(data):
            raise CorruptMedia("a FLAC metadata block runs past the end of the file")
        blocks.append(Block(header & 0x7F, view[position + 4 : end]))
        position, is_last = end, bool(header & 0x80)
    _check_blocks(blocks)
    if data[position : position + 2] not in (b"\xff\xf8", b"\xff\xf9"):  # FLAC frame sync, fixed or variable
        raise CorruptMedia("the FLAC metadata is not followed by audio frames")
    info = _stream_info(bytes(blocks[0].payload))
    _check_frames(view[position:], info, bytes(blocks[0].payload))
    return FlacFile(tuple(blocks), view[position:], info, view[:start], tag)


def leading_tag(data: bytes | memoryview) -> tuple[id3.Tag | None, int]:
    """The ID3v2 tag `data` starts with (None without one) and where it ends. Raises CodecError for a bad tag."""
    length = id3.tag_length(bytes(data[: id3.HEADER_BYTES]))
    if length is None:
        return None, 0
    return id3.parse_tag(data[:length]), length


def is_flac_head(head: bytes) -> bool:
    """Whether a detection head is a FLAC's: `fLaC`, or an ID3v2 tag header followed by `fLaC` (the registry
    shows a tagged file's head as the tag header and the bytes after the tag)."""
    return head.startswith(MAGIC) or (id3.tag_length(head[: id3.HEADER_BYTES]) is not None
                                      and head[id3.HEADER_BYTES : id3.HEADER_BYTES + len(MAGIC)] == MAGIC)


def _crc8_table() -> tuple[int, ...]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc << 1 ^ 0x07 if crc & 0x80 else crc << 1) & 0xFF
        table.append(crc)
    return tuple(table)


_CRC8 = _crc8_table()


def _frame_header(frames: memoryview, at: int, channels: int) -> tuple[bool, int, int] | None:
    """(variable block size, frame or sample number, block size) of a frame header whose CRC-8 holds and
    whose channel count is the stream's, at `at`; None for bytes that only look like a sync code."""
    head = bytes(frames[at : at + 16])
    if len(head) < 6 or head[3] & 1 or head[2] >> 4 == 0 or head[2] & 0xF == 0xF:
        return None
    assignment = head[3] >> 4
    if assignment > 10 or (assignment + 1 if assignment < 8 else 2) != channels or head[3] >> 1 & 7 == 3:
        return None
    first, position = head[4], 5
    extra = next((n for n, (mask, lead) in enumerate(((0x80, 0), (0xE0, 0xC0), (0xF0, 0xE0), (0xF8, 0xF0),
                                                      (0xFC, 0xF8), (0xFE, 0xFC), (0xFF, 0xFE)))
                  if first & mask == lead), None)
    if extra is None:
        return None
    number = first & (0x7F >> extra) if extra else first
    for byte in head[position : position + extra]:
        if byte & 0xC0 != 0x80:
            return None
        number = number << 6 | byte & 0x3F
    position += extra
    code = head[2] >> 4
    if code in (6, 7):
        size_bytes = 1 if code == 6 else 2
        block = int.from_bytes(head[position : position + size_bytes], "big") + 1
        position += size_bytes
    else:
        block = 192 if code == 1 else 144 << code if code <= 5 else 1 << code
    position += {12: 1, 13: 2, 14: 2}.get(head[2] & 0xF, 0)
    if position >= len(head):
        return None
    crc = 0
    for byte in head[:position]:
        crc = _CRC8[crc ^ byte]
    return (bool(head[1] & 1), number, block) if crc == head[position] else None


def _check_frames(frames: memoryview, info: StreamInfo, streaminfo: bytes) -> None:
    """Walk the frame headers (sync code, CRC-8, each numbered after the last: no decoding) and refuse a
    STREAMINFO that understates its frames: more samples than it declares, or bytes past the last frame
    that no frame of the stream accounts for (a second stream appended). A stream shorter than declared
    (cut between frames) is a shorter FLAC, read as such. Raises CorruptMedia, MediaTooLarge."""
    counted, index, last = 0, 0, 0
    for match in _FRAME_SYNC.finditer(frames):
        header = _frame_header(frames, match.start(), info.channels)
        if header is None:
            continue
        variable, number, block = header
        if number != (counted if variable else index):
            continue
        counted, index, last = counted + block, index + 1, match.start()
        if counted > info.frames + block:  # the last frame may declare more than the stream's end
            raise CorruptMedia(f"the FLAC frames hold more than the {info.frames:,} samples its STREAMINFO "
                               "declares")
        if index > MAX_FRAMES:
            raise MediaTooLarge(f"the FLAC has more than {MAX_FRAMES:,} frames")
    max_frame = int.from_bytes(streaminfo[7:10], "big")
    max_block = int.from_bytes(streaminfo[2:4], "big")
    bound = max_frame or max_block * info.channels * info.bits_per_sample // 8 + 64
    if len(frames) - last > bound + _TRAILER_SLACK:
        raise CorruptMedia(f"the FLAC holds {len(frames) - last - bound:,} bytes after its last frame "
                           f"({info.frames:,} samples, as STREAMINFO declares)")


def _check_blocks(blocks: list[Block]) -> None:
    types = [block.type for block in blocks]
    if types[0] != STREAMINFO or len(blocks[0].payload) != 34 or types.count(STREAMINFO) != 1:
        raise CorruptMedia("a FLAC must start with one 34-byte STREAMINFO block")
    if types.count(VORBIS_COMMENT) > 1:
        raise CorruptMedia("the FLAC has more than one VORBIS_COMMENT block")
    if 127 in types:
        raise CorruptMedia("the FLAC has a metadata block of the invalid type 127")


def _stream_info(payload: bytes) -> StreamInfo:
    """STREAMINFO (FLAC format, section 8.2). Raises CorruptMedia, UnsupportedFormat."""
    min_block, max_block = int.from_bytes(payload[0:2], "big"), int.from_bytes(payload[2:4], "big")
    packed = int.from_bytes(payload[10:18], "big")  # rate 20 bits, channels-1 3, bits-1 5, samples 36
    rate, channels, bits = packed >> 44, (packed >> 41 & 0x7) + 1, (packed >> 36 & 0x1F) + 1
    total = packed & (1 << 36) - 1
    if min_block < 16 or max_block < min_block or rate == 0 or bits < 4:
        raise CorruptMedia("the FLAC STREAMINFO block is malformed")
    if total == 0:
        raise UnsupportedFormat("the FLAC does not declare its length (total samples 0); re-encode it with flac")
    return StreamInfo(rate, channels, total, bits)


def make_block_bytes(blocks: list[Block] | tuple[Block, ...]) -> bytes:
    """The metadata blocks with their headers, the last-block flag on the last one only.

    Raises MediaTooLarge for a block over the format's 16 MB.
    """
    parts = []
    for index, block in enumerate(blocks):
        if len(block.payload) > _MAX_BLOCK_LENGTH:
            raise MediaTooLarge("a FLAC metadata block would pass 16 MB")
        flag = 0x80 if index == len(blocks) - 1 else 0
        parts += [bytes([flag | block.type]), len(block.payload).to_bytes(3, "big"), block.payload]
    return b"".join(parts)


def assemble(blocks: list[Block] | tuple[Block, ...], frames: bytes | memoryview,
             id3_raw: bytes | memoryview = b"") -> bytes:
    return b"".join([id3_raw, MAGIC, make_block_bytes(blocks), frames])


def id3_without_store(flac: FlacFile) -> bytes | memoryview:
    """The leading ID3v2 tag without its C2PA manifest store (GEOB) frames; empty when no frame is left."""
    tag = flac.id3_tag
    if tag is None:
        return flac.id3_raw
    kept = [frame for frame in tag.frames if not id3.is_c2pa_store(frame)]
    if len(kept) == len(tag.frames):
        return flac.id3_raw
    return id3.tag_bytes(id3.with_frames(tag, kept)) if kept else b""


def parse_comment(payload: bytes | memoryview) -> VorbisComment:
    """The vendor string and fields of a VORBIS_COMMENT block (little-endian lengths, no framing bit).

    Raises CorruptMedia for lengths past the block, MediaTooLarge past MAX_COMMENTS.
    """
    data = bytes(payload)
    vendor, position = _counted(data, 0)
    if position + 4 > len(data):
        raise CorruptMedia("the FLAC VORBIS_COMMENT block is truncated")
    count = int.from_bytes(data[position : position + 4], "little")
    if count > MAX_COMMENTS:
        raise MediaTooLarge(f"the FLAC has more than {MAX_COMMENTS} comment fields")
    position += 4
    fields = []
    for _ in range(count):
        field, position = _counted(data, position)
        fields.append(field)
    return VorbisComment(vendor, tuple(fields))


def _counted(data: bytes, position: int) -> tuple[bytes, int]:
    if position + 4 > len(data):
        raise CorruptMedia("the FLAC VORBIS_COMMENT block is truncated")
    end = position + 4 + int.from_bytes(data[position : position + 4], "little")
    if end > len(data):
        raise CorruptMedia("a FLAC comment runs past the end of its block")
    return data[position + 4 : end], end


def comment_payload(comment: VorbisComment) -> bytes:
    parts = [len(comment.vendor).to_bytes(4, "little"), comment.vendor, len(comment.fields).to_bytes(4, "little")]
    for field in comment.fields:
        parts += [len(field).to_bytes(4, "little"), field]
    return b"".join(parts)


def _comment_index(blocks: tuple[Block, ...]) -> int | None:
    return next((i for i, block in enumerate(blocks) if block.type == VORBIS_COMMENT), None)


def _without_token(blocks: tuple[Block, ...]) -> tuple[list[Block], int]:
    """The blocks with our fields removed, and where the comment block is (or goes: after STREAMINFO)."""
    index = _comment_index(blocks)
    if index is None:
        return list(blocks), 1
    comment = parse_comment(blocks[index].payload)
    kept = VorbisComment(comment.vendor, tuple(field for field in comment.fields if not comment.is_ours(field)))
    result = list(blocks)
    if kept.fields or kept.vendor != OUR_VENDOR:
        result[index] = Block(VORBIS_COMMENT, comment_payload(kept) if kept != comment else blocks[index].payload)
    else:
        del result[index]
    return result, index


class FlacCodec(AudioCodec):
    format = "flac"
    mime_type = "audio/flac"
    discloses_in_metadata = True  # Vorbis comment fields after the token (DISCLOSURE_FIELDS)

    def score(self, head: bytes) -> int:
        return SCORE_MAGIC if is_flac_head(head) else SCORE_NONE

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in a GEOB frame of an ID3v2 tag in front of `fLaC`, as c2pa-rs puts it; the C2PA
        package is imported when a manifest is first met."""
        from media_codecs.c2pa.carriers.flac import FLAC_CARRIER

        return FLAC_CARRIER

    def parse(self, data: bytes) -> FlacFile:
        return parse_flac(data)

    def stream_info(self, container: FlacFile) -> StreamInfo:
        return container.info

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `SVC_TOKEN=<token>` last in the VORBIS_COMMENT block (created when missing), replacing ours,
        followed by the disclosure's fields (DISCLOSURE_FIELDS), which go with it.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        ours = (TOKEN_FIELD + b"=" + check_token(token),) + (() if disclosure is None else tuple(
            DISCLOSURE_FIELDS[name] + b"=" + value.encode("utf-8") for name, value in disclosure.fields().items()))
        flac = self.media(content).container
        blocks, index = _without_token(flac.blocks)
        if index < len(blocks) and blocks[index].type == VORBIS_COMMENT:
            comment = parse_comment(blocks[index].payload)
            blocks[index] = Block(VORBIS_COMMENT, comment_payload(
                VorbisComment(comment.vendor, (*comment.fields, *ours))))
        else:
            blocks.insert(index, Block(VORBIS_COMMENT, comment_payload(VorbisComment(OUR_VENDOR, ours))))
        return assemble(blocks, flac.frames, flac.id3_raw)

    def extract_token(self, content: bytes | Media) -> str | None:
        """The first SVC_TOKEN field's value. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        flac = self.media(content).container
        index = _comment_index(flac.blocks)
        if index is None:
            return None
        comment = parse_comment(flac.blocks[index].payload)
        field = next((field for field in comment.fields if comment.is_token(field)), None)
        return None if field is None else field.split(b"=", 1)[1].decode("utf-8", "replace") or None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The file without our fields (and without the comment block we created), and without a C2PA
        manifest store (the other container a signed FLAC may gain, in an ID3v2 tag in front)."""
        media = self.media(content)
        blocks, _ = _without_token(media.container.blocks)
        return assemble(blocks, media.container.frames, id3_without_store(media.container))

    def decode(self, media: Media) -> np.ndarray:
        """Decode with libsndfile (libFLAC), given STREAMINFO and the frames only. Raises CorruptMedia."""
        import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

        flac = media.container
        decoder_input = _decoder_input(media)
        try:
            samples, _ = soundfile.read(io.BytesIO(decoder_input), frames=flac.info.frames, dtype="float64",
                                        always_2d=True)
        except (soundfile.SoundFileError, RuntimeError) as error:
            raise CorruptMedia(f"the FLAC audio does not decode: {error}") from None
        if samples.shape != (flac.info.frames, flac.info.channels):
            raise CorruptMedia("the FLAC audio is shorter than its STREAMINFO declares")
        return samples

    def decode_window(self, media: Media, start: int, frames: int) -> np.ndarray:
        """libsndfile seeks to `start` and decodes only `frames` frames. Raises CorruptMedia."""
        return libsndfile_window(_decoder_input(media), start, frames, "FLAC")

    def decode_blocks(self, media: Media) -> Iterator[np.ndarray]:
        """libsndfile decodes BLOCK_FRAMES frames at a time. Raises CorruptMedia."""
        import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

        flac, decoded = media.container, 0
        try:
            with soundfile.SoundFile(io.BytesIO(_decoder_input(media))) as decoder:
                while decoded < flac.info.frames and len(block := decoder.read(
                        min(BLOCK_FRAMES, flac.info.frames - decoded), dtype="float64", always_2d=True)):
                    decoded += len(block)
                    yield block
        except (soundfile.SoundFileError, RuntimeError) as error:
            raise CorruptMedia(f"the FLAC audio does not decode: {error}") from None
        if decoded != flac.info.frames:
            raise CorruptMedia("the FLAC audio is shorter than its STREAMINFO declares")

    def encode_blocks(self, media: Media, blocks: Iterable[np.ndarray]) -> bytes:
        """Lossless at the same rate, channels and bit depth, with the original metadata blocks.

        STREAMINFO (and SEEKTABLE, whose offsets no longer hold) come from the new encoding.
        Raises UnsupportedFormat for a bit depth libsndfile cannot write (only 8, 16, 24).
        """
        flac = media.container
        encoded = parse_flac(_encode(blocks, flac.info))
        new_seektable = [block for block in encoded.blocks if block.type == SEEKTABLE]
        blocks: list[Block] = []
        for block in flac.blocks:
            if block.type == STREAMINFO:
                blocks += [encoded.blocks[0], *new_seektable]
            elif block.type != SEEKTABLE:
                blocks.append(block)
        return assemble(blocks, encoded.frames, flac.id3_raw)


def _encode(blocks: Iterable[np.ndarray], info: StreamInfo) -> bytes:
    import numpy as np
    import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

    subtype = _ENCODER_SUBTYPES.get(info.bits_per_sample)
    if subtype is None:
        raise UnsupportedFormat(f"{info.bits_per_sample}-bit FLAC cannot be re-encoded; only 8, 16 or 24 bits")
    buffer = io.BytesIO()
    try:
        with soundfile.SoundFile(buffer, "w", info.sample_rate, info.channels, subtype, format="FLAC") as encoder:
            for samples in blocks:
                # Integers, left-aligned in int32 as libsndfile expects: no float scaling convention in between.
                encoder.write((pcm.to_int(samples, info.bits_per_sample) << (32 - info.bits_per_sample))
                              .astype(np.int32))
    except (soundfile.SoundFileError, RuntimeError) as error:
        raise UnsupportedFormat(f"the FLAC encoder refused the audio: {error}") from None
    return buffer.getvalue()


def _decoder_input(media: Media) -> bytes:
    """STREAMINFO and the frames: all libFLAC needs, none of the metadata a hostile file may pile up."""
    flac = media.container
    return assemble([flac.blocks[0]], flac.frames)


CODEC = FlacCodec()
