"""What a video container declares, and the limits checked on it before anything is decoded.

Limits: at most MAX_STREAMS streams (tracks); every video stream at most MAX_SIDE pixels a side and
MAX_PIXELS pixels (4096x2160, DCI 4K); at most MAX_SECONDS of duration (the longest of the movie and its
tracks); at most MAX_SAMPLES samples over all tracks (MP4, where the demuxer indexes them up front).
Past one of them: MediaTooLarge (413). No video stream, or only video streams that declare no size:
UnsupportedFormat / CorruptMedia (400).
"""

from __future__ import annotations

from dataclasses import dataclass

from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat

MAX_STREAMS = 16
MAX_SIDE = 4096
MAX_PIXELS = 4096 * 2160  # 8.85 MP
MAX_SECONDS = 10 * 60
# 10 minutes at 120 frames/s, plus 16 tracks of 48 kHz AAC (47 frames/s each): 72,000 + 451,200.
MAX_SAMPLES = 600_000


@dataclass(frozen=True)
class TrackInfo:
    kind: str  # "video", "audio" or "other"
    width: int = 0  # coded size, for video
    height: int = 0
    seconds: float = 0.0
    samples: int = 0  # MP4 only (Matroska does not declare it)


@dataclass(frozen=True)
class VideoInfo:
    tracks: tuple[TrackInfo, ...]
    seconds: float

    @property
    def video(self) -> tuple[TrackInfo, ...]:
        return tuple(track for track in self.tracks if track.kind == "video")


def check_video(info: VideoInfo) -> None:
    """Refuse a container outside the limits. Raises MediaTooLarge, UnsupportedFormat, CorruptMedia."""
    if len(info.tracks) > MAX_STREAMS:
        raise MediaTooLarge(f"{len(info.tracks)} streams is over the limit of {MAX_STREAMS}")
    if not info.video:
        raise UnsupportedFormat("the file has no video stream")
    for track in info.video:
        if track.width <= 0 or track.height <= 0:
            raise CorruptMedia("a video stream declares no picture size")
        if max(track.width, track.height) > MAX_SIDE or track.width * track.height > MAX_PIXELS:
            raise MediaTooLarge(f"{track.width}x{track.height} is over the limit of {MAX_SIDE} pixels a side "
                                f"and {MAX_PIXELS:,} pixels")
    if not info.seconds > 0:  # also NaN
        raise CorruptMedia("the file declares no duration")
    if info.seconds > MAX_SECONDS:
        raise MediaTooLarge(f"{info.seconds:.0f} seconds of video is over the limit of {MAX_SECONDS} seconds")
