"""Generated video scenes of many kinds, each drawn from a seed: what unrelated clips look like when the
fingerprint lookup must find nothing (tests/verification/test_video.py, bench/video_false_matches.py).

A scene is (kind, size, fps, picture) plus, for variable frame rate, frame durations. Two seeds of one
kind are different clips that share only their style (two dark rooms, two gradients, two pages of text),
which is what makes a perceptual hash crowd: the lookup must tell them apart or say nothing.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from fractions import Fraction

import av
import numpy as np
from PIL import Image, ImageDraw

from tests import video

KINDS = ("moving", "flat", "fade", "high_motion", "dark", "portrait", "downscaled_4k", "variable_rate", "gradient",
         "text", "noise")
LANDSCAPE = (320, 180)
PORTRAIT = (180, 320)
UHD = (3840, 2160)


@dataclass(frozen=True)
class Scene:
    kind: str
    seed: int
    size: tuple[int, int]
    picture: video.Picture
    variable_rate: bool = False
    fps: int = 25

    def clip(self, seconds: float = 1.0, keyint: int | None = None) -> bytes:
        """The scene encoded as H.264 MP4 (frame times jittered between 1/50 s and 1/12 s when variable)."""
        if not self.variable_rate:
            return video.make_video("mp4", size=self.size, seconds=seconds, fps=self.fps, picture=self.picture,
                                    keyint=keyint, crf=23)
        return _variable_rate_clip(self, seconds, keyint)


def scene(kind: str, seed: int) -> Scene:
    """The scene of `kind` drawn from `seed` (the same pair is always the same clip)."""
    rng = np.random.default_rng([KINDS.index(kind), seed])
    if kind == "portrait":
        return Scene(kind, seed, PORTRAIT, _any_content(rng, PORTRAIT))
    if kind == "downscaled_4k":
        # 10 frames a second: drawing a 4K picture costs about half a second here
        return Scene(kind, seed, LANDSCAPE, _downscaled(_any_content(rng, UHD), UHD, LANDSCAPE), fps=10)
    if kind == "variable_rate":
        return Scene(kind, seed, LANDSCAPE, _moving_shapes(rng, LANDSCAPE), variable_rate=True)
    draw = {"moving": _moving_shapes, "flat": _flat, "fade": _fade, "high_motion": _high_motion, "dark": _dark,
            "gradient": _gradient, "text": _text_like, "noise": _noise}[kind]
    return Scene(kind, seed, LANDSCAPE, draw(rng, LANDSCAPE))


def scenes(count: int, first_seed: int = 0) -> list[Scene]:
    """`count` scenes, the kinds in turn, seeds from `first_seed` on."""
    return [scene(KINDS[index % len(KINDS)], first_seed + index // len(KINDS)) for index in range(count)]


# --- the kinds ---------------------------------------------------------------------------------------------

def _colour(rng, low: int = 0, high: int = 256) -> tuple[int, int, int]:
    return tuple(int(c) for c in rng.integers(low, high, 3))


def _moving_shapes(rng, size, speed: int = 4, count: tuple[int, int] = (3, 15), low: int = 0, high: int = 256):
    width, height = size
    background = _colour(rng, low, high)
    shapes = [(int(rng.integers(0, width)), int(rng.integers(0, height)),
               int(rng.integers(width // 30 + 2, width // 5)), int(rng.integers(-speed, speed + 1)),
               int(rng.integers(-speed, speed + 1)), _colour(rng, low, high), int(rng.integers(0, 3)))
              for _ in range(int(rng.integers(*count)))]

    def picture(index: int, w: int, h: int) -> np.ndarray:
        image = Image.new("RGB", (w, h), background)
        pen = ImageDraw.Draw(image)
        for x, y, r, dx, dy, colour, form in shapes:
            cx, cy = (x + dx * index) % w, (y + dy * index) % h
            box = (cx - r, cy - r, cx + r, cy + r)
            if form == 2:
                pen.chord(box, 0, 200, fill=colour)
            else:
                (pen.ellipse, pen.rectangle)[form](box, fill=colour)
        return np.asarray(image)
    return picture


def _flat(rng, size):
    """One colour with faint grain and, half the time, a small object drifting across."""
    colour = np.array(_colour(rng), np.int16)
    grain = float(rng.uniform(0.5, 3.0))
    dot = rng.random() < 0.5
    seed = int(rng.integers(1 << 30))

    def picture(index: int, w: int, h: int) -> np.ndarray:
        noise = np.random.default_rng([seed, index]).normal(0, grain, (h, w, 1))
        image = np.clip(colour + noise, 0, 255).astype(np.uint8)
        if dot:
            x, y = (w // 5 + 3 * index) % w, h // 2
            image[max(0, y - 4) : y + 4, max(0, x - 4) : x + 4] = 255 - colour
        return image
    return picture


def _fade(rng, size):
    """Fading in from black (from 2% to 20% of full brightness at the first frame), or out from full."""
    inner = _moving_shapes(rng, size) if rng.random() < 0.5 else _gradient(rng, size)
    start = float(rng.uniform(0.02, 0.2))
    fading_in = rng.random() < 0.7

    def picture(index: int, w: int, h: int) -> np.ndarray:
        level = min(1.0, start + index / 25) if fading_in else max(0.0, 1.0 - index / 25)
        return (inner(index, w, h) * level).astype(np.uint8)
    return picture


def _high_motion(rng, size):
    """Fast shapes over a background that flashes to another colour every few frames."""
    shapes = _moving_shapes(rng, size, speed=30, count=(5, 25))
    flashes = [_colour(rng) for _ in range(4)]
    period = int(rng.integers(2, 6))

    def picture(index: int, w: int, h: int) -> np.ndarray:
        image = shapes(index, w, h).copy()
        if (index // period) % 2:
            image[: h // 3] = flashes[(index // period) % 4]
        return image
    return picture


def _dark(rng, size):
    """A dim room: shapes and a gradient under 40 grey levels."""
    return _moving_shapes(rng, size, speed=2, low=0, high=int(rng.integers(12, 41)))


def _gradient(rng, size):
    """A linear (any angle) or radial gradient between two colours, drifting."""
    width, height = size
    first, second = np.array(_colour(rng), np.float32), np.array(_colour(rng), np.float32)
    angle = float(rng.uniform(0, 2 * np.pi))
    radial = rng.random() < 0.35
    centre = (float(rng.uniform(0, width)), float(rng.uniform(0, height)))
    drift = float(rng.uniform(-2, 2))

    def picture(index: int, w: int, h: int) -> np.ndarray:
        yy, xx = np.ogrid[0:h, 0:w]
        if radial:
            t = np.hypot(xx - centre[0] - drift * index, yy - centre[1]) / np.hypot(w, h)
        else:
            t = ((xx + drift * index) * np.cos(angle) + yy * np.sin(angle)) / (w + h) + 0.5
        t = np.clip(t, 0, 1).astype(np.float32)[..., None]
        return (first * (1 - t) + second * t).astype(np.uint8)
    return picture


def _text_like(rng, size):
    """A page of random words scrolling, or stripes, a checkerboard or a barcode, moving."""
    form = int(rng.integers(0, 4))
    ink, paper = _colour(rng, 0, 90), _colour(rng, 160, 256)
    words = ["".join(chr(int(c)) for c in rng.integers(97, 123, int(rng.integers(2, 9)))) for _ in range(60)]
    cell = int(rng.integers(4, 40))
    slope = float(rng.uniform(-1, 1))  # the stripes' angle: stripes at one angle are one picture in grey at 32x32
    bars = rng.integers(1, 6, 80)
    font = int(rng.integers(9, 26))

    def picture(index: int, w: int, h: int) -> np.ndarray:
        if form == 0:
            image = Image.new("RGB", (w, h), paper)
            pen = ImageDraw.Draw(image)
            for line in range(h // font + 3):
                text = " ".join(words[(line * 5 + k) % 60] for k in range(6))
                pen.text((6 + (line % 3) * 10, line * (font + 4) - 2 * index), text, fill=ink, font_size=font)
            return np.asarray(image)
        yy, xx = np.ogrid[0:h, 0:w]
        if form == 1:
            mask = ((xx + yy * slope + index) // cell) % 2
        elif form == 2:
            mask = ((xx + index) // cell + yy // cell) % 2
        else:
            edges = np.cumsum(np.repeat(bars, 2))
            mask = (np.searchsorted(edges, (xx + index) % edges[-1] * 1.0) % 2) * (yy < h * 0.8)
        return np.where(mask[..., None] == 1, np.array(ink, np.uint8), np.array(paper, np.uint8))
    return picture


def _noise(rng, size):
    """Fine or blotchy noise, changing every frame or slowly panned."""
    seed = int(rng.integers(1 << 30))
    cells = int(rng.integers(2, 80))
    changing = rng.random() < 0.5

    def picture(index: int, w: int, h: int) -> np.ndarray:
        generator = np.random.default_rng([seed, index if changing else 0])
        small = generator.integers(0, 256, (cells, cells * 2, 3), dtype=np.uint8)
        image = np.asarray(Image.fromarray(small).resize((w + 64, h), Image.Resampling.BICUBIC))
        shift = 0 if changing else index % 64
        return np.ascontiguousarray(image[:, shift : shift + w])
    return picture


def _any_content(rng, size):
    draw = [_moving_shapes, _gradient, _text_like, _noise][int(rng.integers(0, 4))]
    return draw(rng, size)


def _downscaled(picture, large: tuple[int, int], small: tuple[int, int]):
    """A picture drawn at `large` (4K) and scaled down to `small`, as a 4K master delivered small."""

    def scaled(index: int, w: int, h: int) -> np.ndarray:
        full = Image.fromarray(picture(index, *large))
        return np.asarray(full.resize(small, Image.Resampling.LANCZOS, reducing_gap=2.0))
    return scaled


def _variable_rate_clip(scene: Scene, seconds: float, keyint: int | None) -> bytes:
    """H.264 MP4 with a millisecond time base and frame durations jittered between 20 ms and 80 ms."""
    rng = np.random.default_rng(scene.seed)
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as output:
        stream = output.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = scene.size[0], scene.size[1], "yuv420p"
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.options = {"preset": "veryfast", "crf": "23", **({"g": str(keyint)} if keyint else {})}
        shown, index = 0, 0
        while shown < seconds * 1000:
            frame = av.VideoFrame.from_ndarray(scene.picture(index, *scene.size), format="rgb24")
            frame.pts, frame.time_base = shown, Fraction(1, 1000)
            output.mux(stream.encode(frame))
            shown, index = shown + int(rng.integers(20, 81)), index + 1
        output.mux(stream.encode(None))
    return buffer.getvalue()
