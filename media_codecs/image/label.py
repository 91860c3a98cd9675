"""The visible label on a picture (media_codecs/label.py): a darkened box in a corner with the label's text in
white, drawn on the decoded pixels in place (only the box's pixels are read and written)."""

from __future__ import annotations

from media_codecs.errors import UnsupportedFormat
from media_codecs.image import pixels
from media_codecs.label import Label

_SHADE = 0.35  # what the box keeps of the picture under it: dark enough for white text on any picture
_MODES = ("L", "LA", "RGB", "RGBA")  # the modes the mark's re-encode takes too
_SHADED = [int(value * _SHADE) for value in range(256)]  # one band's lookup table
RENDER_PX = 120  # letters taller than this are drawn at this size and scaled up (_text_mask)


def label_box(width: int, height: int, label: Label) -> tuple[tuple[int, int, int, int], int]:
    """Where the label goes, (left, top, right, bottom), and its font's pixel size."""
    from PIL import ImageFont

    font_px = max(1, round(width * label.size / 100))
    while True:
        font = ImageFont.load_default(size=font_px)
        left, top, right, bottom = font.getbbox(label.text)
        pad = max(2, font_px // 3)
        box_width, box_height = right - left + 2 * pad, bottom - top + 2 * pad
        if (box_width <= width * 0.9 and box_height <= height * 0.5) or font_px <= 6:
            break
        font_px = max(6, font_px * 9 // 10)  # a long label on a narrow picture: smaller, still within it
    if box_width > width or box_height > height:
        raise UnsupportedFormat("the picture is too small for its visible label")
    margin = max(1, font_px // 2)
    x = margin if label.position.endswith("left") else width - margin - box_width
    y = margin if label.position.startswith("top") else height - margin - box_height
    x, y = max(0, x), max(0, y)
    return (x, y, x + box_width, y + box_height), font_px


def _text_mask(text: str, font_px: int, size: tuple[int, int]):
    """The label's letters as an L mask of the box's `size`: drawn at most RENDER_PX tall and scaled up past
    that (FreeType's time grows with the glyphs' area; a scaled mask's edges stay smooth)."""
    from PIL import Image, ImageDraw, ImageFont

    scale = min(1.0, RENDER_PX / font_px)
    drawn_px = max(1, round(font_px * scale))
    font = ImageFont.load_default(size=drawn_px)
    left, top, _, _ = font.getbbox(text)
    pad = max(2, font_px // 3) * scale
    mask = Image.new("L", (max(1, round(size[0] * scale)), max(1, round(size[1] * scale))), 0)
    ImageDraw.Draw(mask).text((pad - left, pad - top), text, font=font, fill=255)
    return mask if scale == 1.0 else mask.resize(size, Image.Resampling.BILINEAR)


def draw_label(picture: pixels.Picture, label: Label) -> pixels.Picture:
    """The picture with the label drawn (in place for an array; a Pillow image is pasted into). Only the box's
    pixels are read and written, with Pillow's own lookup table and text drawing (no float copies)."""
    import numpy as np
    from PIL import Image, ImageChops

    width, height = pixels.picture_size(picture)
    box, font_px = label_box(width, height, label)
    mode = pixels.picture_mode(picture)
    if mode not in _MODES:
        raise UnsupportedFormat(f"a visible label is drawn on RGB, RGBA, L and LA pictures, not {mode}")
    region = pixels.crop(picture, box)
    bands = len(mode)
    opaque = [255] * 256  # the box is opaque, over a transparent picture too
    region = region.point(_SHADED * (bands - 1) + (opaque if mode in ("LA", "RGBA") else _SHADED))
    mask = _text_mask(label.text, font_px, region.size)
    # White letters over the shaded box: the lighter of the two (the letters' soft edges blend, no compositing).
    colour_bands = [mask] * (bands - 1 if mode in ("LA", "RGBA") else bands)
    alpha = [Image.new("L", mask.size, 255)] if mode in ("LA", "RGBA") else []
    letters = mask if mode == "L" else Image.merge(mode, colour_bands + alpha)
    region = ImageChops.lighter(region, letters)
    if isinstance(picture, np.ndarray):
        if not picture.flags.writeable:
            picture = picture.copy()
        picture[box[1]:box[3], box[0]:box[2]] = np.asarray(region)
        return picture
    picture.paste(region, box[:2])
    return picture
