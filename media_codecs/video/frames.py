"""The video fingerprints: 64-bit DCT pHashes of a few decoded frames (PyAV), rotation applied.

Every value is `phash.phash_hex` (bit-identical to `imagehash.phash`) of a frame converted to RGB by
PyAV (`VideoFrame.to_image`) and turned upright by the stream's display matrix (`frame.rotation`,
counter-clockwise degrees, rounded to a quarter turn; mirroring is ignored).

**The display matrix** (MP4 and QuickTime: the tkhd matrix; FFmpeg hands it to each decoded frame, where
PyAV's `frame.rotation` reads it as av_display_rotation_get does: -90 for a phone's portrait clip, 90 for a
quarter turn the other way, -180 for a half turn). A turn written only there leaves every pixel as it was,
and one edit of 36 bytes sets or clears it: so where the matrix turns the first frame, the frame is
hashed twice, as shown (upright) and as stored, on both sides. Signing stores both (the upright one
first); verification looks both up. A copy turned in the headers alone then finds its upright original
through the pixels, and a copy re-encoded upright (FFmpeg turns the pixels when it re-encodes) finds it
through the upright value.

**The first frame** (`first_frame_phash`, the record's `fingerprint`, and the query side): the first
frame the decoder outputs, which is the first intra-coded frame of any ordinary stream (every stream
starts with one). Only the packets up to it are decoded. Where an MP4 edit list hides the frames
before its start (a cut made by stream copy), it is the first frame shown, which is what a viewer
sees and what the re-encoded copy of that cut starts with.

**Flat frames identify nothing**: a black (or any flat) frame hashes within a bit of every other flat
frame (phash.MIN_THUMBNAIL_SPREAD), so it is never stored nor looked up. A video that fades in from black
is found through the frames of its set that have a picture; one that is flat throughout has no fingerprint.

**Low-information frames identify nothing either** (`identifying_phash_hex`): a gradient, a frame fading
in from near black, two bands, a barcode or stripes seen at 32x32 put their energy in one or two DCT
terms, and the other bits of the hash are set by terms near the median, which the same rough layout sets
the same way in unrelated clips. Generated scenes of such kinds came within 0 to 6 bits of each other
(bench/video_false_matches.py), while their own re-encodes drifted 6 to 24 bits from them: such a hash
names other clips and not even its own copies. A frame counts only when at least MIN_DECIDED_BITS of its
64 coefficients stand off the median by DECIDED_MARGIN of the largest AC term (phash.decided_bits); the
frames that failed had 4 to 14, moving pictures, text and photographs 20 to 64. Like flat frames, they
are never stored nor looked up.

**The set** (`fingerprint_set`, at most MAX_FINGERPRINTS values, the first frame first, no value twice):
1. the first frame;
2. the frames shown at OFFSETS seconds after it (the first at or after each offset), decoding every
   frame up to the last offset: a clip re-encoded from a cut at a whole second up to 4 s in starts
   with one of them;
3. then keyframes after the last offset, decoded alone (`skip_frame` NONKEY), until the set is full:
   a cut made by stream copy must start at a keyframe, so its first frame is one of these.
Frames at 5 s, 6 s... would cost a full decode of every frame before them (1080p H.264 decodes at
about 190 frames a second on one of our cores, bench/video.py); keyframes cost one frame each.

**The query side** (`first_frame_phashes`): verification computes only the first frame's pHash of the
unknown clip (one decoded frame, the cheapest possible; two values when the display matrix turns it) and
matches it against every stored value of every record's set, within the image lookup's distance.
Computing a set on the query side as well would multiply both the decode time and the false matches by
the set's size for little gain: the cut clip's first frame is exactly what the stored set anticipates.
bench/video.py measures recovery and false matches of frames, bench/video_false_matches.py of whole
unrelated clips through the service.

**Progress** (`fingerprint_set`'s optional callback, media_codecs/progress.py): the offsets' pass is the
first OFFSETS_SHARE of the work, measured by the time of the frame decoded against the last offset; the
keyframes' pass the rest, by the time of the packet read against the stream's duration; 1.0 at the end.

Decoding is bounded: the decoder refuses pictures over limits.MAX_PIXELS (`max_pixels`, whatever the
bitstream's own headers say), MAX_PACKETS packets are fed before the first frame, MAX_DECODED_FRAMES
frames in the offsets pass. FFmpeg's errors become CorruptMedia.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import av
from PIL import Image

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.image.phash import decided_bits, distinctive_hex_of, thumbnail
from media_codecs.progress import Progress, part, steps
from media_codecs.video.limits import MAX_PIXELS, MAX_SIDE

OFFSETS = (1.0, 2.0, 3.0, 4.0)  # seconds after the first frame
MAX_FINGERPRINTS = 8
MAX_PACKETS = 600  # fed to the decoder before it must have put out the first frame
MAX_DECODED_FRAMES = 600  # 4 s at 120 frames/s, plus room
_EPSILON = 1e-3  # seconds: a frame stamped 1.9995 s is the frame at 2 s
OFFSETS_SHARE = 0.7  # of the progress: decoding every frame up to the last offset is most of the work
# A frame's pHash identifies it only when at least MIN_DECIDED_BITS of its 64 bits are decided by structure
# (phash.decided_bits at DECIDED_MARGIN of the largest AC term): module docstring, "Low-information frames".
MIN_DECIDED_BITS = 16
DECIDED_MARGIN = 0.02
_TRANSPOSE = {1: Image.Transpose.ROTATE_90, 2: Image.Transpose.ROTATE_180, 3: Image.Transpose.ROTATE_270}


@contextmanager
def decoder_errors() -> Iterator[None]:
    """FFmpeg's and Pillow's errors on bad input as CorruptMedia."""
    try:
        yield
    except (av.FFmpegError, ValueError, OSError, EOFError, RuntimeError, IndexError) as error:
        raise CorruptMedia(f"the video does not decode: {error}") from None


def first_frame_phash(data: bytes, demuxer: str) -> str | None:
    """pHash of the first frame, upright, None when it is flat. Raises CorruptMedia, MediaTooLarge,
    UnsupportedFormat."""
    values = first_frame_phashes(data, demuxer)
    return values[0] if values else None


def first_frame_phashes(data: bytes, demuxer: str) -> list[str]:
    """The first frame's pHashes, one decode: upright, then as stored when the display matrix turns it
    (see the module docstring); empty when the frame is flat.

    Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
    """
    with decoder_errors(), opened_video(data, demuxer) as (container, stream):
        for frame in _frames(container, stream):
            values: list[str] = []
            for value in _frame_phashes(frame):
                _add(values, value)
            return values
    raise CorruptMedia("the video stream holds no frame")


def fingerprint_set(data: bytes, demuxer: str, progress: Progress | None = None) -> list[str]:
    """The first frame's pHash, then the offsets' and the keyframes' (see the module docstring); `progress`
    hears how far the decoding is (module docstring).

    Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
    """
    values: list[str] = []
    report = steps(progress)
    with decoder_errors():
        last_time = _offset_frames(data, demuxer, values, steps(part(report, 0.0, OFFSETS_SHARE)))
        if last_time == float("inf"):
            raise CorruptMedia("the video stream holds no frame")
        _keyframes_after(data, demuxer, last_time, values, steps(part(report, OFFSETS_SHARE, 1.0)))
    report(1.0)
    return values


def _offset_frames(data: bytes, demuxer: str, values: list[str], report: Progress) -> float:
    """Add the first frame and the frames at OFFSETS; return the time of the last frame looked at."""
    pending = list(OFFSETS)
    start = last = None
    with opened_video(data, demuxer) as (container, stream):
        for count, frame in enumerate(_frames(container, stream)):
            last = _time(frame, stream, count)
            if start is None:
                start = last
                for value in _frame_phashes(frame):
                    _add(values, value)
            elif pending and last - start >= pending[0] - _EPSILON:
                while pending and last - start >= pending[0] - _EPSILON:
                    pending.pop(0)
                _add(values, _frame_phash(frame))
            report((last - start) / OFFSETS[-1])
            if not pending or count + 1 >= MAX_DECODED_FRAMES:
                break
    return float("inf") if last is None else last


def _keyframes_after(data: bytes, demuxer: str, after: float, values: list[str], report: Progress) -> None:
    """Add keyframes shown after `after` seconds, decoded alone, until the set is full."""
    if len(values) >= MAX_FINGERPRINTS or after == float("inf"):
        return
    with opened_video(data, demuxer) as (container, stream):
        stream.codec_context.skip_frame = "NONKEY"
        seconds = _seconds(container, stream)
        for packet in container.demux(stream):
            shown = None if packet.pts is None else float(packet.pts * stream.time_base)
            if shown is not None and seconds:
                report(shown / seconds)
            if packet.is_keyframe and shown is not None and shown > after + _EPSILON:
                for frame in stream.codec_context.decode(packet):
                    _add(values, _frame_phash(frame))
            if len(values) >= MAX_FINGERPRINTS:
                return
        for frame in stream.codec_context.decode(None):
            if len(values) >= MAX_FINGERPRINTS:
                return
            _add(values, _frame_phash(frame))


def _add(values: list[str], value: str | None) -> None:
    if value is not None and value not in values and len(values) < MAX_FINGERPRINTS:
        values.append(value)


@contextmanager
def opened_video(data: bytes, demuxer: str
                 ) -> Iterator[tuple[av.container.InputContainer, av.video.stream.VideoStream]]:
    """The container opened with the named demuxer (no probing) and its first video stream, ready to decode
    within the limits (the fingerprints' and the watermark's decoding, marking.py)."""
    limit = {"max_pixels": str(MAX_PIXELS)}  # the decoder refuses larger pictures, even during probing
    container = av.open(io.BytesIO(data), format=demuxer, options=limit)
    try:
        if not container.streams.video:
            raise UnsupportedFormat("the file has no video stream")
        stream = container.streams.video[0]
        if stream.codec_context is None:
            raise UnsupportedFormat("no decoder for the video stream's codec")
        context = stream.codec_context
        if max(context.width, context.height) > MAX_SIDE or context.width * context.height > MAX_PIXELS:
            raise MediaTooLarge(f"the video stream is {context.width}x{context.height}, over the limits")
        context.options = limit
        context.thread_count = 2
        yield container, stream
    finally:
        container.close()


def _frames(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> Iterator[av.VideoFrame]:
    """The decoded frames in display order; CorruptMedia when MAX_PACKETS go in before the first comes out."""
    produced = 0
    for fed, packet in enumerate(container.demux(stream), start=1):
        for frame in stream.codec_context.decode(packet) if packet.size else ():
            produced += 1
            yield frame
        if not produced and fed >= MAX_PACKETS:
            raise CorruptMedia(f"no frame decodes from the first {MAX_PACKETS} packets")
    yield from stream.codec_context.decode(None)


def _seconds(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> float:
    """The stream's duration as the container declares it (0 when it declares none): for progress only."""
    if stream.duration and stream.time_base:
        return float(stream.duration * stream.time_base)
    return container.duration / av.time_base if container.duration else 0.0


