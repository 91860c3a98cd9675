"""Hostile uploads: files built to cost the server time or memory, for tests and bench/hostile.py.

Each builder returns real, well-formed-looking bytes (valid signatures, correct CRCs and lengths)
whose structure or declared size is the attack: millions of empty segments or chunks, a few
kilobytes that declare tens of megapixels, more progressive scans than any encoder writes.
"""

import io
import struct
import zlib

from PIL import Image

MB = 1024 * 1024


def _small_image(fmt: str, size: tuple[int, int] = (64, 48), **options) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, (120, 160, 200)).save(buffer, fmt, **options)
    return buffer.getvalue()


def jpeg_with_empty_comments(total_bytes: int) -> bytes:
    """A small JPEG with ~total_bytes/4 empty COM segments (FF FE 00 02) before its first marker."""
    jpeg = _small_image("JPEG")
    count = max(0, (total_bytes - len(jpeg)) // 4)
    return jpeg[:2] + b"\xff\xfe\x00\x02" * count + jpeg[2:]


def png_with_empty_chunks(total_bytes: int) -> bytes:
    """A small PNG with ~total_bytes/12 empty, CRC-correct, safe-to-copy ancillary chunks after IHDR."""
    png = _small_image("PNG")
    chunk = b"\x00\x00\x00\x00" + b"zzZz" + zlib.crc32(b"zzZz").to_bytes(4, "big")
    count = max(0, (total_bytes - len(png)) // len(chunk))
    ihdr_end = 8 + 25
    return png[:ihdr_end] + chunk * count + png[ihdr_end:]


def webp_with_empty_chunks(total_bytes: int) -> bytes:
    """A small extended WebP followed by ~total_bytes/8 empty unknown RIFF chunks."""
    webp = _small_image("WEBP", quality=80)
    body = webp[12:]
    count = max(0, (total_bytes - len(webp)) // 8)
    body += b"ZZZZ\x00\x00\x00\x00" * count
    return b"RIFF" + (len(body) + 4).to_bytes(4, "little") + b"WEBP" + body


def pixel_bomb(fmt: str, width: int = 7000, height: int = 7000) -> bytes:
    """A flat image of width x height pixels: a few kilobytes that decode to width*height*3 bytes or more."""
    options = {"lossless": True} if fmt == "WEBP" else {"optimize": True} if fmt == "PNG" else {"quality": 50}
    buffer = io.BytesIO()
    Image.new("L" if fmt == "PNG" else "RGB", (width, height), 128).save(buffer, fmt, **options)
    return buffer.getvalue()


def png_declaring(width: int, height: int) -> bytes:
    """A PNG whose IHDR declares width x height with one tiny IDAT: a header-only pixel claim."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def jpeg_with_many_scans(scans: int, side: int = 2048) -> bytes:
    """A progressive JPEG whose scan list is repeated: every extra scan makes the decoder walk the image again.

    The first full progressive scan script is kept, then its last (AC refinement) scan is appended
    `scans` times; each is a valid, nearly empty scan over every block.
    """
    buffer = io.BytesIO()
    Image.new("L", (side, side), 100).save(buffer, "JPEG", progressive=True, quality=90)
    data = buffer.getvalue()
    last_sos = data.rfind(b"\xff\xda")
    eoi = data.rfind(b"\xff\xd9")
    return data[:eoi] + data[last_sos:eoi] * scans + data[eoi:]


def duplicate_ihdr_png() -> bytes:
    """A PNG with a second IHDR chunk right after the first."""
    png = _small_image("PNG")
    ihdr = png[8:33]
    return png[:33] + ihdr + png[33:]


def duplicate_sof_jpeg() -> bytes:
    """A JPEG with its frame header (SOF) repeated."""
    jpeg = _small_image("JPEG")
    start = jpeg.find(b"\xff\xc0")
    length = int.from_bytes(jpeg[start + 2 : start + 4], "big")
    sof = jpeg[start : start + 2 + length]
    return jpeg[: start + 2 + length] + sof + jpeg[start + 2 + length :]


def photo_like(fmt: str, megapixels: float, mode: str = "RGB") -> bytes:
    """A 4:3 image of smooth random texture (upsampled noise): costly to encode, like a photograph."""
    import numpy as np

    width = int((megapixels * 1e6 * 4 / 3) ** 0.5)
    height = int(megapixels * 1e6) // width
    channels = len(mode)
    noise = np.random.default_rng(7).integers(0, 256, (height // 8 + 1, width // 8 + 1, channels), dtype=np.uint8)
    image = Image.fromarray(noise if channels > 1 else noise[..., 0]).resize((width, height), Image.Resampling.BILINEAR)
    buffer = io.BytesIO()
    options = {"quality": 90} if fmt in ("JPEG", "WEBP") else {}
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


# --- audio: headers whose declared duration, counts or sizes are the attack -------------------------

def _riff_wave(*chunks: bytes) -> bytes:
    body = b"WAVE" + b"".join(chunks)
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def _wav_fmt(channels: int, rate: int, bits: int) -> bytes:
    block = channels * bits // 8
    payload = struct.pack("<HHIIHH", 1, channels, rate, rate * block, block, bits)
    return b"fmt " + len(payload).to_bytes(4, "little") + payload


def wav_longer_than(seconds: int) -> bytes:
    """A real 8 kHz mono 8-bit WAV of `seconds` of silence (8 KB a second)."""
    samples = b"\x80" * (8_000 * seconds)
    return _riff_wave(_wav_fmt(1, 8_000, 8), b"data" + len(samples).to_bytes(4, "little") + samples)


def wav_with_empty_chunks(count: int) -> bytes:
    """A tiny WAV with `count` empty unknown chunks before its data."""
    return _riff_wave(_wav_fmt(1, 8_000, 8), b"zzzz\x00\x00\x00\x00" * count, b"data\x02\x00\x00\x00\x80\x80")


def flac_declaring(*, total_samples: int, sample_rate: int = 44_100, channels: int = 2, bits: int = 16) -> bytes:
    """A FLAC header (STREAMINFO only) declaring `total_samples`, followed by one frame-sync'd byte run."""
    packed = sample_rate << 44 | (channels - 1) << 41 | (bits - 1) << 36 | total_samples
    streaminfo = struct.pack(">HH", 4096, 4096) + bytes(6) + packed.to_bytes(8, "big") + bytes(16)
    return b"fLaC" + b"\x80" + len(streaminfo).to_bytes(3, "big") + streaminfo + b"\xff\xf8" + bytes(64)


def flac_with_empty_blocks(count: int) -> bytes:
    """A FLAC header followed by `count` empty PADDING blocks."""
    header = flac_declaring(total_samples=44_100)
    streaminfo = b"\x00" + header[5:42]
    return b"fLaC" + streaminfo + b"\x01\x00\x00\x00" * (count - 1) + b"\x81\x00\x00\x00" + header[42:]


def mp3_frames(count: int, *, bitrate_index: int = 9, layer_bits: int = 0b01) -> bytes:
    """`count` silent MPEG-1 frames at 44.1 kHz, joint stereo (Layer III, 128 kbps by default)."""
    header = 0xFFE00000 | 0b11 << 19 | layer_bits << 17 | 1 << 16 | bitrate_index << 12 | 0b01 << 6
    kbps = (0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320)[bitrate_index]
    length = 144 * kbps * 1000 // 44_100
    return (header.to_bytes(4, "big") + bytes(length - 4)) * count


def mp3_smallest_frames(total_bytes: int) -> bytes:
    """MPEG-2.5 Layer III frames at 8 kbps and 8 kHz (72 bytes for 72 ms): the most audio per byte."""
    header = 0xFFE00000 | 0b01 << 17 | 1 << 16 | 1 << 12 | 0b10 << 10 | 0b11 << 6
    return (header.to_bytes(4, "big") + bytes(68)) * (total_bytes // 72)


def mp3_with_xing_frames(declared: int) -> bytes:
    """Three real frames whose Xing header declares `declared` frames (about 26 ms each)."""
    info = bytearray(mp3_frames(1))
    info[36:48] = b"Xing" + (1).to_bytes(4, "big") + declared.to_bytes(4, "big")
    return bytes(info) + mp3_frames(2)


def id3_tag_only(payload_bytes: int = 1000) -> bytes:
    """An ID3v2.4 tag (one TXXX frame and padding) with no audio behind it."""
    frame_data = b"\x00note\x00" + b"x" * 10
    frame = b"TXXX" + _syncsafe(len(frame_data)) + b"\x00\x00" + frame_data
    body = frame + bytes(payload_bytes)
    return b"ID3\x04\x00\x00" + _syncsafe(len(body)) + body


def id3_with_empty_frames(count: int) -> bytes:
    """An ID3v2.3 tag of `count` empty TXXX frames in front of real frames."""
    body = b"TXXX\x00\x00\x00\x00\x00\x00" * count
    return b"ID3\x03\x00\x00" + _syncsafe(len(body)) + body + mp3_frames(4)


def _syncsafe(value: int) -> bytes:
    return bytes([value >> 21 & 0x7F, value >> 14 & 0x7F, value >> 7 & 0x7F, value & 0x7F])


def wav_of_noise(total_bytes: int, *, channels: int = 2, rate: int = 44_100, bits: int = 16) -> bytes:
    """A WAV of `total_bytes` of quiet noise: the most samples a 50 MB upload can hold at that layout."""
    import numpy as np

    block = channels * bits // 8
    frames = (total_bytes - 64) // block
    rng = np.random.default_rng(3)
    if bits == 8:
        payload = (128 + rng.integers(-20, 20, frames * channels)).astype(np.uint8).tobytes()
    else:
        payload = rng.integers(-3000, 3000, frames * channels, dtype=np.int16).tobytes()
    return _riff_wave(_wav_fmt(channels, rate, bits), b"data" + len(payload).to_bytes(4, "little") + payload)


# --- video -----------------------------------------------------------------------------------------
# Built from a real clip by patching the field under attack; boxes and elements are located with the
# codec's own readers (the attack is in the values, not in how they are found).


def _bmff_path(data: bytes, path: tuple[bytes, ...]):
    from media_codecs.video import bmff

    boxes, box = bmff.read_boxes(data, 0, len(data), top_level=True, limit=10_000), None
    for kind in path:
        if box is not None:
            boxes = bmff.read_boxes(data, box.payload_start, box.end, top_level=False, limit=10_000)
        box = bmff.find(boxes, kind)[0]
    return box


def _resized(data: bytes, box, payload: bytes) -> bytes:
    """`data` with `box` (8-byte header) given a new payload; only for the last top-level box or its children's
    parents that are last, as moov is in a non-faststart MP4."""
    return data[: box.start] + (8 + len(payload)).to_bytes(4, "big") + data[box.start + 4 : box.start + 8] + payload


def mp4_with_moov_payload(data: bytes, extra: bytes) -> bytes:
    """A non-faststart MP4 (moov last) with `extra` bytes of boxes added at the end of moov."""
    moov = _bmff_path(data, (b"moov",))
    assert moov.end == len(data)
    return _resized(data, moov, data[moov.payload_start : moov.end] + extra)


def mp4_with_streams(data: bytes, count: int) -> bytes:
    """An MP4 whose moov holds `count` copies of its first track."""
    trak = _bmff_path(data, (b"moov", b"trak"))
    return mp4_with_moov_payload(data, data[trak.start : trak.end] * (count - 1))


def mp4_nested(data: bytes, depth: int) -> bytes:
    """An MP4 whose moov also holds `depth` trak boxes nested in one another."""
    nested = b""
    for _ in range(depth):
        nested = (8 + len(nested)).to_bytes(4, "big") + b"trak" + nested
    return mp4_with_moov_payload(data, nested)


def mp4_patched(data: bytes, path: tuple[bytes, ...], offset: int, value: bytes) -> bytes:
    """`data` with `value` written at `offset` into the payload of the box at `path`."""
    box = _bmff_path(data, path)
    position = box.payload_start + offset
    return data[:position] + value + data[position + len(value) :]


def mp4_declaring_size(data: bytes, width: int, height: int) -> bytes:
    """The first video sample entry declares width x height (the bitstream is unchanged)."""
    return mp4_patched(data, (b"moov", b"trak", b"mdia", b"minf", b"stbl", b"stsd"), 8 + 32,
                       width.to_bytes(2, "big") + height.to_bytes(2, "big"))


def mp4_declaring_seconds(data: bytes, seconds: int) -> bytes:
    """mvhd (version 0) declares `seconds` of duration."""
    box = _bmff_path(data, (b"moov", b"mvhd"))
    timescale = int.from_bytes(data[box.payload_start + 12 : box.payload_start + 16], "big")
    return mp4_patched(data, (b"moov", b"mvhd"), 16, (seconds * timescale).to_bytes(4, "big"))


def box(kind: bytes, payload: bytes = b"") -> bytes:
    return (8 + len(payload)).to_bytes(4, "big") + kind + payload


def _ebml_path(data: bytes, path: tuple[int, ...]):
    from media_codecs.video import ebml

    elements, element = ebml.read_elements(data, 0, len(data), 1_000), None
    for element_id in path:
        if element is not None:
            elements = ebml.read_elements(data, element.data_start, element.end, 100_000)
        element = next(e for e in elements if e.id == element_id)
    return element


SEGMENT, TRACKS, TRACK_ENTRY, VIDEO, PIXEL_WIDTH = 0x18538067, 0x1654AE6B, 0xAE, 0xE0, 0xB0
INFO, DURATION = 0x1549A966, 0x4489


def mkv_with_segment_size(data: bytes, size_field: bytes) -> bytes:
    """A Matroska file whose Segment size field (8 bytes in FFmpeg's output) is replaced."""
    segment = _ebml_path(data, (SEGMENT,))
    assert segment.data_start - segment.start == 12
    return data[: segment.start + 4] + size_field + data[segment.data_start :]


def mkv_patched(data: bytes, path: tuple[int, ...], value: bytes) -> bytes:
    """`data` with the value of the element at `path` replaced by one of the same length."""
    element = _ebml_path(data, path)
    assert element.end - element.data_start == len(value)
    return data[: element.data_start] + value + data[element.end :]


def mkv_declaring_width(data: bytes, width: int) -> bytes:
    element = _ebml_path(data, (SEGMENT, TRACKS, TRACK_ENTRY, VIDEO, PIXEL_WIDTH))
    return mkv_patched(data, (SEGMENT, TRACKS, TRACK_ENTRY, VIDEO, PIXEL_WIDTH),
                       width.to_bytes(element.end - element.data_start, "big"))


def mkv_declaring_seconds(data: bytes, seconds: float) -> bytes:
    element = _ebml_path(data, (SEGMENT, INFO, DURATION))
    layout = ">f" if element.end - element.data_start == 4 else ">d"
    return mkv_patched(data, (SEGMENT, INFO, DURATION), struct.pack(layout, seconds * 1000))  # default ms ticks


def mkv_with_tracks(data: bytes, count: int) -> bytes:
    """A Matroska file whose Tracks holds `count` copies of its first TrackEntry (Segment size rewritten)."""
    segment, tracks = _ebml_path(data, (SEGMENT,)), _ebml_path(data, (SEGMENT, TRACKS))
    entry = _ebml_path(data, (SEGMENT, TRACKS, TRACK_ENTRY))
    body = data[tracks.data_start : tracks.end] + data[entry.start : entry.end] * (count - 1)
    new_tracks = data[tracks.start : tracks.start + 4] + (len(body) | 1 << 56).to_bytes(8, "big") + body
    content = data[segment.data_start : tracks.start] + new_tracks + data[tracks.end : segment.end]
    return (data[: segment.start + 4] + (len(content) | 1 << 56).to_bytes(8, "big") + content
            + data[segment.end :])


def _music_blocks(seconds: float, rate: int = 44_100):
    """Stereo music-like float32 blocks of one second: plucked harmonic notes, a new one every 0.4 s,
    over a quiet noise bed (compresses like real music, about 60% in FLAC)."""
    import numpy as np

    rng = np.random.default_rng(11)
    roots = 110.0 * 2 ** (rng.integers(0, 24, int(seconds / 0.4) + 2) / 12)
    for start in range(0, int(seconds * rate), rate):
        t = (start + np.arange(min(rate, int(seconds * rate) - start))) / rate
        note, phase = (t // 0.4).astype(int), t % 0.4
        out = 0.01 * rng.standard_normal(len(t))
        for k in range(1, 9):
            out += np.exp(-5 * phase) * np.sin(2 * np.pi * k * roots[note] * t) / k
        out *= 0.3
        yield np.stack([out, 0.8 * out + 0.005 * rng.standard_normal(len(t))], axis=1).astype(np.float32)


def music_flac(seconds: float, *, rate: int = 44_100) -> bytes:
    """A 16-bit stereo FLAC of `seconds` of music-like audio (a realistic song, not a bomb)."""
    import soundfile

    buffer = io.BytesIO()
    with soundfile.SoundFile(buffer, "w", rate, 2, "PCM_16", format="FLAC") as output:
        for block in _music_blocks(seconds, rate):
            output.write(block)
    return buffer.getvalue()


def music_mp3(seconds: float, *, kbps: int = 192, rate: int = 44_100) -> bytes:
    """A joint-stereo CBR MP3 (LAME through FFmpeg, with its Info frame) of `seconds` of music-like audio."""
    from fractions import Fraction

    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp3", options={"id3v2_version": "0", "write_id3v1": "0"}) as output:
        stream = output.add_stream("libmp3lame", rate=rate, layout="stereo")
        stream.bit_rate = kbps * 1000
        position = 0
        for block in _music_blocks(seconds, rate):
            frame = av.AudioFrame.from_ndarray(block.T.copy(), format="fltp", layout="stereo")
            frame.sample_rate, frame.pts, frame.time_base = rate, position, Fraction(1, rate)
            position += len(block)
            output.mux(stream.encode(frame))
        output.mux(stream.encode(None))
    return buffer.getvalue()
