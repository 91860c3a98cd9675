"""Marking a video file and reading its mark with PyAV: decode, mark the luminance, re-encode, remux.

**Marking** (`mark_video`): every frame of the first video stream is decoded, converted to 8-bit 4:2:0 if it
is not, marked (watermark.FrameMarker: the carrier is made once for the frame size) and encoded again with
the input's codec family through PyAV's bundled encoders (ENCODERS: H.264 stays H.264, H.265 stays H.265,
VP9 and AV1 stay themselves; anything else becomes H.264, or VP9 in WebM), at the input stream's bit rate
measured from its packets (with a floor, MIN_BIT_RATE and MIN_BITS_PER_PIXEL), a keyframe at least every
KEYFRAME_SECONDS. 10-bit and 4:2:2 or 4:4:4 input comes back 8-bit 4:2:0. Each frame keeps its timestamp
(variable frame rates stay variable), the stream keeps its display matrix (rotation and mirroring), its
language and title, and the container its metadata. Every other stream
(audio, subtitles, data, a second video stream) is copied packet for packet, untouched.

**Reading** (`read_mark`): at most READ_POSITIONS places spread over the clip, each a seek to the
keyframe before it and an equal share of the frames read decoded from there (the keyframe first: the best
picture of its group). The frames read are at most MAX_READ_FRAMES and READ_PIXELS frame pixels
(`read_frame_count`: 24 frames of 1080p, 64 of 360p); every frame goes to one
watermark.MarkReader, which combines them (watermark.py). A clip of a few seconds holds one keyframe: its
first frames are read then.

Bounds: the decoder refuses pictures over limits.MAX_PIXELS; marking stops with MediaTooLarge past
MAX_MARKED_FRAMES frames (the limits' 10 minutes at 120 frames a second), whatever the container declares.
FFmpeg's errors become CorruptMedia; an encoder or muxer that refuses the input's streams UnsupportedFormat.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from contextlib import contextmanager

import av
import numpy as np

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.progress import Progress, steps
from media_codecs.video.frames import opened_video
from media_codecs.video.limits import MAX_SECONDS
from media_codecs.video.watermark import FrameMarker, MarkReader, WatermarkError

MAX_MARKED_FRAMES = MAX_SECONDS * 120
READ_POSITIONS = 8
MAX_READ_FRAMES = 64
READ_PIXELS = 24 * 1920 * 1080  # frame pixels one read decodes at most: 24 frames of 1080p, 5 of 4K
# The input's codec -> (encoder, options). Presets chosen for a 60 s 1080p clip marked within a minute
# on two cores (docs/performance.md); the bit rate is the input's.
ENCODERS = {
    # x264 drops small residuals in P-frames (its dead zones, decimation, fast skip): there the mark's
    # refresh is such a residual; keeping them kept a grainy 240-line clip's mark (docs/performance.md)
    "h264": ("libx264", {"preset": "veryfast",
                         "x264-params": "dct-decimate=0:fast-pskip=0:deadzone-inter=8:deadzone-intra=6"}),
    "hevc": ("libx265", {"preset": "ultrafast", "x265-params": "log-level=error"}),
    "vp9": ("libvpx-vp9", {"deadline": "realtime", "cpu-used": "8", "row-mt": "1"}),
    "av1": ("libsvtav1", {"preset": "10"}),
}
FALLBACK_CODEC = {"webm": "vp9"}  # what a codec without an encoder here becomes; H.264 elsewhere
# Container tags the muxer writes itself: copying the input's would describe the input, not our file.
# The re-encode's least bit rate: a flat synthetic 320x240 clip sent at 70 kbit/s lost its mark re-encoded at
# that rate and kept it from 250 kbit/s; ordinary 1080p30 H.264 at 4-8 Mbit/s is 0.06-0.13 bit a pixel, so
# the per-pixel floor only lifts starved streams.
MIN_BITS_PER_PIXEL = 0.05
MIN_BIT_RATE = 300_000
_MUXER_TAGS = frozenset({"major_brand", "minor_version", "compatible_brands", "encoder", "creation_time_us"})
_THREADS = 2
# Bit-exact containers: without it Matroska's segment and track UIDs are random, and two markings of one
# WebM file differ (the same bytes for the same input is a codec's contract; PyAV's libx264 does not always
# keep it, docs/decisions.md).
_MUXER_OPTIONS = {"fflags": "+bitexact"}
KEYFRAME_SECONDS = 2.0


@contextmanager
def _codec_errors() -> Iterator[None]:
    try:
        yield
    except WatermarkError as error:
        raise UnsupportedFormat(f"this video cannot carry the watermark: {error}") from None
    except (av.FFmpegError, ValueError, OSError, EOFError, RuntimeError, IndexError) as error:
        raise CorruptMedia(f"the video does not decode or encode: {error}") from None


def mark_video(data: bytes, demuxer: str, muxer: str, mark_id: int, progress: Progress | None = None) -> bytes:
    """The file re-encoded with `mark_id` in every frame of its first video stream (module docstring).

    Raises UnsupportedFormat, CorruptMedia, MediaTooLarge.
    """
    report = steps(progress)
    output_file = io.BytesIO()
    with _codec_errors():
        matrix, video_bytes = _video_facts(data, demuxer)
    with (_codec_errors(), opened_video(data, demuxer) as (source, video),
          av.open(output_file, mode="w", format=muxer, options=_MUXER_OPTIONS) as target):
        _copy_tags(source.metadata, target.metadata)
        copies, encoder = {}, None
        for stream in source.streams:  # the output's streams in the input's order
            if stream.index == video.index:
                bit_rate = _bit_rate(video, video_bytes, _seconds(source))
                encoder = _Encoder(target, video, muxer, mark_id, bit_rate, matrix)
            else:
                copies[stream.index] = _copied_stream(target, stream)
        seconds = _seconds(source)
        for packet in source.demux():
            if packet.stream.index == video.index:
                encoder.add_packet(packet)
                if packet.pts is not None and seconds:
                    report(float(packet.pts * video.time_base) / seconds)
            elif packet.dts is not None and packet.stream.index in copies:
                packet.stream = copies[packet.stream.index]
                target.mux(packet)
        encoder.finish()
    report(1.0)
    return output_file.getvalue()


class _Encoder:
    """Decodes the input video stream's packets, marks each frame and encodes it into the output stream."""

    def __init__(self, target: av.container.OutputContainer, video: av.video.stream.VideoStream, muxer: str,
                 mark_id: int, bit_rate: int, display_matrix: tuple[int, ...] | None):
        context = video.codec_context
        self.width, self.height = context.width, context.height
        self.marker = FrameMarker(self.height, self.width, mark_id)
        self.decoder = context
        codec = context.name if context.name in ENCODERS else FALLBACK_CODEC.get(muxer, "h264")
        name, options = ENCODERS[codec]
        self.stream = target.add_stream(name, rate=video.average_rate or video.guessed_rate or 25,
                                        options=dict(options))
        self.stream.width, self.stream.height = self.width, self.height
        self.stream.pix_fmt = "yuv420p"
        self.stream.time_base = video.time_base
        self.stream.codec_context.time_base = video.time_base
        self.stream.codec_context.bit_rate = bit_rate
        # A keyframe at least every KEYFRAME_SECONDS: between keyframes the encoder's motion compensation drags
        # the mark along with the picture and lets it fade; each keyframe carries it whole again.
        rate = float(video.average_rate or video.guessed_rate or 25)
        self.stream.codec_context.gop_size = max(1, round(KEYFRAME_SECONDS * rate))
        self.stream.codec_context.thread_count = _THREADS
        if video.sample_aspect_ratio:
            self.stream.codec_context.sample_aspect_ratio = video.sample_aspect_ratio
        _copy_tags(video.metadata, self.stream.metadata)
        self.stream.disposition = video.disposition
        if display_matrix is not None:  # rotation and mirroring, as the input shows its frames
            self.stream.set_display_matrix(display_matrix)
        self.target = target
        self.frames = 0

    def add_packet(self, packet: av.Packet) -> None:
        for frame in self.decoder.decode(packet):
            self._encode(frame)

    def finish(self) -> None:
        # demux() ends each stream with an empty packet, whose decoding flushed the decoder already
        self.target.mux(self.stream.encode(None))

    def _encode(self, frame: av.VideoFrame) -> None:
        self.frames += 1
        if self.frames > MAX_MARKED_FRAMES:
            raise MediaTooLarge(f"more than {MAX_MARKED_FRAMES} frames to mark")
        marked = self._marked(frame)
        self.target.mux(self.stream.encode(marked))

    def _marked(self, frame: av.VideoFrame) -> av.VideoFrame:
        if frame.format.name != "yuv420p" or (frame.width, frame.height) != (self.width, self.height):
            frame = frame.reformat(width=self.width, height=self.height, format="yuv420p")
        planes = frame.to_ndarray()  # yuv420p: the luminance rows, then the two chroma planes' rows
        planes[: self.height] = self.marker.mark(planes[: self.height])
        marked = av.VideoFrame.from_ndarray(planes, format="yuv420p")
        marked.pts, marked.time_base = frame.pts, frame.time_base
        marked.color_range, marked.colorspace = frame.color_range, frame.colorspace
        marked.color_primaries, marked.color_trc = frame.color_primaries, frame.color_trc
        return marked


