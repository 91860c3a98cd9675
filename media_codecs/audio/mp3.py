"""MP3: the token in an ID3v2 TXXX frame with the description `svc_token`.

Token rule: `embed_token` removes every plain TXXX frame described `svc_token` (in any text
encoding, any case) from the ID3v2 tag at the start of the file and appends ours (ISO-8859-1,
no flags) after the tag's last frame; a file without a tag gets a new ID3v2.4 tag holding only
that frame, without padding. `strip_token` removes those frames and a C2PA manifest store (a GEOB
frame of type `application/c2pa`, media_codecs/c2pa/carriers/mp3.py), and the whole tag when no frame
is left in it. The tag keeps its version, flags, extended header, padding and every other frame
(APIC, TIT2, COMM...) byte for byte; everything after it (further tags, the Xing/LAME info frame,
the audio, an APEv2 or ID3v1 tag at the end) is never touched. id3.py lists the tag edge cases.

Detection: an ID3v2 header at offset 0, or two consecutive valid Layer III frame headers there.
Limits, checked while parsing: an ID3v2 tag must end within the file and be followed (within
64 KB) by two consecutive frames; the duration comes from the Xing/VBRI frame count or a bounded
header scan (mpeg.py). Layer I/II audio and a FLAC behind an ID3 tag are UnsupportedFormat.
Decoding (libsndfile's mpg123) gets the audio frames alone, and stops past the decoding limit.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from media_codecs.audio import id3, mpeg
from media_codecs.audio.base import (
    BLOCK_FRAMES,
    MAX_DECODED_SAMPLES,
    MAX_SECONDS,
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

# Marking re-encodes: at or above this bitrate a channel the second encoding is near transparent, below it
# the generation loss dominates (docs/decisions.md, "Audio watermark"); such MP3s carry the token alone.
MIN_MARKED_BITRATE_PER_CHANNEL = 64_000
_MAX_LEADING_TAGS = 8  # further ID3v2 tags some taggers stack behind the first: kept, not read
_LAME_CRC_OFFSET = 34  # the LAME tag's "CRC-16 of Info Tag", over every frame byte before it


@dataclass(frozen=True)
class Mp3File:
    tag: id3.Tag | None
    tag_raw: bytes | memoryview  # the first ID3v2 tag as read (empty without one)
    audio: bytes | memoryview  # everything after it
    stream_start: int  # where, in `audio`, the first frame (Xing/Info frame included) starts
    trailer: int  # bytes of ID3v1/APEv2 tags at the end of `audio`
    stream: mpeg.Stream


def parse_mp3(data: bytes) -> Mp3File:
    """Split an MP3 into its leading ID3v2 tag and the rest, and describe the stream.

    Raises UnsupportedFormat (not an MP3, ID3v2.2, Layer I/II, FLAC), CorruptMedia, MediaTooLarge.
    """
    view = memoryview(data)
    length = id3.tag_length(data[: id3.HEADER_BYTES])
    if length is None and not mpeg.starts_stream(view, 0):
        raise UnsupportedFormat("not an MP3 file")
    tag = None if length is None else id3.parse_tag(view[:length])
    audio = view[length or 0 :]
    if bytes(audio[:4]) == b"fLaC":
        raise UnsupportedFormat("a FLAC file with an ID3v2 tag in front is not supported")
    start = _after_leading_tags(audio)
    start = mpeg.find_stream(audio, start)
    trailer = mpeg.trailer_length(audio)
    stream = mpeg.read_stream(audio, start, len(audio) - trailer)
    return Mp3File(tag, view[: length or 0], audio, start, trailer, stream)


def _after_leading_tags(audio: memoryview) -> int:
    position = 0
    for _ in range(_MAX_LEADING_TAGS):
        length = id3.tag_length(bytes(audio[position : position + id3.HEADER_BYTES]))
        if length is None:
            break
        position += length
    return position


# The disclosure's TXXX frames, written after the token's and removed with it (Disclosure.fields() name ->
# the frame's description).
DISCLOSURE_DESCRIPTIONS = {"source_type": "svc_digital_source_type", "provider_name": "svc_provider",
                           "system_name": "svc_system", "system_version": "svc_system_version",
                           "created": "svc_created", "identifier": "svc_identifier"}
_OUR_DESCRIPTIONS = frozenset({TOKEN_DESCRIPTION, *DISCLOSURE_DESCRIPTIONS.values()})


def _is_ours(frame: id3.Frame) -> bool:
    text = id3.user_text(frame)
    return text is not None and text[0].lower() in _OUR_DESCRIPTIONS


def _is_token(frame: id3.Frame) -> bool:
    text = id3.user_text(frame)
    return text is not None and text[0].lower() == TOKEN_DESCRIPTION


def _unhashed(frame: id3.Frame) -> bool:
    """Our token's frame, or a C2PA manifest store's: what the content hash leaves out."""
    return _is_ours(frame) or id3.is_c2pa_store(frame)


class Mp3Codec(AudioCodec):
    format = "mp3"
    mime_type = "audio/mpeg"
    discloses_in_metadata = True  # TXXX frames after the token's (DISCLOSURE_DESCRIPTIONS)

    def score(self, head: bytes) -> int:
        """SCORE_MAGIC for an ID3v2 header (but one a FLAC follows), or two consecutive Layer III frames, at
        offset 0."""
        if head[id3.HEADER_BYTES : id3.HEADER_BYTES + 4] == b"fLaC":  # the registry's head: the tag's header,
            return SCORE_NONE  # then what follows the tag (flac.is_flac_head)
        if id3.tag_length(head[: id3.HEADER_BYTES]) is not None or mpeg.starts_stream(head, 0):
            return SCORE_MAGIC
        return SCORE_NONE

    @property
    def c2pa_carrier(self) -> Carrier:
        """The store travels in a GEOB frame of the ID3v2 tag; the C2PA package is imported when a manifest
        is first met."""
        from media_codecs.c2pa.carriers.mp3 import MP3_CARRIER

        return MP3_CARRIER

    def parse(self, data: bytes) -> Mp3File:
        return parse_mp3(data)

    def stream_info(self, container: Mp3File) -> StreamInfo:
        first = container.stream.first
        return StreamInfo(first.sample_rate, first.channels, container.stream.frames)

    def embed_token(self, content: bytes | Media, token: str, disclosure: Disclosure | None = None) -> bytes:
        """Put `token` in a TXXX frame of the leading ID3v2 tag (created when missing), replacing ours, and the
        disclosure in TXXX frames after it (DISCLOSURE_DESCRIPTIONS), which go with it.

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge; ValueError for a bad token.
        """
        value = check_token(token)
        mp3 = self.media(content).container
        tag = mp3.tag or id3.new_tag()
        frames = [frame for frame in tag.frames if not _is_ours(frame)]
        frames.append(id3.text_frame(tag, TOKEN_DESCRIPTION, value))
        if disclosure is not None:
            frames += [id3.unicode_text_frame(tag, DISCLOSURE_DESCRIPTIONS[name], text)
                       for name, text in disclosure.fields().items()]
        return id3.tag_bytes(id3.with_frames(tag, frames)) + mp3.audio

    def extract_token(self, content: bytes | Media) -> str | None:
        """The first `svc_token` TXXX frame's value. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        tag = self.media(content).container.tag
        texts = (id3.user_text(frame) for frame in tag.frames if _is_token(frame)) if tag else ()
        return next((value for _, value in texts if value), None)

    def strip_token(self, content: bytes | Media) -> bytes:
        """The file without our TXXX frames and any C2PA manifest store (a GEOB frame, the other container a
        signed MP3 may gain), and without the ID3v2 tag when no frame is left in it."""
        media = self.media(content)
        mp3 = media.container
        if mp3.tag is None:
            return media.data
        frames = [frame for frame in mp3.tag.frames if not _unhashed(frame)]
        if not frames:
            return bytes(mp3.audio)
        return id3.tag_bytes(id3.with_frames(mp3.tag, frames)) + mp3.audio

    def watermark_possible(self, content: bytes | Media) -> bool:
        """Long enough, and at least 64 kbps a channel: marking re-encodes the MP3 at its own bitrate and
        mode, and a second encoding below that rate costs audibly more than the mark (docs/decisions.md)."""
        if not super().watermark_possible(content):
            return False
        mp3 = self.media(content).container
        bitrate = _average_bitrate(mp3) if mp3.stream.is_vbr else mp3.stream.first.bitrate
        return bitrate / mp3.stream.first.channels >= MIN_MARKED_BITRATE_PER_CHANNEL

    def decode(self, media: Media) -> np.ndarray:
        """Decode the frames alone with libsndfile (mpg123). Raises CorruptMedia, MediaTooLarge."""
        import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

        first = media.container.stream.first
        frames_allowed = _frames_allowed(first)
        decoder_input = _decoder_input(media)
        try:
            samples, _ = soundfile.read(io.BytesIO(decoder_input), frames=frames_allowed + 1, dtype="float64",
                                        always_2d=True)
        except (soundfile.SoundFileError, RuntimeError) as error:
            raise CorruptMedia(f"the MP3 audio does not decode: {error}") from None
        if len(samples) > frames_allowed:
            raise MediaTooLarge("the MP3 holds more audio than the limits allow")
        if len(samples) == 0 or samples.shape[1] != first.channels:
            raise CorruptMedia("the MP3 audio does not decode")
        return samples

    def decode_window(self, media: Media, start: int, frames: int) -> np.ndarray:
        """libsndfile seeks to `start` and decodes only `frames` frames. Raises CorruptMedia."""
        return libsndfile_window(_decoder_input(media), start, frames, "MP3")

    def decode_blocks(self, media: Media) -> Iterator[np.ndarray]:
        """libsndfile (mpg123) decodes BLOCK_FRAMES frames at a time. Raises CorruptMedia, MediaTooLarge."""
        import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

        first = media.container.stream.first
        frames_allowed, decoded = _frames_allowed(first), 0
        try:
            with soundfile.SoundFile(io.BytesIO(_decoder_input(media))) as decoder:
                if decoder.channels != first.channels:
                    raise CorruptMedia("the MP3 audio does not decode")
                # read() until it comes back empty, not blocks(): that trusts the header's length, which
                # for MP3 counts the encoder delay and padding mpg123 removes
                while len(block := decoder.read(BLOCK_FRAMES, dtype="float64", always_2d=True)):
                    decoded += len(block)
                    if decoded > frames_allowed:
                        raise MediaTooLarge("the MP3 holds more audio than the limits allow")
                    yield block
        except (soundfile.SoundFileError, RuntimeError) as error:
            raise CorruptMedia(f"the MP3 audio does not decode: {error}") from None
        if decoded == 0:
            raise CorruptMedia("the MP3 audio does not decode")

    def encode_blocks(self, media: Media, blocks: Iterable[np.ndarray]) -> bytes:
        """MP3 at the input's rate, channel mode and bitrate (CBR; ABR at the average for VBR input),
        with the ID3 tags and anything else around the audio put back.

        Raises UnsupportedFormat when the encoder refuses.
        """
        mp3 = media.container
        first = mp3.stream.first
        is_vbr = mp3.stream.is_vbr
        bitrate = _average_bitrate(mp3) if is_vbr else first.bitrate
        encoded = _set_info_mode(_encode(blocks, first, bitrate, is_vbr=is_vbr), first.mode)
        trailer = mp3.audio[len(mp3.audio) - mp3.trailer :]
        return b"".join([mp3.tag_raw, mp3.audio[: mp3.stream_start], encoded, trailer])


