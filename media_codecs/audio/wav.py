"""WAV: the token in a RIFF chunk of our own, `svct`, holding the token's ASCII bytes.

Token rule: `embed_token` removes every `svct` chunk and inserts one, right before the `data`
chunk (readers that stop at `data` still pass it); `strip_token` removes every `svct` chunk, and
the `C2PA` chunk of a manifest store (media_codecs/c2pa/carriers/riff.py).
Every other chunk (fmt, fact, LIST/INFO, bext, id3, cue, smpl, unknown ones) is kept byte for
byte and in order; the file is rebuilt with the RIFF size recomputed and a pad byte after every
odd-sized chunk (one a writer left off at the end of the file is added). Bytes after the RIFF
payload are kept as they are.

Supported: integer PCM of 8 (unsigned), 16, 24 and 32 bits and IEEE float of 32 and 64 bits,
plain or WAVE_FORMAT_EXTENSIBLE, 1 to 8 channels. Other encodings (ADPCM, A-law, MPEG...) and
RF64/BW64 files are UnsupportedFormat. A file needs exactly one `fmt ` and one `data` chunk, and
every chunk (`data` included) must end within the RIFF payload, which must end within the file:
a truncated or still-streaming file (a `data` size running past the end, or 0 / 0xFFFFFFFF) is
CorruptMedia. A partial frame at the end of `data` is not decoded and is dropped by `reencode`.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from media_codecs import riff
from media_codecs.audio import pcm
from media_codecs.audio.base import BLOCK_FRAMES, AudioCodec, StreamInfo, check_token
from media_codecs.base import SCORE_MAGIC, SCORE_NONE, Media
from media_codecs.disclosure import Disclosure
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.riff import Chunk, make_chunk

if TYPE_CHECKING:
    import numpy as np

    from media_codecs.c2pa.carriers import Carrier

TOKEN_CHUNK = b"svct"
# The disclosure, in a LIST/INFO chunk of our own right after the token's: RIFF INFO's standard fields where
# one fits (ISRF the source form: the digital source type; ISRC the source: the provider; ISFT the software:
# the system and its version; ICRD the creation date; ICMT a comment naming the identifier), and ISVC (not a
# standard field: readers show or skip it) holding the token, which marks the chunk as ours.
OUR_INFO_FIELD = b"ISVC"
_LARGE_RIFF = (b"RF64", b"BW64")  # 64-bit sizes in a ds64 chunk: recognised, refused
MAX_CHUNKS = 1_024  # a WAV has a handful; a broadcast file with markers a few dozen
_PCM, _FLOAT, _EXTENSIBLE = 0x0001, 0x0003, 0xFFFE
# KSDATAFORMAT_SUBTYPE_*: the format tag in the first two bytes, then this fixed tail.
_SUBFORMAT_TAIL = bytes.fromhex("000000001000800000aa00389b71")
_PCM_BITS, _FLOAT_BITS = (8, 16, 24, 32), (32, 64)
FORM = riff.Form(b"WAVE", "WAV", "the RIFF size runs past the end of the file (truncated or still being written?)",
                 "the WAV chunk {fourcc!r} runs past the end of the file")


@dataclass(frozen=True)
class SampleFormat:
    channels: int
    sample_rate: int
    bits: int  # the container size of one sample
    is_float: bool

    @property
    def block_align(self) -> int:
        return self.channels * self.bits // 8


@dataclass(frozen=True)
class WavFile:
    chunks: tuple[Chunk, ...]
    trailer: bytes | memoryview  # bytes after the RIFF payload
    format: SampleFormat
    frames: int


def assemble(chunks: list[Chunk] | tuple[Chunk, ...], trailer: bytes | memoryview = b"") -> bytes:
    """Join chunks into a RIFF/WAVE file with the right size field and every pad byte."""
    return riff.assemble(FORM.form_type, (chunk.padded for chunk in chunks), trailer)


def parse_wav(data: bytes) -> WavFile:
    """Split a WAV into its chunks and read its sample format.

    Raises UnsupportedFormat (not a WAV, RF64, an encoding we do not decode), CorruptMedia
    (truncated, lying sizes, no or repeated fmt/data), MediaTooLarge past MAX_CHUNKS.
    """
    if any(riff.is_form(data, FORM.form_type, magic) for magic in _LARGE_RIFF):
        raise UnsupportedFormat("RF64/BW64 WAV files (over 4 GB) are not supported")
    if not riff.is_form(data, FORM.form_type):
        raise UnsupportedFormat("not a WAV file")
    end = riff.payload_end(data, FORM)
    view = memoryview(data)
    chunks = _read_chunks(view, riff.HEADER_BYTES, end)
    fmt, sound = _only(chunks, b"fmt "), _only(chunks, b"data")
    sample_format = _sample_format(fmt.payload)
    return WavFile(tuple(chunks), view[end:], sample_format, sound.size // sample_format.block_align)


def _read_chunks(view: memoryview, position: int, end: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for chunk in riff.chunks(view, position, end, FORM):
        if len(chunks) >= MAX_CHUNKS:
            raise MediaTooLarge(f"the WAV has more than {MAX_CHUNKS} chunks")
        chunks.append(chunk)
    return chunks


def _only(chunks: list[Chunk], chunk_id: bytes) -> Chunk:
    found = [chunk for chunk in chunks if chunk.fourcc == chunk_id]
    if len(found) != 1:
        raise CorruptMedia(f"a WAV needs exactly one {chunk_id.decode().strip()!r} chunk, this one has {len(found)}")
    return found[0]


def _sample_format(fmt: bytes) -> SampleFormat:
    """Read WAVEFORMATEX (and its EXTENSIBLE form). Raises CorruptMedia, UnsupportedFormat."""
    if len(fmt) < 16:
        raise CorruptMedia("the WAV fmt chunk is truncated")
    tag, channels = int.from_bytes(fmt[0:2], "little"), int.from_bytes(fmt[2:4], "little")
    rate, block_align = int.from_bytes(fmt[4:8], "little"), int.from_bytes(fmt[12:14], "little")
    bits = int.from_bytes(fmt[14:16], "little")
    if tag == _EXTENSIBLE:
        if len(fmt) < 40 or fmt[26:40] != _SUBFORMAT_TAIL:
            raise UnsupportedFormat("this WAVE_FORMAT_EXTENSIBLE sub-format is not supported")
        tag = int.from_bytes(fmt[24:26], "little")
    supported = _PCM_BITS if tag == _PCM else _FLOAT_BITS if tag == _FLOAT else ()
    if bits not in supported:
        raise UnsupportedFormat(f"WAV encoding {tag:#06x} with {bits}-bit samples is not supported; "
                                "only PCM of 8, 16, 24 or 32 bits and float of 32 or 64 bits")
    sample_format = SampleFormat(channels, rate, bits, tag == _FLOAT)
    if channels == 0 or block_align != sample_format.block_align:
        raise CorruptMedia("the WAV fmt chunk's channels and block size disagree")
    return sample_format


def decode_pcm(payload: bytes | memoryview, sample_format: SampleFormat, frames: int) -> np.ndarray:
    """The first `frames` frames of a data chunk as float64 (frames, channels) in [-1, 1]."""
    import numpy as np

    raw = np.frombuffer(payload, dtype=np.uint8, count=frames * sample_format.block_align)
    bits = sample_format.bits
    if sample_format.is_float:
        values = raw.view("<f4" if bits == 32 else "<f8").astype(np.float64)
        values = np.clip(np.nan_to_num(values, nan=0.0, posinf=1.0, neginf=-1.0), -1.0, 1.0)
    elif bits == 8:
        values = (raw.astype(np.float64) - 128.0) / 128.0  # 8-bit WAV is unsigned, centred on 128
    elif bits == 24:
        triples = raw.reshape(-1, 3).astype(np.int32)
        values = pcm.to_float((triples[:, 0] | triples[:, 1] << 8 | triples[:, 2] << 16) << 8 >> 8, 24)
    else:
        values = pcm.to_float(raw.view("<i2" if bits == 16 else "<i4"), bits)
    return values.reshape(frames, sample_format.channels)


def encode_pcm(samples: np.ndarray, sample_format: SampleFormat) -> bytes:
    """Samples as the payload of a data chunk in `sample_format` (the inverse of decode_pcm)."""
    import numpy as np

    bits = sample_format.bits
    if sample_format.is_float:
        return samples.astype("<f4" if bits == 32 else "<f8").tobytes()
    values = pcm.to_int(samples, bits).ravel()
    if bits == 8:
        return (values + 128).astype(np.uint8).tobytes()
    if bits == 24:
        return values.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    return values.astype("<i2" if bits == 16 else "<i4").tobytes()


def _is_ours(chunk: Chunk) -> bool:
    """Our token's chunk, or our disclosure's LIST/INFO (the one holding an ISVC field)."""
    if chunk.fourcc == TOKEN_CHUNK:
        return True
    if chunk.fourcc != b"LIST" or chunk.head(4) != b"INFO":
        return False
    try:
        return any(field.fourcc == OUR_INFO_FIELD for field in riff.chunks(chunk.payload_view, 4, chunk.size, FORM))
    except CorruptMedia:  # a malformed LIST of the file's own: not ours, kept as it is
        return False


def _info_chunk(token: bytes, disclosure: Disclosure) -> Chunk:
    fields = disclosure.fields()
    software = " ".join(part for part in (fields.get("system_name"), fields.get("system_version")) if part)
    values = [(b"ISRF", fields.get("source_type")), (b"ISRC", fields.get("provider_name")), (b"ISFT", software),
              (b"ICRD", fields.get("created")), (b"ICMT", f"identifier {fields['identifier']}"
                                                  if fields.get("identifier") else None)]
    body = b"INFO"
    for field, value in [*values, (OUR_INFO_FIELD, token.decode("ascii"))]:
        if value:
            text = value.encode("utf-8") + b"\x00"  # INFO values are NUL-terminated strings
            body += make_chunk(field, text).raw
    return make_chunk(b"LIST", body)


class WavCodec(AudioCodec):
    format = "wav"
    mime_type = "audio/wav"
    discloses_in_metadata = True  # a LIST/INFO chunk of ours after the token's (OUR_INFO_FIELD)

    def score(self, head: bytes) -> int:
        """SCORE_MAGIC for RIFF/WAVE (and RF64/BW64, which `parse` refuses by name)."""
        if head[:4] in (b"RIFF", *_LARGE_RIFF) and head[8:12] == b"WAVE":
            return SCORE_MAGIC
        return SCORE_NONE

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in a `C2PA` chunk; the C2PA package is imported when a manifest is first met."""
        from media_codecs.c2pa.carriers.riff import WAV_CARRIER

        return WAV_CARRIER

    def parse(self, data: bytes) -> WavFile:
        return parse_wav(data)

    def stream_info(self, container: WavFile) -> StreamInfo:
        fmt = container.format
        return StreamInfo(fmt.sample_rate, fmt.channels, container.frames, fmt.bits)

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `token` in an `svct` chunk before `data`, replacing ours, and the disclosure in a LIST/INFO chunk
        of ours after it (OUR_INFO_FIELD). Raises CodecError, ValueError."""
        payload = check_token(token)
        wav = self.media(content).container
        chunks = [chunk for chunk in wav.chunks if not _is_ours(chunk)]
        data_index = next(i for i, chunk in enumerate(chunks) if chunk.fourcc == b"data")
        ours = [make_chunk(TOKEN_CHUNK, payload)]
        if disclosure is not None:
            ours.append(_info_chunk(payload, disclosure))
        chunks[data_index:data_index] = ours
        return assemble(chunks, wav.trailer)

    def extract_token(self, content: bytes | Media) -> str | None:
        """The first `svct` chunk's text. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        wav = self.media(content).container
        chunk = next((chunk for chunk in wav.chunks if chunk.fourcc == TOKEN_CHUNK), None)
        if chunk is None:
            return None
        try:
            return chunk.payload.decode("ascii") or None
        except UnicodeDecodeError:
            raise CorruptMedia("the WAV token chunk is not ASCII") from None

    def strip_token(self, content: bytes | Media) -> bytes:
        """The file without any `svct` chunk or C2PA manifest store (`C2PA`, the other container a signed
        WAV may gain), rebuilt with valid sizes and pad bytes."""
        wav = self.media(content).container
        return assemble([chunk for chunk in wav.chunks if not _is_ours(chunk) and chunk.fourcc != riff.C2PA_CHUNK],
                        wav.trailer)

    def decode(self, media: Media) -> np.ndarray:
        wav = media.container
        sound = next(chunk for chunk in wav.chunks if chunk.fourcc == b"data")
        return decode_pcm(sound.payload_view, wav.format, wav.frames)

    def decode_window(self, media: Media, start: int, frames: int) -> np.ndarray:
        """Only those frames' bytes of the data chunk are converted."""
        wav = media.container
        sound = next(chunk for chunk in wav.chunks if chunk.fourcc == b"data")
        block = wav.format.block_align
        return decode_pcm(sound.payload_view[start * block : (start + frames) * block], wav.format, frames)

    def decode_blocks(self, media: Media) -> Iterator[np.ndarray]:
        """The data chunk converted BLOCK_FRAMES frames at a time."""
        for start in range(0, media.container.frames, BLOCK_FRAMES):
            yield self.decode_window(media, start, min(BLOCK_FRAMES, media.container.frames - start))

    def encode_blocks(self, media: Media, blocks: Iterable[np.ndarray]) -> bytes:
        """The same sample format and chunks with a new `data` payload (and `fact` sample count), written
        into one buffer as the blocks come: the file's bytes are the only full-length copy."""
        wav = media.container
        out = io.BytesIO()
        out.write(riff.header(FORM.form_type, 0))
        frames, patches = 0, []  # (where, what to write there) once the frame count is known
        for chunk in wav.chunks:
            if chunk.fourcc == b"data":
                out.write(b"data\0\0\0\0")
                size_at = out.tell() - 4
                for block in blocks:
                    out.write(encode_pcm(block, wav.format))
                    frames += len(block)
                size = frames * wav.format.block_align
                out.write(b"\0" * (size % 2))
                patches.append((size_at, size))
            else:
                if chunk.fourcc == b"fact" and chunk.size >= 4:  # dwSampleLength: frames per channel
                    patches.append((out.tell() + 8, None))
                out.write(chunk.padded)
        out.write(wav.trailer)
        patches.append((riff.SIZE_AT, out.tell() - 8))
        for where, value in patches:
            out.seek(where)
            out.write((frames if value is None else value).to_bytes(4, "little"))
        return out.getvalue()  # BytesIO hands over its buffer without copying it


CODEC = WavCodec()
