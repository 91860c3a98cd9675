"""What WAV, FLAC and MP3 share: the stream limits, one decode per file, and the re-encoding hook.

A format module knows its container: where the token travels, what the header declares
(`stream_info`, read without decoding), how to decode the audio (`decode`) and how to put new
samples back among the file's metadata (`reencode`). The watermark (`watermark/`) works on
the samples as a stream of blocks (`decode_blocks`, read twice: once to plan the mark from the
8 kHz channel mix, once to add it) and hands the marked blocks to `encode_blocks`, so marking
never holds the decoded audio; audio shorter than its minimum (`watermark.MIN_EMBED_SECONDS`) is
signed with the token alone. `samples` decodes the whole file once per Media, for reading.

Limits, checked from the header when a file is opened, before anything is decoded (spec:
at most 20 minutes; 8 channels; 8 to 192 kHz). A rate above 192 kHz, more channels or a longer
duration is MediaTooLarge (413); a rate below 8 kHz is UnsupportedFormat; a stream that declares
no samples is CorruptMedia. Decoding is bounded separately by MAX_DECODED_SAMPLES.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from media_codecs.base import Codec, Media, Work, file_units
from media_codecs.errors import CorruptMedia, MediaTooLarge, UnsupportedFormat
from media_codecs.label import Label
from media_codecs.progress import Progress, counted, finish, part, parts

if TYPE_CHECKING:
    import numpy as np

MAX_SECONDS = 20 * 60
MAX_CHANNELS = 8
MIN_SAMPLE_RATE = 8_000
MAX_SAMPLE_RATE = 192_000
# Samples (frames x channels) one decode may produce: 20 minutes of 48 kHz stereo, 922 MB as float64.
# Longer combinations the header limits allow (20 minutes of 96 kHz 5.1) can be token-signed, never decoded.
MAX_DECODED_SAMPLES = MAX_SECONDS * 48_000 * 2
# Marking streams the audio in blocks of BLOCK_FRAMES frames and keeps only the 8 kHz channel mix, the mark
# (float32) and per-cell arrays: about 7 MB a minute whatever the rate and channel count, on top of the
# file's own copies in the request (four of them in bench/hostile.py). Past this many samples (frames x
# channels: 6.8 minutes of 44.1 kHz stereo, 13.6 minutes mono) audio is signed with its token alone: the
# longer files bench/hostile.py marked came too close to or over the 500 MB a worker may use
# (docs/performance.md, "Figures behind code comments").
MAX_MARKED_SAMPLES = 36_000_000
BLOCK_FRAMES = 1 << 16
# Verification reads the mark from at most this much audio, from the middle: the mark repeats every
# few seconds, and a long file must cost a public request neither minutes nor a gigabyte.
READ_SECONDS = 30
# Of a watermark's progress, the first pass (decode, analyse, plan the mark); the second decodes again, adds the
# mark and encodes, a little more work.
PLAN_SHARE = 0.45
TOKEN_DESCRIPTION = "svc_token"  # the name our token goes by in ID3 TXXX frames and Vorbis comments


@dataclass(frozen=True)
class StreamInfo:
    """What the header declares about the audio."""

    sample_rate: int
    channels: int
    frames: int  # samples per channel (MP3: from the Xing/VBRI header or a frame-header scan)
    bits_per_sample: int = 0  # 0 where the format has none (MP3)

    @property
    def seconds(self) -> float:
        return self.frames / self.sample_rate


def check_stream(info: StreamInfo) -> None:
    """Refuse a stream outside the limits. Raises MediaTooLarge, UnsupportedFormat, CorruptMedia."""
    if info.sample_rate <= 0 or info.channels <= 0:
        raise CorruptMedia("the audio header declares no sample rate or no channels")
    if info.frames <= 0:
        raise CorruptMedia("the audio holds no samples")
    if info.sample_rate > MAX_SAMPLE_RATE:
        raise MediaTooLarge(f"{info.sample_rate} Hz is over the limit of {MAX_SAMPLE_RATE} Hz")
    if info.sample_rate < MIN_SAMPLE_RATE:
        raise UnsupportedFormat(f"{info.sample_rate} Hz is under the minimum of {MIN_SAMPLE_RATE} Hz")
    if info.channels > MAX_CHANNELS:
        raise MediaTooLarge(f"{info.channels} channels is over the limit of {MAX_CHANNELS}")
    if info.seconds > MAX_SECONDS:
        raise MediaTooLarge(f"{info.seconds:.0f} seconds of audio is over the limit of {MAX_SECONDS} seconds")


def check_token(token: str) -> bytes:
    """The token as the ASCII bytes every audio container stores. Raises ValueError for a bad token."""
    if not token or not token.isascii() or not token.isprintable():
        raise ValueError("the token must be a non-empty string of printable ASCII characters")
    return token.encode("ascii")


def check_samples(samples: np.ndarray, channels: int) -> np.ndarray:
    """`samples` as a C-contiguous float64 (frames, channels) array in [-1, 1].

    Raises ValueError for another shape, no frames, or values that are not finite.
    """
    import numpy as np

    array = np.asarray(samples, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != channels or array.shape[0] == 0:
        raise ValueError(f"samples must be a (frames, {channels}) array with at least one frame")
    if not np.isfinite(array).all():
        raise ValueError("samples must be finite")
    return np.ascontiguousarray(np.clip(array, -1.0, 1.0))


class AudioCodec(Codec):
    family = "audio"
    token_source = "metadata"  # ID3 TXXX, Vorbis comment or RIFF chunk: all reported as "metadata"
    can_watermark = True
    # The hash covers every byte the decoder is given (WAV's fmt and data, FLAC's STREAMINFO and frames, the
    # MPEG frames): only the token container is left out of it.
    hash_covers_mark = True

    @abstractmethod
    def stream_info(self, container: object) -> StreamInfo:
        """Rate, channels and length as the parsed container declares them."""

    @abstractmethod
    def decode(self, media: Media) -> np.ndarray:
        """Decode every sample: float64 (frames, channels) in [-1, 1]. Raises CorruptMedia."""

    @abstractmethod
    def decode_blocks(self, media: Media) -> Iterator[np.ndarray]:
        """The samples `decode` returns, as float64 (frames, channels) blocks of at most BLOCK_FRAMES
        frames, in order, decoded as they are asked for. Raises CorruptMedia, MediaTooLarge."""

    @abstractmethod
    def encode_blocks(self, media: Media, blocks: Iterable[np.ndarray]) -> bytes:
        """The same format and layout carrying the samples of `blocks` (float (frames, channels) in
        [-1, 1], encoded as they come), every piece of metadata (and token) kept.

        Raises UnsupportedFormat for a layout the encoder cannot write.
        """

    def reencode(self, media: Media, samples: np.ndarray) -> bytes:
        """The same format and layout carrying `samples`, every piece of metadata (and token) kept.

        Raises UnsupportedFormat for a layout the encoder cannot write, ValueError for bad samples.
        """
        samples = check_samples(samples, self.stream_info(media.container).channels)
        return self.encode_blocks(media, (samples[start : start + BLOCK_FRAMES]
                                          for start in range(0, len(samples), BLOCK_FRAMES)))

    def open(self, data: bytes) -> Media:
        """Parse once and refuse, before any decoding, a stream outside the limits."""
        media = super().open(data)
        check_stream(self.stream_info(media.container))
        return media

    def watermark_possible(self, content: bytes | Media) -> bool:
        """From the header: at least the mark's minimum length, at most MAX_MARKED_SAMPLES."""
        from media_codecs.audio import watermark

        info = self.info(content)
        return (self.can_watermark and info.seconds >= watermark.MIN_EMBED_SECONDS
                and info.frames * info.channels <= MAX_MARKED_SAMPLES)

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        """Plan the mark from one pass over the decoded blocks, then decode again, add the mark and
        re-encode block by block among the file's metadata: memory stays bounded however long the audio.
        `progress` hears the blocks read: the first pass is PLAN_SHARE of the work, the second the rest.

        Raises UnsupportedFormat for audio too short to carry the mark (see `watermark_possible`)
        or a layout the encoder cannot write, CorruptMedia, MediaTooLarge.
        """
        from media_codecs.audio import watermark

        media = self.media(content)
        info = self.stream_info(media.container)
        if info.frames * info.channels > MAX_DECODED_SAMPLES:
            raise MediaTooLarge(f"{info.frames * info.channels:,} samples is over the decoding limit of "
                                f"{MAX_DECODED_SAMPLES:,}")
        blocks = -(-info.frames // BLOCK_FRAMES)
        planning, marking = parts(progress, [PLAN_SHARE, 1 - PLAN_SHARE])
        try:
            mark = watermark.plan(counted(self.decode_blocks(media), blocks, part(planning, 0.0, 0.9)),
                                  info.sample_rate, mark_id)
        except watermark.WatermarkError as error:
            raise UnsupportedFormat(f"this audio cannot carry the watermark: {error}") from None
        finish(planning)
        return self.encode_blocks(media, mark.add_to(counted(self.decode_blocks(media), blocks, marking)))

    def extract_watermark(self, content: bytes | Media) -> int | None:
        """The mark id read from at most READ_SECONDS from the middle (decoded once per file), or None."""
        from media_codecs.audio import watermark

        samples, rate = self.middle(content)
        return watermark.extract(samples, rate)

    def middle(self, content: bytes | Media, seconds: float = READ_SECONDS) -> tuple[np.ndarray, int]:
        """At most `seconds` of decoded samples from the middle of the audio (all of it when shorter),
        decoded once per Media. Raises CorruptMedia, MediaTooLarge."""
        media = self.media(content)
        info = self.stream_info(media.container)
        frames = min(info.frames, int(seconds * info.sample_rate))
        if frames == info.frames:
            return self.samples(media)
        start = (info.frames - frames) // 2
        window = media.cached("middle", lambda: _read_only(self.decode_window(media, start, frames)))
        return window, info.sample_rate

    def decode_window(self, media: Media, start: int, frames: int) -> np.ndarray:
        """`frames` frames from frame `start`: formats that can seek override this to decode only them."""
        import numpy as np

        return np.array(self.decode(media)[start : start + frames])

    def decode_work(self, content: bytes | Media) -> Work:
        """The samples reading the mark decodes (at most READ_SECONDS from the middle, as `middle` reads
        them), from the header. The reader's cost grows with the seconds read more than with the rate:
        0.2 units a second and 0.35 per million samples (docs/performance.md, "Verification cost budget")."""
        media = self.media(content)
        info = self.stream_info(media.container)
        frames = min(info.frames, int(READ_SECONDS * info.sample_rate))
        seconds, samples = frames / info.sample_rate, frames * info.channels
        units = 0.2 * seconds + 0.35 * samples / 1e6
        return Work(self.family, samples, "samples", file_units(media.data) + units)

    def info(self, content: bytes | Media) -> StreamInfo:
        """What the header declares. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        return self.stream_info(self.media(content).container)

    def samples(self, content: bytes | Media) -> tuple[np.ndarray, int]:
        """The decoded samples (float64, (frames, channels), in [-1, 1]) and the sample rate, decoded once
        per Media. Raises MediaTooLarge past MAX_DECODED_SAMPLES (from the header), CorruptMedia."""
        media = self.media(content)
        info = self.stream_info(media.container)
        if info.frames * info.channels > MAX_DECODED_SAMPLES:
            raise MediaTooLarge(f"{info.frames * info.channels:,} samples is over the decoding limit of "
                                f"{MAX_DECODED_SAMPLES:,}")
        return media.cached("samples", lambda: _read_only(self.decode(media))), info.sample_rate


def _read_only(samples: np.ndarray) -> np.ndarray:
    samples.flags.writeable = False  # shared through the Media cache: a caller must copy to change it
    return samples


def libsndfile_window(decoder_input: bytes, start: int, frames: int, what: str) -> np.ndarray:
    """`frames` frames from frame `start` of a FLAC or MP3 stream, libsndfile seeking there first.

    Raises CorruptMedia."""
    import io

    import soundfile  # loaded on first use: a worker that never decodes audio does not carry it

    try:
        samples, _ = soundfile.read(io.BytesIO(decoder_input), start=start, frames=frames, dtype="float64",
                                    always_2d=True)
    except (soundfile.SoundFileError, RuntimeError) as error:
        raise CorruptMedia(f"the {what} audio does not decode: {error}") from None
    if len(samples) == 0:
        raise CorruptMedia(f"the {what} audio does not decode")
    return samples
