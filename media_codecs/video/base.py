"""What MP4, QuickTime, Matroska and WebM share: the limits, the token rule and the fingerprints.

A format module knows its container: how to read what the headers declare (`parse` returns a
structure with an `info`, limits.VideoInfo), where the token travels and how to remove it. Decoding
(frames.py for the fingerprints, marking.py for the watermark) only ever happens after `open` has
checked the limits (limits.py).

The watermark: the image mark's carrier in the luminance of every frame of the first video stream
(watermark.py), the file re-encoded with its codec family at its bit rate, every other stream copied
(marking.py). Any two seconds of a marked clip carry the whole id; `extract_watermark` reads a few
frames spread over the clip. A clip the mark cannot go in (frames under watermark.MIN_FRAME_SIDE on a
side) is signed with its token and fingerprints alone. A synchronous signing marks only clips up to
MAX_SYNC_MARK_PIXELS (`watermark_fits_request`): a longer one is marked through a job.
"""

from __future__ import annotations

from typing import ClassVar

from media_codecs.base import Codec, Media, Work, file_units
from media_codecs.label import Label
from media_codecs.progress import Progress
from media_codecs.video.limits import VideoInfo, check_video


def check_token(token: str) -> bytes:
    """The token as the ASCII bytes every video container stores. Raises ValueError for a bad token."""
    if not token or not token.isascii() or not token.isprintable():
        raise ValueError("the token must be a non-empty string of printable ASCII characters")
    return token.encode("ascii")


# A synchronous signing marks at most 20 seconds of 1080p at 30 frames a second, or the same pixels (well
# under half a minute of a request with the re-encode, docs/performance.md); longer clips are marked in a job.
SYNC_FRAME_RATE = 30
MAX_SYNC_MARK_PIXELS = 20 * SYNC_FRAME_RATE * 1920 * 1080


class VideoCodec(Codec):
    family = "video"
    token_source = "metadata"  # a top-level MP4 box or a Matroska trailer: reported as "metadata"
    can_watermark = True
    hash_covers_mark = True  # the content hash covers every byte but the token's: the frames the reader decodes
    fingerprint_kind = "video-phash"  # imagehash's 64-bit DCT pHash of decoded frames (frames.py)
    demuxer: ClassVar[str]  # FFmpeg's demuxer for the format: no probing of the bytes by other demuxers
    muxer: ClassVar[str]  # FFmpeg's muxer that writes the format back (a marked copy)

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
        """Verification decodes the first frame (for its pHash: frames.py) and, for the watermark, at most
        `marking.read_frame_count` frames spread over the clip (50 megapixels at most), whatever the length:
        half a unit for the demuxer and the packets before the first frame, 0.2 a megapixel of the first
        frame, 0.1 a megapixel of each frame the watermark reader decodes, 0.1 for each of its seeks."""
        from media_codecs.video import marking

        media = self.media(content)
        pixels = self.pixel_count(media)
        frames = marking.read_frame_count(pixels)
        units = 0.5 + 0.2 * pixels / 1e6 + 0.1 * frames * pixels / 1e6 + 0.1 * marking.READ_POSITIONS
        return Work(self.family, pixels, "frame pixels", file_units(media.data) + units)

    def watermark_possible(self, content: bytes | Media) -> bool:
        """From the headers: every video stream at least watermark.MIN_FRAME_SIDE pixels on its short side."""
        from media_codecs.video import watermark

        return all(min(track.width, track.height) >= watermark.MIN_FRAME_SIDE for track in self.info(content).video)

    def watermark_fits_request(self, content: bytes | Media) -> bool:
        """Up to MAX_SYNC_MARK_PIXELS frame pixels, counted from the header: the declared duration at
        SYNC_FRAME_RATE frames a second (the rate is not declared everywhere) times the first stream's size."""
        info = self.info(content)
        track = info.video[0]
        return info.seconds * SYNC_FRAME_RATE * track.width * track.height <= MAX_SYNC_MARK_PIXELS

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        """The file re-encoded with `mark_id` in every frame of its first video stream, its other streams,
        timing, display matrix and metadata kept (marking.py). `progress` hears the frames encoded.

        Raises UnsupportedFormat (frames too small, a stream the muxer refuses), CorruptMedia, MediaTooLarge.
        """
        from media_codecs.video import marking  # PyAV loads on first use

        media = self.media(content)
        return marking.mark_video(media.data, self.demuxer, self.muxer, mark_id, progress)

    def extract_watermark(self, content: bytes | Media) -> int | None:
        """The mark id read from frames spread over the clip (marking.py), or None (never a wrong id).

        Raises CorruptMedia, MediaTooLarge, UnsupportedFormat."""
        from media_codecs.video import marking

        media = self.media(content)
        return media.cached("watermark", lambda: marking.read_mark(media.data, self.demuxer))

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
