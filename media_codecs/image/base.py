"""What JPEG, PNG and WebP share: pixel limits, one decode per file, the watermark and the pHash.

A format module only knows its container: where the canvas size is declared, which parts a
decoder needs (`decoder_input`), what it cannot watermark, and how to put re-encoded pixels
back among the original metadata (`reencode`). Pillow is only ever given the decoder input,
a file rebuilt from the coding structures alone, so metadata a hostile file piles up (millions
of comments, Photoshop blocks, text chunks) never reaches Pillow's Python-level parsers.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from media_codecs.base import SCORE_MAGIC, SCORE_NONE, Codec, Media, Work, file_units
from media_codecs.errors import MediaTooLarge
from media_codecs.image import pixels
from media_codecs.image.label import draw_label
from media_codecs.label import Label
from media_codecs.progress import Progress, steps

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

# Over this many pixels a read decodes, takes the watermark's window and the pHash's thumbnail, and lets the
# pixels go (`ImageCodec._read_view`); below it the picture stays for the reads, which may not both be needed.
READ_VIEW_PIXELS = 16_000_000


class ImageCodec(Codec):
    family = "image"
    token_source = "xmp"
    can_watermark = True
    discloses_in_metadata = True  # in the XMP packet, beside the token
    can_label = True  # a corner label drawn on the pixels (media_codecs/image/label.py)
    hash_covers_mark = True  # the hash covers the coding segments and scans the pixels are decoded from
    fingerprint_kind = "image-phash"  # imagehash's 64-bit DCT pHash
    pillow_format: ClassVar[str]  # Pillow's name for the format ("JPEG")
    # Re-encoding holds the decoded image, a marked copy and the encoder's own buffers: each format's
    # limit keeps a signing worker under 500 MB (bench/hostile.py --sign measures it). Reading needs
    # only the decode, so verification accepts up to pixels.MAX_PIXELS.
    max_sign_pixels: ClassVar[int]

    magic: ClassVar[tuple[tuple[int, bytes], ...]]  # (offset, bytes) that must all be there

    def score(self, head: bytes) -> int:
        """SCORE_MAGIC when the format's signature is in place, else SCORE_NONE."""
        if all(head[offset : offset + len(value)] == value for offset, value in self.magic):
            return SCORE_MAGIC
        return SCORE_NONE

    @abstractmethod
    def canvas_size(self, container: Any) -> tuple[int, int]:
        """Width and height as the container declares them."""

    @abstractmethod
    def decoder_input(self, media: Media) -> bytes:
        """The smallest file that decodes to the same pixels: coding structures, no metadata."""

    @abstractmethod
    def check_watermarkable(self, media: Media) -> None:
        """Raise UnsupportedFormat for what cannot be re-encoded as it was (animations, palettes...)."""

    def encoder_options(self, original: Image.Image) -> dict[str, object]:
        """What the encoder must keep of the input (JPEG: its tables and sampling); read before
        the input's pixels are let go."""
        return {}

    @abstractmethod
    def reencode(self, media: Media, marked: Image.Image, options: dict[str, object]) -> bytes:
        """Encode `marked` with `options` and put it back among the file's metadata."""

    def open(self, data: bytes) -> Media:
        """Parse once and refuse, before any decoding, a canvas over MAX_PIXELS."""
        media = super().open(data)
        pixels.check_pixel_count(*self.canvas_size(media.container))
        return media

    def pixel_count(self, content: bytes | Media) -> int:
        width, height = self.canvas_size(self.media(content).container)
        return width * height

    def decode_work(self, content: bytes | Media) -> Work:
        """The canvas's pixels: the first megapixel costs about a unit (the mark's reader sees all of it),
        each further one 0.3 (decoded and hashed; the reader keeps to its centred window)."""
        media = self.media(content)
        megapixels = self.pixel_count(media) / 1e6
        units = 1.1 * min(megapixels, 1.0) + 0.3 * max(megapixels - 1.0, 0.0)
        return Work(self.family, self.pixel_count(media), "pixels", file_units(media.data) + units)

    def decoded(self, content: bytes | Media) -> pixels.Picture:
        """The first frame's pixels (a Pillow image, or a decoder's array: pixels.Picture), decoded once
        per Media. Raises CorruptMedia, UnsupportedFormat."""
        media = self.media(content)
        return media.cached("pixels", lambda: self.decode(self.decoder_input(media)))

    def decode(self, decoder_input: bytes) -> pixels.Picture:
        """Decode the decoder input with Pillow; a format may use another decoder of the same library."""
        return pixels.decode_first_frame(decoder_input, self.pillow_format)

    def embed_watermark(self, content: bytes | Media, mark_id: int, progress: Progress | None = None,
                        label: Label | None = None) -> bytes:
        """Re-encode with `mark_id` in the luminance, keeping the file's metadata byte for byte. `progress`
        hears each step's end: decoded, marked, encoded.

        Callers embed the token afterwards. Raises UnsupportedFormat (modes, animations, too
        small), CorruptMedia, MediaTooLarge.
        """
        def paint(image: pixels.Picture) -> Image.Image:
            return pixels.watermark_image(image if label is None else draw_label(image, label), mark_id)

        return self._repainted(content, paint, steps(progress))

    def embed_label(self, content: bytes | Media, label: Label) -> bytes:
        """Re-encode with the visible label drawn, keeping the file's metadata byte for byte (no mark).
        Raises UnsupportedFormat (modes, animations, too small), CorruptMedia, MediaTooLarge."""
        return self._repainted(content, lambda image: pixels.as_image(draw_label(image, label)), steps(None))

    def _repainted(self, content: bytes | Media, paint: Callable[[pixels.Picture], Image.Image],
                   report: Callable[[float], None]) -> bytes:
        """The content decoded, `paint`ed (the decoded pixels may be changed in place: they are forgotten
        after) and re-encoded among its metadata; `report` hears each step's end: decoded, painted, encoded."""
        media = self.media(content)
        width, height = self.canvas_size(media.container)
        if width * height > self.max_sign_pixels:
            raise MediaTooLarge(f"{width}x{height} is over the signing limit of {self.max_sign_pixels:,} pixels "
                                f"for {self.format.upper()}")
        self.check_watermarkable(media)  # the modes and frames a re-encode keeps, the label's as the mark's
        image = self.decoded(media)
        report(0.3)
        options = self.encoder_options(image)
        painted = paint(image)
        del image
        media.forget("pixels")  # the encoder's buffers need the room more than the input does
        report(0.6)
        encoded = self.reencode(media, painted, options)
        report(1.0)
        return encoded

    def extract_watermark(self, content: bytes | Media) -> int | None:
        """Read the mark id from the luminance. Raises CorruptMedia, MediaTooLarge."""
        media = self.media(content)
        if self.pixel_count(media) > READ_VIEW_PIXELS:
            return pixels.read_watermark(self._read_view(media)[0])
        return pixels.read_watermark(self.decoded(media))

    def fingerprint(self, content: bytes | Media) -> str | None:
        """pHash of the decoded picture, None for a flat one (it would match every flat picture).

        Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
        from media_codecs.image import phash

        media = self.media(content)
        if self.pixel_count(media) > READ_VIEW_PIXELS:
            return phash.distinctive_hex_of(self._read_view(media)[1])
        image = self.decoded(media)
        with pixels.decoder_errors():
            return phash.distinctive_phash_hex(image)

    def _read_view(self, media: Media) -> tuple[pixels.Picture, np.ndarray]:
        """What reading takes from a large picture, taken at once: the watermark reader's centred window
        and the pHash's thumbnail. The picture is let go before the mark is read, so the reader's planes
        never sit beside it (a 49 MP picture is 147-196 MB, the reader's planes about 125 MB)."""
        from media_codecs.image import phash, watermark

        def view() -> tuple[pixels.Picture, np.ndarray]:
            picture = self.decoded(media)
            with pixels.decoder_errors():
                window, thumbnail = pixels.centre_crop(picture, watermark.READ_WINDOW), phash.thumbnail(picture)
            media.forget("pixels")
            return window, thumbnail

        return media.cached("read view", view)