def _frames_allowed(first: mpeg.FrameHeader) -> int:
    """The most frames a decode may give: the decoding limit, or 20 minutes and one MPEG frame."""
    return min(MAX_DECODED_SAMPLES // first.channels, MAX_SECONDS * first.sample_rate + first.samples)


def _average_bitrate(mp3: Mp3File) -> int:
    audio_bytes = len(mp3.audio) - mp3.trailer - mp3.stream_start
    return max(8_000, audio_bytes * 8 * mp3.stream.first.sample_rate // max(1, mp3.stream.frames))


def _encode(blocks: Iterable[np.ndarray], first: mpeg.FrameHeader, bitrate: int, *, is_vbr: bool) -> bytes:
    """LAME through PyAV's MP3 muxer, which writes the Xing/LAME info frame (gapless playback); the
    blocks go to the encoder one frame each, as they come."""
    import av  # loaded on first use: a worker that never decodes audio does not carry it
    import numpy as np

    layout = "mono" if first.channels == 1 else "stereo"
    time_base = Fraction(1, first.sample_rate)
    buffer = io.BytesIO()
    try:
        with av.open(buffer, "w", format="mp3", options={"id3v2_version": "0", "write_id3v1": "0"}) as output:
            stream = output.add_stream("libmp3lame", rate=first.sample_rate, layout=layout)
            stream.bit_rate = bitrate
            stream.codec_context.options = {"joint_stereo": "1" if first.mode == mpeg.JOINT_STEREO else "0",
                                            "abr": "1" if is_vbr else "0"}
            position = 0
            for samples in blocks:
                frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples.T, dtype=np.float32),
                                                   format="fltp", layout=layout)
                frame.sample_rate, frame.pts, frame.time_base = first.sample_rate, position, time_base
                position += len(samples)
                output.mux(stream.encode(frame))
            output.mux(stream.encode(None))
    except (av.FFmpegError, ValueError) as error:
        raise UnsupportedFormat(f"the MP3 encoder refused the audio: {error}") from None
    return buffer.getvalue()