def _video_facts(data: bytes, demuxer: str) -> tuple[tuple[int, ...] | None, int]:
    """The first video stream's display matrix, from its first frame (FFmpeg hands the stream's matrix to every
    decoded frame: it must be on the output stream before the output's header is written), and the bytes of
    all its packets (read, not decoded)."""
    matrix, total = None, 0
    with opened_video(data, demuxer) as (source, video):
        for packet in source.demux(video):
            total += packet.size
            if total and matrix is None and packet.size:
                for frame in video.codec_context.decode(packet):
                    matrix = _display_matrix(frame) or ()
    return matrix or None, total


def _display_matrix(frame: av.VideoFrame) -> tuple[int, ...] | None:
    """The frame's display matrix: nine 32-bit integers (FFmpeg's AV_FRAME_DATA_DISPLAYMATRIX), or None."""
    for side_data in frame.side_data:
        if side_data.type.name == "DISPLAYMATRIX" and side_data.buffer_size == 36:
            return struct.unpack("<9i", bytes(side_data))
    return None


def _copied_stream(target: av.container.OutputContainer, stream: av.stream.Stream) -> av.stream.Stream | None:
    """An output stream that receives `stream`'s packets as they are, with its tags and disposition."""
    try:
        copy = target.add_stream_from_template(stream)
    except (ValueError, av.FFmpegError) as error:
        raise UnsupportedFormat(f"stream {stream.index} ({stream.type}) cannot be copied: {error}") from None
    _copy_tags(stream.metadata, copy.metadata)
    copy.disposition = stream.disposition
    return copy


