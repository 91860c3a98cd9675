"""What MP4, QuickTime, Matroska and WebM share: the limits, the token rule and the fingerprints.

A format module knows its container: how to read what the headers declare (`parse` returns a
structure with an `info`, limits.VideoInfo), where the token travels and how to remove it. Decoding
(frames.py) is only ever for the fingerprints, and only after `open` has checked the limits
(limits.py). Video carries no watermark: re-encoding every frame to mark it would cost far more than
a request may, so a record is found by its token or, when the token is gone, by its fingerprints.
"""

from __future__ import annotations

from typing import ClassVar

from media_codecs.base import Codec, Media, Work, file_units
from media_codecs.progress import Progress
from media_codecs.video.limits import VideoInfo, check_video


def check_token(token: str) -> bytes:
    """The token as the ASCII bytes every video container stores. Raises ValueError for a bad token."""
    if not token or not token.isascii() or not token.isprintable():
        raise ValueError("the token must be a non-empty string of printable ASCII characters")
    return token.encode("ascii")


class VideoCodec(Codec):
    family = "video"
    token_source = "metadata"  # a top-level MP4 box or a Matroska trailer: reported as "metadata"
    can_watermark = False
    fingerprint_kind = "video-phash"  # imagehash's 64-bit DCT pHash of decoded frames (frames.py)
    demuxer: ClassVar[str]  # FFmpeg's demuxer for the format: no probing of the bytes by other demuxers

    def open(self, data: bytes) -> Media:
        """Parse once and refuse, before any decoding, a container outside the limits."""
        media = super().open(data)
        check_video(media.container.info)
        return media

    def info(self, content: bytes | Media) -> VideoInfo:
        """What the headers declare. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        return self.media(content).container.info

    def pixel_count(self, content: bytes | Media) -> int:
        """The pixels of one frame of the largest video stream (what a fingerprint decodes at a time)."""
        return max(track.width * track.height for track in self.info(content).video)

    def decode_work(self, content: bytes | Media) -> Work:
        """Verification decodes one frame (the first, for its pHash: frames.py), whatever the length: half a
        unit for the demuxer and the packets before it, 0.2 a megapixel of the largest video stream."""
        media = self.media(content)
        pixels = self.pixel_count(media)
        return Work(self.family, pixels, "frame pixels", file_units(media.data) + 0.5 + 0.2 * pixels / 1e6)

    def fingerprint(self, content: bytes | Media) -> str | None:
        """pHash of the first frame (the first I-frame), upright; the query side of verification.

        Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
        """
        values = self.query_fingerprints(content)
        return values[0] if values else None

    def query_fingerprints(self, content: bytes | Media) -> list[str]:
        """The first frame's pHash upright, then as stored when the display matrix turns it (frames.py).

        Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
        """
        media = self.media(content)
        from media_codecs.video import frames  # PyAV loads on first use: a worker that never decodes video

        values = media.cached("query_fingerprints", lambda: frames.first_frame_phashes(media.data, self.demuxer))
        return list(values)

    def fingerprints(self, content: bytes | Media, progress: Progress | None = None) -> list[str]:
        """The stored set: the first frame's pHash first, then frames at fixed offsets and keyframes
        (frames.py), at most frames.MAX_FINGERPRINTS distinct 16-hex-digit values of `fingerprint_kind`.
        `progress` hears how far the decoding is (frames.py).

        Raises CorruptMedia, MediaTooLarge, UnsupportedFormat.
        """
        media = self.media(content)
        from media_codecs.video import frames  # PyAV loads on first use: a worker that never decodes video

        values = media.cached("fingerprints", lambda: frames.fingerprint_set(media.data, self.demuxer, progress))
        return list(values)