def _time(frame: av.VideoFrame, stream: av.video.stream.VideoStream, index: int) -> float:
    if frame.time is not None:
        return float(frame.time)
    rate = stream.average_rate or stream.guessed_rate or 25
    return index / float(rate)


def _frame_phash(frame: av.VideoFrame) -> str | None:
    return identifying_phash_hex(upright(frame))


def identifying_phash_hex(image: Image.Image) -> str | None:
    """The picture's pHash, or None when it is too flat or too plain to identify a clip (module docstring)."""
    grey = thumbnail(image)
    return distinctive_hex_of(grey) if decided_bits(grey, DECIDED_MARGIN) >= MIN_DECIDED_BITS else None


def _frame_phashes(frame: av.VideoFrame) -> list[str | None]:
    """The frame's pHash upright and, when its display matrix turns it, as stored."""
    image = frame.to_image()
    quarter = _quarter_turns(frame)
    if not quarter:
        return [identifying_phash_hex(image)]
    return [identifying_phash_hex(image.transpose(_TRANSPOSE[quarter])), identifying_phash_hex(image)]


def _quarter_turns(frame: av.VideoFrame) -> int:
    """Counter-clockwise quarter turns the display matrix asks for: PyAV's `frame.rotation` is FFmpeg's
    av_display_rotation_get on the frame's matrix (-90 for a phone's portrait tkhd, 90 for 270)."""
    return round((frame.rotation or 0) / 90) % 4


def upright(frame: av.VideoFrame) -> Image.Image:
    """The frame as RGB, turned by its display matrix's rotation to a quarter turn."""
    image = frame.to_image()
    quarter = _quarter_turns(frame)
    return image.transpose(_TRANSPOSE[quarter]) if quarter else image
