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


# --- every family: truncated and empty files, polyglots, bombs ---------------------------------------
# One valid sample per format (made here, small), then the attacks built from it. FAMILY_CASES at the
# end is the one table: tests/verification/test_hostile_families.py runs it against a live server and
# bench/hostile.py --families prints it.

import functools  # noqa: E402

FORMATS = ("jpeg", "png", "webp", "wav", "flac", "mp3", "text", "html", "pdf", "mp4", "mov", "mkv", "webm")
FILE_NAMES = {"jpeg": ("photo.jpg", "image/jpeg"), "png": ("image.png", "image/png"),
              "webp": ("image.webp", "image/webp"), "wav": ("sound.wav", "audio/wav"),
              "flac": ("sound.flac", "audio/flac"), "mp3": ("sound.mp3", "audio/mpeg"),
              "text": ("story.txt", "text/plain"), "html": ("page.html", "text/html"),
              "pdf": ("paper.pdf", "application/pdf"), "mp4": ("clip.mp4", "video/mp4"),
              "mov": ("clip.mov", "video/quicktime"), "mkv": ("clip.mkv", "video/x-matroska"),
              "webm": ("clip.webm", "video/webm")}


@functools.cache
def sample(fmt: str) -> bytes:
    """A small valid file of `fmt` that the service signs."""
    if fmt in ("jpeg", "png", "webp"):
        return _small_image(fmt.upper(), (256, 192), **({"quality": 85} if fmt != "png" else {}))
    if fmt in ("wav", "flac", "mp3"):
        from tests import audio

        samples = audio.tone(2.0)
        return {"wav": audio.wav_bytes, "flac": audio.flac_bytes, "mp3": audio.ffmpeg_mp3}[fmt](samples)
    if fmt == "text":
        return ("Provenance is the record of where a thing came from and who has held it since. " * 8).encode()
    if fmt == "html":
        return (b"<!DOCTYPE html><html><head><title>Note</title></head><body><p>"
                + b"A page written for the hostile-input tests. " * 8 + b"</p></body></html>")
    if fmt == "pdf":
        from tests.pdf_samples import text_pdf

        return text_pdf()
    from tests import video

    return video.make_video(fmt, size=(160, 120), seconds=1.0, fps=10)


def truncated(fmt: str, fraction: float) -> bytes:
    data = sample(fmt)
    return data[: max(1, int(len(data) * fraction))]


def header_only(fmt: str, size: int = 16) -> bytes:
    return sample(fmt)[:size]


# polyglots: each file is valid in two formats at once

def _zip_of(name: str, payload: bytes) -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, payload)
    return buffer.getvalue()


def jpeg_zip_polyglot() -> bytes:
    """A JPEG with a ZIP appended: image viewers read the JPEG, unzip finds its central directory at the end."""
    return sample("jpeg") + _zip_of("payload.html", b"<script>alert(1)</script>")


def jpeg_pdf_polyglot() -> bytes:
    """A JPEG whose first comment segment opens a PDF (header in the first 1,024 bytes), the rest of the PDF
    after the image's EOI: a PDF reader and an image viewer each see their own file."""
    pdf = sample("pdf")
    comment = pdf[:9] + b"\n%\xe2\xe3\xcf\xd3\n"
    jpeg = sample("jpeg")
    return jpeg[:2] + b"\xff\xfe" + (len(comment) + 2).to_bytes(2, "big") + comment + jpeg[2:] + pdf[9:]


def jpeg_html_polyglot() -> bytes:
    """A JPEG whose comment segment is an HTML document with a script, and more HTML after EOI."""
    html = b"<html><body><script>document.title='polyglot'</script>"
    jpeg = sample("jpeg")
    return jpeg[:2] + b"\xff\xfe" + (len(html) + 2).to_bytes(2, "big") + html + jpeg[2:] + b"</body></html>"