def _set_info_mode(encoded: bytes, mode: int) -> bytes:
    """Give the info frame the audio's channel mode (FFmpeg writes stereo, so mutagen would report it)
    and keep the LAME tag's CRC right. Stereo and joint stereo share the frame layout."""
    header = mpeg.frame_header(encoded, 0)
    if header is None or header.mode == mode or mode not in (mpeg.STEREO, mpeg.JOINT_STEREO):
        return encoded
    frame = bytearray(encoded[: header.length])
    frame[3] = frame[3] & 0x0F | mode << 6  # mode and mode extension bits
    crc_at = _lame_crc_offset(bytes(frame), header)
    if crc_at is not None:
        frame[crc_at : crc_at + 2] = _crc16(bytes(frame[:crc_at])).to_bytes(2, "big")
    return bytes(frame) + encoded[header.length :]


def _lame_crc_offset(frame: bytes, header: mpeg.FrameHeader) -> int | None:
    """Where the LAME tag's CRC sits, when the frame has a Xing/Info header followed by a valid LAME tag."""
    offset = 4 + header.side_info_bytes
    if frame[offset : offset + 4] not in (b"Xing", b"Info"):
        return None
    flags = int.from_bytes(frame[offset + 4 : offset + 8], "big")
    lame = offset + 8 + 4 * (flags & 1) + 4 * (flags >> 1 & 1) + 100 * (flags >> 2 & 1) + 4 * (flags >> 3 & 1)
    crc_at = lame + _LAME_CRC_OFFSET
    if crc_at + 2 > len(frame) or frame[crc_at : crc_at + 2] != _crc16(frame[:crc_at]).to_bytes(2, "big"):
        return None
    return crc_at


def _crc16(data: bytes) -> int:
    """CRC-16/ARC (reflected polynomial 0xA001), as the LAME tag uses."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = crc >> 1 ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def _decoder_input(media: Media) -> bytes:
    """The MPEG frames alone: no tag reaches the decoder."""
    mp3 = media.container
    return bytes(mp3.audio[mp3.stream_start : len(mp3.audio) - mp3.trailer])


CODEC = Mp3Codec()