def _copy_tags(source: dict, target: dict) -> None:
    for key, value in source.items():
        if key.lower() not in _MUXER_TAGS:
            target[key] = value


def _seconds(container: av.container.InputContainer) -> float:
    return container.duration / av.time_base if container.duration else 0.0


def _bit_rate(video: av.video.stream.VideoStream, video_bytes: int, seconds: float) -> int:
    """The input video stream's bit rate, measured from its packets (a declared rate is an average some muxers
    leave out or get wrong), at least MIN_BIT_RATE and MIN_BITS_PER_PIXEL: the mark is detail the encoder
    must have bits for."""
    rate = float(video.average_rate or video.guessed_rate or 25)
    floor = max(MIN_BIT_RATE, int(MIN_BITS_PER_PIXEL * video.codec_context.width * video.codec_context.height * rate))
    measured = int(video_bytes * 8 / seconds) if seconds > 0 else 0
    return max(floor, measured or int(video.codec_context.bit_rate or 0))


def read_frame_count(frame_pixels: int) -> int:
    """How many frames of this size a read decodes at most."""
    return max(1, min(MAX_READ_FRAMES, READ_PIXELS // max(1, frame_pixels)))


def read_mark(data: bytes, demuxer: str) -> int | None:
    """The mark id read from frames spread over the clip (module docstring), or None.

    Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
    """
    reader = MarkReader()
    with _codec_errors(), opened_video(data, demuxer) as (source, video):
        context = video.codec_context
        budget = read_frame_count(context.width * context.height)
        seconds = _seconds(source)
        seen: set[int] = set()
        for position in range(READ_POSITIONS):
            if len(seen) >= budget:
                break
            if position and seconds:
                offset = seconds * position / READ_POSITIONS
                source.seek(int(offset * av.time_base), backward=True, any_frame=False)
                context.flush_buffers()
            elif position:
                break
            _read_frames(source, video, reader, seen, budget, -(-budget // READ_POSITIONS))
    return reader.read()


def _read_frames(source: av.container.InputContainer, video: av.video.stream.VideoStream, reader: MarkReader,
                 seen: set[int], budget: int, count: int) -> None:
    """Add the next `count` frames (not added before) to the reader."""
    taken = 0
    for packet in source.demux(video):
        for frame in video.codec_context.decode(packet):
            key = frame.pts if frame.pts is not None else -len(seen) - 1
            if key not in seen:
                seen.add(key)
                reader.add(_luma(frame))
                taken += 1
            if taken >= count or len(seen) >= budget:
                return


def _luma(frame: av.VideoFrame) -> np.ndarray:
    """The frame's 8-bit luminance plane, height x width (a 10-bit plane scaled to 8 bits)."""
    if frame.format.name not in ("yuv420p", "yuvj420p", "yuv422p", "yuv444p", "gray"):
        frame = frame.reformat(format="yuv420p")
    plane = frame.planes[0]
    rows = np.frombuffer(plane, dtype=np.uint8).reshape(frame.height, plane.line_size)
    return rows[:, : frame.width]