def png_mp4_polyglot() -> bytes:
    """A PNG followed by a whole MP4 after IEND."""
    return sample("png") + sample("mp4")


def pdf_html_polyglot() -> bytes:
    """A PDF whose first bytes are an HTML page (the PDF header still within 1,024 bytes)."""
    return b"<html><body><script>alert(1)</script></body></html>\n" + sample("pdf")


def wav_zip_polyglot() -> bytes:
    """A WAV with a ZIP appended after its RIFF body."""
    return sample("wav") + _zip_of("a.txt", b"hello")


def mp4_zip_polyglot() -> bytes:
    """An MP4 with a ZIP inside a top-level `free` box (a box any reader skips)."""
    archive = _zip_of("a.txt", b"hello")
    return sample("mp4") + box(b"free", archive)


# decompression bombs: small files that declare or expand to far more than the limits

def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")


@functools.cache
def _deflated_zeros(total: int) -> bytes:
    """The zlib stream of `total` zero bytes (a multiple of 1 MB), built without ever holding or compressing them.

    After a full flush deflate forgets its history, so every further 1 MB of zeros compresses to the same
    bytes: the stream is that unit repeated, the final block, and the Adler-32 of `total` zeros (a = 1,
    b = total mod 65521).
    """
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    unit = compressor.compress(bytes(MB)) + compressor.flush(zlib.Z_FULL_FLUSH)
    end = compressor.flush(zlib.Z_FINISH)
    adler = (total % 65521) << 16 | 1
    return b"\x78\xda" + unit * (total // MB) + end + adler.to_bytes(4, "big")


def png_ztxt_bomb(expanded: int = 1024 * MB) -> bytes:
    """A valid small PNG with a zTXt chunk that inflates to `expanded` bytes."""
    png = sample("png")
    ztxt = _png_chunk(b"zTXt", b"Comment\x00\x00" + _deflated_zeros(expanded))
    return png[:33] + ztxt + png[33:]


def png_iccp_bomb(expanded: int = 1024 * MB) -> bytes:
    """A valid small PNG with an iCCP (colour profile) chunk that inflates to `expanded` bytes."""
    png = sample("png")
    iccp = _png_chunk(b"iCCP", b"icc\x00\x00" + _deflated_zeros(expanded))
    return png[:33] + iccp + png[33:]


def png_idat_bomb(side: int = 50_000) -> bytes:
    """A PNG declaring side x side grey pixels whose IDAT really holds them (~2.5 GB inflated, a few MB)."""
    return _png_chunk_file(side, side, 0, _deflated_zeros(side * (side + 1) // MB * MB))


def _png_chunk_file(width: int, height: int, colour: int, idat: bytes) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", ihdr) + _png_chunk(b"IDAT", idat) + _png_chunk(b"IEND", b"")


def webp_declaring(width: int, height: int) -> bytes:
    """An extended WebP whose VP8X canvas declares width x height around a small real VP8L image."""
    small = _small_image("WEBP", (64, 48), lossless=True)
    vp8x = bytes([0, 0, 0, 0]) + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    body = b"WEBP" + b"VP8X" + len(vp8x).to_bytes(4, "little") + vp8x + small[12:]
    return b"RIFF" + len(body).to_bytes(4, "little") + body


def webp_vp8l_declaring(width: int = 16_384, height: int = 16_384) -> bytes:
    """A simple lossless WebP whose VP8L header declares width x height (its largest, 268 MP)."""
    small = bytearray(_small_image("WEBP", (64, 48), lossless=True))
    position = small.find(b"VP8L") + 8 + 1  # after the chunk header and the 0x2f signature
    bits = int.from_bytes(small[position : position + 4], "little")
    bits = (bits & ~0x0FFFFFFF) | (width - 1) | (height - 1) << 14
    small[position : position + 4] = bits.to_bytes(4, "little")
    return bytes(small)


def flac_days(days: float = 3) -> bytes:
    """A FLAC whose STREAMINFO declares `days` of 44.1 kHz stereo audio."""
    return flac_declaring(total_samples=int(44_100 * 86_400 * days))


def mp3_days(days: float = 3) -> bytes:
    """Three MP3 frames whose Xing header declares `days` of audio."""
    return mp3_with_xing_frames(int(days * 86_400 / 0.026122))


@functools.cache
def pdf_stream_bomb(expanded: int = 2048 * MB, chained: bool = True) -> bytes:
    """A PDF whose page content stream inflates to `expanded` bytes (chained: deflated twice, a few KB)."""
    from tests.pdf_samples import assemble_pdf, simple_objects

    data = _deflated_zeros(expanded)
    filters = b"/Filter [/FlateDecode /FlateDecode]" if chained else b"/Filter /FlateDecode"
    if chained:
        data = zlib.compress(data, 9)
    objects = simple_objects()
    objects[4] = b"<</Length " + str(len(data)).encode() + b" " + filters + b">>\nstream\n" + data + b"\nendstream"
    return assemble_pdf(objects)


def mp4_huge_box(where: str = "top") -> bytes:
    """An MP4 with a box claiming 2^64 - 1 bytes (64-bit size), at the top level or inside moov."""
    data = sample("mp4")
    huge = (1).to_bytes(4, "big") + b"mdat" + (2**64 - 1).to_bytes(8, "big") + bytes(16)
    if where == "top":
        return data + huge
    return mp4_with_moov_payload(data, huge)


def mp4_huge_box_first() -> bytes:
    """An MP4 whose first box (ftyp) claims 2^64 - 1 bytes."""
    data = sample("mp4")
    size = int.from_bytes(data[:4], "big")
    return (1).to_bytes(4, "big") + b"ftyp" + (2**64 - 1).to_bytes(8, "big") + data[8:size] + data[size:]


def ebml_unknown_nested(depth: int = 10_000, doc_type: bytes = b"webm") -> bytes:
    """An EBML header then a Segment of unknown size holding `depth` Clusters/BlockGroups of unknown size,
    each inside the one before."""
    def element(element_id: bytes, payload: bytes) -> bytes:
        return element_id + (0x08 << 56 | len(payload)).to_bytes(8, "big") + payload

    header = element(b"\x1a\x45\xdf\xa3", element(b"\x42\x86", b"\x01") + element(b"\x42\xf7", b"\x01")
                     + element(b"\x42\xf2", b"\x04") + element(b"\x42\xf3", b"\x08") + element(b"\x42\x82", doc_type)
                     + element(b"\x42\x87", b"\x04") + element(b"\x42\x85", b"\x02"))
    unknown = b"\x01\xff\xff\xff\xff\xff\xff\xff"
    return header + b"\x18\x53\x80\x67" + unknown + (b"\x1f\x43\xb6\x75" + unknown) * depth


def ebml_deep_known(depth: int = 10_000, doc_type: bytes = b"matroska") -> bytes:
    """Like ebml_unknown_nested, but every size is known (each element holds exactly the next)."""
    inner = b""
    for _ in range(depth):
        inner = b"\x1f\x43\xb6\x75" + (0x01 << 56 | len(inner)).to_bytes(8, "big") + inner
    head = ebml_unknown_nested(0, doc_type)
    return head[:-8] + (0x01 << 56 | len(inner)).to_bytes(8, "big") + inner


def jpeg_declaring(width: int = 50_000, height: int = 50_000) -> bytes:
    """A small JPEG whose frame header declares width x height."""
    data = bytearray(sample("jpeg"))
    start = data.find(b"\xff\xc0")
    data[start + 5 : start + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(data)


def wav_declaring_days(days: float = 3) -> bytes:
    """A WAV whose data chunk size declares `days` of 8 kHz audio (capped by 32 bits) over 2 s of samples."""
    real = sample("wav")
    position = real.find(b"data")
    return real[: position + 4] + (0xFFFFFFF0).to_bytes(4, "little") + real[position + 8 :]


# structures that loop or nest instead of expanding

def pdf_xref_loop() -> bytes:
    """A PDF whose trailer's /Prev points back at its own cross-reference section (an endless chain)."""
    from tests.pdf_samples import assemble_pdf, simple_objects

    data = assemble_pdf(simple_objects(), trailer=b"/Root 1 0 R /Prev 0000000000")
    offset = data[data.rindex(b"startxref") + 10 :].split()[0]
    return data.replace(b"/Prev 0000000000", b"/Prev " + offset.rjust(10, b"0"))


def pdf_nested_arrays(depth: int = 10_000) -> bytes:
    """A PDF whose page dictionary holds an array nested `depth` deep."""
    from tests.pdf_samples import assemble_pdf, simple_objects

    objects = simple_objects()
    objects[3] = objects[3][:-2] + b"/Deep " + b"[" * depth + b"]" * depth + b">>"
    return assemble_pdf(objects)


def pdf_object_stream_loop() -> bytes:
    """A PDF whose page tree is a cycle: the page is its own parent and kid."""
    from tests.pdf_samples import assemble_pdf, simple_objects

    objects = simple_objects()
    objects[2] = b"<</Type/Pages/Kids[2 0 R 3 0 R]/Count 2>>"
    objects[3] = objects[3].replace(b"/Parent 2 0 R", b"/Parent 3 0 R/Kids[3 0 R]")
    return assemble_pdf(objects)


def html_nested(depth: int = 10_000) -> bytes:
    return b"<!DOCTYPE html><html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>"


def html_unclosed(count: int = 100_000) -> bytes:
    return b"<!DOCTYPE html><html><body>" + b"<b><i>" * count


def text_long_line(size: int = 20 * MB) -> bytes:
    """One 20 MB line of words and no newline."""
    return b"word " * (size // 5)


def text_zero_width(count: int = 1_000_000) -> bytes:
    """Text made of a million zero-width characters (the text mark's own alphabet) around a few words."""
    return ("A few words " + "\u200b\u200c\u200d\u2060" * (count // 4) + " and more.").encode()


def mp4_declaring_samples(count: int = 0xFFFFFFFF) -> bytes:
    """An MP4 whose stsz declares `count` samples (no table behind them)."""
    return mp4_patched(sample("mp4"), (b"moov", b"trak", b"mdia", b"minf", b"stbl", b"stsz"), 8,
                       count.to_bytes(4, "big"))


def flac_block_longer_than_file() -> bytes:
    """A FLAC whose second metadata block (a last one) declares 16 MB in a file of a few KB."""
    data = sample("flac")
    streaminfo_end = 8 + 34
    return data[:4] + b"\x00" + data[5:streaminfo_end] + b"\x84\xff\xff\xff" + data[streaminfo_end:]


def id3_declaring(size: int = 256 * MB - 1) -> bytes:
    """An ID3v2 tag header declaring `size` bytes (the most a syncsafe size holds) before real MP3 frames."""
    return b"ID3\x04\x00\x00" + _syncsafe(size) + sample("mp3")


def jpeg_segment_past_end() -> bytes:
    """A JPEG whose APP1 segment declares 65,535 bytes where 20 remain."""
    return sample("jpeg")[:2] + b"\xff\xe1\xff\xffExif\x00\x00" + bytes(12)


def wav_fmt_declaring(size: int = 0xFFFFFFF0) -> bytes:
    """A WAV whose fmt chunk declares 4 GB."""
    data = sample("wav")
    position = data.find(b"fmt ")
    return data[: position + 4] + size.to_bytes(4, "little") + data[position + 8 :]


def _family_cases() -> dict[str, tuple[str, object]]:
    """Case name -> (format the upload is named as, builder of its bytes)."""
    cases: dict[str, tuple[str, object]] = {}
    for fmt in FORMATS:
        cases[f"{fmt}-zero-bytes"] = (fmt, lambda: b"")
        cases[f"{fmt}-first-16-bytes"] = (fmt, functools.partial(header_only, fmt))
        cases[f"{fmt}-truncated-half"] = (fmt, functools.partial(truncated, fmt, 0.5))
        cases[f"{fmt}-truncated-last-byte"] = (fmt, lambda fmt=fmt: sample(fmt)[:-1])
    cases.update({
        "polyglot-jpeg+zip": ("jpeg", jpeg_zip_polyglot),
        "polyglot-jpeg+pdf": ("jpeg", jpeg_pdf_polyglot),
        "polyglot-jpeg+html": ("jpeg", jpeg_html_polyglot),
        "polyglot-png+mp4": ("png", png_mp4_polyglot),
        "polyglot-html+pdf": ("pdf", pdf_html_polyglot),
        "polyglot-wav+zip": ("wav", wav_zip_polyglot),
        "polyglot-mp4+zip": ("mp4", mp4_zip_polyglot),
        "bomb-png-declares-50000x50000": ("png", functools.partial(png_declaring, 50_000, 50_000)),
        "bomb-png-idat-50000x50000": ("png", png_idat_bomb),
        "bomb-png-ztxt-1GB": ("png", png_ztxt_bomb),
        "bomb-png-iccp-1GB": ("png", png_iccp_bomb),
        "bomb-webp-vp8x-50000x50000": ("webp", functools.partial(webp_declaring, 50_000, 50_000)),
        "bomb-webp-vp8l-16384x16384": ("webp", webp_vp8l_declaring),
        "bomb-jpeg-declares-50000x50000": ("jpeg", jpeg_declaring),
        "bomb-wav-data-4GB": ("wav", wav_declaring_days),
        "bomb-flac-3-days": ("flac", flac_days),
        "bomb-mp3-3-days": ("mp3", mp3_days),
        "bomb-pdf-stream-2GB": ("pdf", pdf_stream_bomb),
        "bomb-pdf-stream-2GB-single-filter": ("pdf", functools.partial(pdf_stream_bomb, chained=False)),
        "bomb-mp4-box-2^64-top-level": ("mp4", mp4_huge_box),
        "bomb-mp4-box-2^64-in-moov": ("mp4", functools.partial(mp4_huge_box, "moov")),
        "bomb-mp4-ftyp-2^64": ("mp4", mp4_huge_box_first),
        "bomb-mp4-nested-10000": ("mp4", lambda: mp4_nested(sample("mp4"), 10_000)),
        "bomb-webm-unknown-size-10000-deep": ("webm", ebml_unknown_nested),
        "bomb-mkv-unknown-size-10000-deep": ("mkv", functools.partial(ebml_unknown_nested, doc_type=b"matroska")),
        "bomb-mkv-known-size-10000-deep": ("mkv", ebml_deep_known),
        "bomb-mp4-stsz-2^32-samples": ("mp4", mp4_declaring_samples),
        "bomb-flac-block-16MB-in-4KB": ("flac", flac_block_longer_than_file),
        "bomb-mp3-id3-declares-256MB": ("mp3", id3_declaring),
        "bomb-wav-fmt-declares-4GB": ("wav", wav_fmt_declaring),
        "bomb-jpeg-segment-past-end": ("jpeg", jpeg_segment_past_end),
        "loop-pdf-xref-prev-to-itself": ("pdf", pdf_xref_loop),
        "loop-pdf-page-tree-cycle": ("pdf", pdf_object_stream_loop),
        "deep-pdf-array-10000": ("pdf", pdf_nested_arrays),
        "deep-html-10000-divs": ("html", html_nested),
        "deep-html-100000-unclosed-tags": ("html", html_unclosed),
        "text-one-20MB-line": ("text", text_long_line),
        "text-a-million-zero-width-characters": ("text", text_zero_width),
    })
    return cases


FAMILY_CASES = _family_cases()
