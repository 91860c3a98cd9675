"""Video made at test time with PyAV: synthetic moving pictures in MP4, MOV, MKV and WebM, remuxes and
re-encodes of them, and ffprobe when it is installed."""

from __future__ import annotations

import functools
import io
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from fractions import Fraction

import av
import numpy as np

# Our names for the formats, as PyAV's muxers call them.
MUXERS = {"mp4": "mp4", "mov": "mov", "mkv": "matroska", "webm": "webm"}
DEMUXERS = {"mp4": "mov", "mov": "mov", "mkv": "matroska", "webm": "matroska"}
Picture = Callable[[int, int, int], np.ndarray]  # (frame index, width, height) -> RGB uint8


def moving_gradient(index: int, width: int, height: int) -> np.ndarray:
    """A diagonal gradient sliding right, a bright square in the top-left corner, a disc moving down."""
    yy, xx = np.mgrid[0:height, 0:width]
    image = np.empty((height, width, 3), np.uint8)
    image[..., 0] = (xx * 255 // width + 2 * index) % 256
    image[..., 1] = yy * 255 // height
    image[..., 2] = ((xx + yy) * 128 // (width + height) + 64).astype(np.uint8)
    image[: height // 4, : width // 4] = (250, 250, 40)
    cy, cx = (height // 3 + 2 * index) % height, width * 2 // 3
    image[(yy - cy) ** 2 + (xx - cx) ** 2 < (height // 8) ** 2] = (20, 30, 200)
    return image


@functools.cache
def _texture(height: int, width: int, seed: int = 7) -> np.ndarray:
    """A grey-level texture (blurred noise at two scales), twice the frame's size, for the panning pictures."""
    rng = np.random.default_rng(seed)
    coarse = np.kron(rng.random((height // 16 + 2, width // 16 + 2)), np.ones((32, 32)))[: 2 * height, : 2 * width]
    fine = rng.random((2 * height, 2 * width))
    return (coarse * 150 + fine * 60 + 20).astype(np.float32)


def textured_pan(index: int, width: int, height: int) -> np.ndarray:
    """Natural-looking detail sliding diagonally by 3 pixels a frame, slightly coloured."""
    texture = _texture(height, width)
    top, left = (index * 3) % height, (index * 2) % width
    grey = texture[top : top + height, left : left + width]
    return np.stack([grey, grey * 0.9 + 10, grey * 0.8 + 20], axis=-1).clip(0, 255).astype(np.uint8)


def high_motion(index: int, width: int, height: int) -> np.ndarray:
    """The texture jumping to an unrelated place every frame (a cut or a whip pan each frame)."""
    texture = _texture(height, width)
    rng = np.random.default_rng(index)
    top, left = int(rng.integers(0, height)), int(rng.integers(0, width))
    grey = texture[top : top + height, left : left + width]
    return np.repeat(grey[..., None], 3, axis=-1).astype(np.uint8)


def flat_scene(index: int, width: int, height: int) -> np.ndarray:
    """A wall: one grey with a faint vertical gradient, nothing moving."""
    yy = np.mgrid[0:height, 0:width][0]
    return np.repeat((110 + 20 * yy / height)[..., None], 3, axis=-1).astype(np.uint8)


def dark_scene(index: int, width: int, height: int) -> np.ndarray:
    """The panning texture at night: levels 16 to about 50."""
    return (textured_pan(index, width, height).astype(np.float32) * 0.15 + 16).astype(np.uint8)


def fade_in(index: int, width: int, height: int, frames: int = 25) -> np.ndarray:
    """The panning texture faded in from black over the first second (25 frames)."""
    return (textured_pan(index, width, height) * min(1.0, index / frames)).astype(np.uint8)


def make_video(fmt: str = "mp4", *, codec: str | None = None, size: tuple[int, int] = (320, 240),
               seconds: float = 3.0, fps: int = 25, picture: Picture = moving_gradient, rotate: int | None = None,
               audio: bool = False, faststart: bool = False, bitrate: int | None = None, crf: int | None = None,
               keyint: int | None = None, movflags: str | None = None, preset: str = "veryfast") -> bytes:
    """A clip of synthetic frames encoded with PyAV (H.264 by default, VP9 for WebM)."""
    codec = codec or ("libvpx-vp9" if fmt == "webm" else "libx264")
    if faststart:  # the muxer's second pass moves moov to the front: it needs a real file
        with tempfile.NamedTemporaryFile(suffix=f".{fmt}") as file:
            _encode(file.name, fmt, codec, size, seconds, fps, picture, rotate, audio, bitrate, crf, keyint,
                    {"movflags": "faststart"}, preset)
            return open(file.name, "rb").read()
    buffer = io.BytesIO()
    options = {"movflags": movflags} if movflags else {}
    _encode(buffer, fmt, codec, size, seconds, fps, picture, rotate, audio, bitrate, crf, keyint, options, preset)
    return buffer.getvalue()


def _encode(target, fmt, codec, size, seconds, fps, picture, rotate, audio, bitrate, crf, keyint, options,
            preset) -> None:
    with av.open(target, "w", format=MUXERS[fmt], options=options) as output:
        stream = _video_stream(output, codec, size, fps, bitrate=bitrate, crf=crf, keyint=keyint, preset=preset)
        if rotate is not None:
            stream.set_display_rotation(rotate)
        sound = output.add_stream("aac" if fmt in ("mp4", "mov") else "libopus", rate=48_000) if audio else None
        for index in range(int(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(picture(index, *size), format="rgb24")
            frame.pts = index
            output.mux(stream.encode(frame))
        output.mux(stream.encode(None))
        if sound is not None:
            _add_tone(output, sound, seconds)


def _video_stream(output, codec: str, size: tuple[int, int], fps: int, *, bitrate: int | None, crf: int | None,
                  keyint: int | None, preset: str = "veryfast"):
    stream = output.add_stream(codec, rate=fps)
    stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
    stream.codec_context.time_base = Fraction(1, fps)
    options = {"preset": preset} if codec == "libx264" else {"deadline": "realtime", "cpu-used": "8"}
    if bitrate:
        stream.bit_rate = bitrate
    if crf is not None:
        options["crf"] = str(crf)
        if codec == "libvpx-vp9":
            options["b"] = "0"
    if keyint:
        options["g"] = str(keyint)
    stream.options = options
    return stream


def make_vfr_video(fmt: str = "mp4", *, size: tuple[int, int] = (320, 240), frames: int = 60,
                   picture: Picture = textured_pan) -> bytes:
    """A variable-frame-rate clip: frames alternately 1/30 s and 1/15 s apart (millisecond timestamps)."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=MUXERS[fmt]) as output:
        stream = _video_stream(output, "libx264", size, 30, bitrate=None, crf=23, keyint=None)
        stream.codec_context.time_base = stream.time_base = Fraction(1, 1000)
        shown = 0
        for index in range(frames):
            frame = av.VideoFrame.from_ndarray(picture(index, *size), format="rgb24")
            frame.pts, frame.time_base = shown, Fraction(1, 1000)
            shown += 33 if index % 2 else 67
            output.mux(stream.encode(frame))
        output.mux(stream.encode(None))
    return buffer.getvalue()


def ffmpeg_copy(data: bytes, suffix: str, arguments: list[str], target: str = "mp4") -> bytes:
    """The file run through the ffmpeg binary with `arguments` (filters, codec options) into a `target` file."""
    with tempfile.TemporaryDirectory() as folder:
        source, output = f"{folder}/in.{suffix}", f"{folder}/out.{target}"
        with open(source, "wb") as file:
            file.write(data)
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", source, *arguments, output], check=True, timeout=600,
                       capture_output=True)
        with open(output, "rb") as file:
            return file.read()


def has_ffmpeg() -> bool:
    return shutil.which("ffmpeg") is not None


def frame_times(data: bytes, fmt: str) -> list[float]:
    """The presentation time of every frame of the first video stream, in seconds."""
    with av.open(io.BytesIO(data), format=DEMUXERS[fmt]) as given:
        return [float(frame.time) for frame in given.decode(video=0)]


def make_audio_only(fmt: str, seconds: float = 1.0) -> bytes:
    """A file of the format holding a single audio stream."""
    buffer = io.BytesIO()
    with av.open(buffer, "w", format=MUXERS[fmt]) as output:
        _add_tone(output, output.add_stream("aac" if fmt in ("mp4", "mov") else "libopus", rate=48_000), seconds)
    return buffer.getvalue()


def _add_tone(output, stream, seconds: float) -> None:
    rate, block = 48_000, 960
    for index in range(int(seconds * rate / block)):
        t = (np.arange(block) + index * block) / rate
        samples = (0.3 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :]
        frame = av.AudioFrame.from_ndarray(samples, format="flt", layout="mono")
        frame.sample_rate, frame.pts = rate, index * block
        output.mux(stream.encode(frame))
    output.mux(stream.encode(None))


def remux(data: bytes, source: str, target: str, *, start: float = 0.0) -> bytes:
    """Copy the packets into a new container (ffmpeg -c copy), from the first keyframe at or after `start`."""
    buffer = io.BytesIO()
    with av.open(io.BytesIO(data), format=DEMUXERS[source]) as given, \
            av.open(buffer, "w", format=MUXERS[target]) as output:
        streams = {stream.index: output.add_stream_from_template(stream) for stream in given.streams
                   if stream.type in ("video", "audio")}
        video = given.streams.video[0]
        first: int | None = None
        for packet in given.demux(list(given.streams)):
            if packet.dts is None or packet.stream.index not in streams:
                continue
            if packet.stream is video and first is None:
                if not packet.is_keyframe or float(packet.pts * video.time_base) < start - 1e-3:
                    continue
                first = packet.pts
            if first is None:
                continue
            packet.stream = streams[packet.stream.index]
            output.mux(packet)
    return buffer.getvalue()


def reencode(data: bytes, source: str, target: str = "mp4", *, bitrate: int | None = None, crf: int | None = None,
             height: int | None = None, start: float = 0.0) -> bytes:
    """Decode the video and encode it again (H.264, or VP9 for WebM): another bitrate, a smaller size,
    or only the frames shown from `start` seconds on (the first of them becomes the first frame)."""
    buffer = io.BytesIO()
    with av.open(io.BytesIO(data), format=DEMUXERS[source]) as given, \
            av.open(buffer, "w", format=MUXERS[target]) as output:
        video = given.streams.video[0]
        fps = round(float(video.average_rate or 25))
        stream, count = None, 0
        for frame in given.decode(video):
            if frame.time is not None and frame.time < start - 1e-3:
                continue
            image = frame.to_image()
            if stream is None:
                width = image.width if height is None else round(image.width * height / image.height / 2) * 2
                size = (width, height or image.height)
                stream = _video_stream(output, "libvpx-vp9" if target == "webm" else "libx264", size, fps,
                                       bitrate=bitrate, crf=crf, keyint=None)
                if frame.rotation:
                    stream.set_display_rotation(frame.rotation)
            picture = av.VideoFrame.from_image(image.resize((stream.width, stream.height)))
            picture.pts, count = count, count + 1
            output.mux(stream.encode(picture))
        output.mux(stream.encode(None))
    return buffer.getvalue()


def has_ffprobe() -> bool:
    return shutil.which("ffprobe") is not None


def ffprobe(data: bytes, suffix: str) -> dict:
    """ffprobe's JSON view of the file's streams and format (raises when ffprobe refuses the file)."""
    with tempfile.NamedTemporaryFile(suffix=f".{suffix}") as file:
        file.write(data)
        file.flush()
        result = subprocess.run(["ffprobe", "-v", "error", "-print_format", "json", "-show_streams", "-show_format",
                                 file.name], capture_output=True, check=True, timeout=600)
    return json.loads(result.stdout)


def rotation(probed: dict) -> int:
    """The first video stream's rotation in an ffprobe JSON view (its display matrix), 0 when it has none."""
    stream = next(s for s in probed["streams"] if s["codec_type"] == "video")
    for side_data in stream.get("side_data_list", []):
        if "rotation" in side_data:
            return round(float(side_data["rotation"]))
    return round(float(stream.get("tags", {}).get("rotate", 0)))


def ffprobe_errors(data: bytes, suffix: str) -> str:
    """What ffprobe reports as errors while reading every packet of the file."""
    with tempfile.NamedTemporaryFile(suffix=f".{suffix}") as file:
        file.write(data)
        file.flush()
        result = subprocess.run(["ffprobe", "-v", "error", "-show_packets", file.name], capture_output=True,
                                timeout=600)
    return result.stderr.decode("utf-8", "replace")


@functools.cache
def sample(fmt: str, **options) -> bytes:
    """A short clip per format and options, made once per test process."""
    return make_video(fmt, **options)


def top_level_boxes(data: bytes) -> list[bytes]:
    """The types of an MP4's top-level boxes, read independently of the codec."""
    types, position = [], 0
    while position + 8 <= len(data):
        size = int.from_bytes(data[position : position + 4], "big")
        if size == 1:
            size = int.from_bytes(data[position + 8 : position + 16], "big")
        types.append(data[position + 4 : position + 8])
        position += size if size else len(data) - position
    return types


# The tkhd transformation matrix (ISO/IEC 14496-12 8.3.2, 16.16 fixed point but for w, 2.30) of a picture
# turned clockwise by a quarter turn when shown, as phones and `ffmpeg -display_rotation` write it.
_CLOCKWISE_MATRICES = {0: (1, 0, 0, 1), 90: (0, 1, -1, 0), 180: (-1, 0, 0, -1), 270: (0, -1, 1, 0)}


def with_display_matrix(data: bytes, clockwise: int) -> bytes:
    """An MP4 or MOV whose first track's tkhd matrix shows the picture turned `clockwise` degrees (0, 90,
    180, 270): only the 36 bytes of the matrix change, never a pixel."""
    import struct

    at = data.index(b"tkhd")
    version = data[at + 4]
    matrix_at = at + 8 + (32 if version == 1 else 20) + 16  # times, track id, duration; reserved, layer, volume
    width, height = (struct.unpack(">I", data[matrix_at + 36 + 4 * k : matrix_at + 40 + 4 * k])[0] >> 16
                     for k in range(2))
    a, b, c, d = _CLOCKWISE_MATRICES[clockwise]
    tx, ty = {0: (0, 0), 90: (height, 0), 180: (width, height), 270: (0, width)}[clockwise]
    matrix = struct.pack(">9i", a << 16, b << 16, 0, c << 16, d << 16, 0, tx << 16, ty << 16, 1 << 30)
    return data[:matrix_at] + matrix + data[matrix_at + 36 :]
