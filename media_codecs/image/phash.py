"""The 64-bit DCT perceptual hash, bit-identical to `imagehash.phash(image, hash_size=8)` (but for 16-bit
grey pictures, which imagehash clips to white and this module scales to 8 bits).

imagehash 4.3 computes: convert to "L", resize to 32x32 with LANCZOS, a type-II unnormalised
DCT (`scipy.fftpack.dct`) along axis 0 then axis 1, keep the top-left 8x8, set each bit
where the coefficient exceeds the median of the 64, and print the bits row by row as hex.

The hash compares coefficients with their median, so a coefficient equal to the median up
to rounding decides a bit by its last floating-point digit (a flat image has 63 AC terms
that are zero in exact arithmetic). A cosine-matrix product would get those digits wrong,
so `_dct_ii` repeats scipy's own arithmetic, pocketfft's `T_dcst23` for type II: fold the
input, run an unnormalised half-complex inverse real FFT (numpy's `irfft` is the same
pocketfft code), then combine mirrored outputs with pocketfft's twiddle factors, computed
the way its `sincos_2pibyn` computes them. tests/media_codecs/test_phash.py checks the
equality against scipy and imagehash.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image

from media_codecs.image import pixels

if TYPE_CHECKING:
    from media_codecs.image.pixels import Picture

HASH_SIZE = 8
_SIDE = HASH_SIZE * 4  # imagehash's highfreq_factor 4
# Below this spread (the standard deviation of the 32x32 grey thumbnail the hash is computed from, in grey
# levels) a picture has no perceptual identity: its AC terms are rounding noise, so every flat picture of
# any colour gets one and the same hash, and a lookup would "find" an unrelated record.
MIN_THUMBNAIL_SPREAD = 1.5


def phash_hex(image: Picture) -> str:
    """Return the perceptual hash of `image` (a Pillow image or a decoded array, pixels.Picture) as
    16 lowercase hex digits.

    Raises what Pillow raises while converting or resizing; callers translate it.
    """
    return _hash_of(thumbnail(image))


def distinctive_phash_hex(image: Picture) -> str | None:
    """`phash_hex`, or None for a picture too flat for its hash to identify it (MIN_THUMBNAIL_SPREAD)."""
    return distinctive_hex_of(thumbnail(image))


def distinctive_hex_of(grey: np.ndarray) -> str | None:
    """`distinctive_phash_hex` of the picture whose `thumbnail` is `grey`."""
    return _hash_of(grey) if float(grey.std()) >= MIN_THUMBNAIL_SPREAD else None


def thumbnail(image: Picture) -> np.ndarray:
    """imagehash's grey 32x32 LANCZOS thumbnail, made a strip at a time.

    Pillow resizes in two passes, rounding to 8 bits in between: each row, then each column (or the
    columns first, for a picture much taller than wide: `_columns_first`). Strips of whole rows (or
    columns) through the first pass, pasted side by side, are the whole picture's first pass bit for
    bit, and the second pass runs on that 32-pixel band with the same coefficients. Only one strip is
    ever converted to grey, never the whole picture (49 MB more at 49 MP)."""
    width, height = pixels.picture_size(image)
    scale = _is_sixteen_bit(image)
    if width * height <= pixels.STRIP_PIXELS:
        grey = _grey(pixels.as_image(image), scale)
        return np.asarray(grey.resize((_SIDE, _SIDE), Image.Resampling.LANCZOS), dtype=np.float64)
    lanczos = Image.Resampling.LANCZOS
    if _columns_first(width, height):
        band = Image.new("L", (width, _SIDE))
        for left, strip in pixels.strips(image, columns=True):
            band.paste(_grey(strip, scale).resize((strip.width, _SIDE), lanczos), (left, 0))
    else:
        band = Image.new("L", (_SIDE, height))
        for top, strip in pixels.strips(image):
            band.paste(_grey(strip, scale).resize((_SIDE, strip.height), lanczos), (0, top))
    return np.asarray(band.resize((_SIDE, _SIDE), lanczos), dtype=np.float64)


def _columns_first(width: int, height: int) -> bool:
    """Whether Pillow's resize to 32x32 runs its vertical pass first. Pillow 13 does when the height
    shrinks by over twice what the width does (tests/media_codecs/test_phash.py compares this rule with
    Pillow's own passes); earlier versions always start with the rows."""
    return _pillow_may_start_with_columns() and height > _SIDE and height - _SIDE > 2 * (width - _SIDE)


@functools.cache
def _pillow_may_start_with_columns() -> bool:
    # A 5x101 picture: vertical first under Pillow 13's rule; a few microseconds, once.
    ramp = Image.fromarray((np.arange(505, dtype=np.uint32).reshape(101, 5) * 7919 % 251).astype(np.uint8))
    whole = ramp.resize((_SIDE, _SIDE), Image.Resampling.LANCZOS).tobytes()
    columns = ramp.resize((5, _SIDE), Image.Resampling.LANCZOS).resize((_SIDE, _SIDE), Image.Resampling.LANCZOS)
    return whole == columns.tobytes()


def _is_sixteen_bit(image: Picture) -> bool:
    """Whether a 16-bit (or wider) grey picture has a value over 255 anywhere: then every value is
    scaled to 8 bits; otherwise they are kept (and clipped)."""
    if not pixels.picture_mode(image).startswith("I"):
        return False
    return any(int(np.asarray(strip).max(initial=0)) > 255 for _, strip in pixels.strips(image))


def _grey(image: Image.Image, scale: bool) -> Image.Image:
    """Pillow's "L" conversion, but a 16-bit grey picture is scaled to 8 bits when `scale` (Pillow's
    conversion clips it at 255, which turns a 16-bit photograph white: imagehash hashes that white
    picture; we hash the photograph)."""
    if not image.mode.startswith("I"):
        return image.convert("L")
    values = np.asarray(image, dtype=np.int64)
    if scale:
        values = np.clip(values, 0, 65535) // 257
    return Image.fromarray(np.clip(values, 0, 255).astype(np.uint8), "L")


def decided_bits(grey: np.ndarray, margin: float) -> int:
    """How many of the hash's 64 bits are decided by structure: their coefficient stands off the median
    by at least `margin` times the largest AC term (the DC term, always over it, counts too).

    A picture whose energy sits in one or two terms (a gradient, a fade, two bands, a barcode seen at
    32x32) has its other bits set by terms close to the median, which the same rough layout sets the
    same way in unrelated pictures: few decided bits, and a hash that many pictures share."""
    low = _low_terms(grey)
    largest = float(np.abs(low.flatten()[1:]).max())
    return int((np.abs(low - np.median(low)) >= margin * largest).sum()) if largest else 0


def _low_terms(pixels: np.ndarray) -> np.ndarray:
    coefficients = _dct_ii(_dct_ii(pixels.T).T)  # axis 0, then axis 1
    return coefficients[:HASH_SIZE, :HASH_SIZE]


def _hash_of(pixels: np.ndarray) -> str:
    low = _low_terms(pixels)
    bits = (low > np.median(low)).flatten()
    return f"{int(''.join('1' if bit else '0' for bit in bits), 2):016x}"


def _pocketfft_twiddles(length: int) -> np.ndarray:
    """cos(2*pi*(i+1)/(4*length)) for i < length, rounded as pocketfft's sincos_2pibyn does.

    sincos_2pibyn(n) splits an index into a low part (table v1) and a high part (table v2)
    and multiplies the two unit complex numbers, so some values differ from math.cos in
    the last bit.
    """
    n = 4 * length
    angle = 0.25 * math.pi / n
    shift = 1
    while (1 << shift) * (1 << shift) < (n + 2) // 2:
        shift += 1
    mask = (1 << shift) - 1
    low = [(1.0, 0.0)] + [_unit_root(i, n, angle) for i in range(1, mask + 1)]
    high_count = ((n + 2) // 2 + mask) // (mask + 1)
    high = [(1.0, 0.0)] + [_unit_root(i * (mask + 1), n, angle) for i in range(1, high_count)]
    values = []
    for index in range(1, length + 1):
        (r1, i1), (r2, i2) = low[index & mask], high[index >> shift]
        values.append(r1 * r2 - i1 * i2)
    return np.array(values, dtype=np.float64)


def _unit_root(x: int, n: int, angle: float) -> tuple[float, float]:
    """pocketfft's sincos_2pibyn::calc for the first half circle (all a DCT-II needs)."""
    x <<= 3
    if x < 2 * n:
        if x < n:
            return math.cos(x * angle), math.sin(x * angle)
        return math.sin((2 * n - x) * angle), math.cos((2 * n - x) * angle)
    x -= 2 * n
    if x < n:
        return -math.sin(x * angle), math.cos(x * angle)
    return -math.cos((2 * n - x) * angle), math.sin((2 * n - x) * angle)


_TWIDDLES = _pocketfft_twiddles(_SIDE)


def _dct_ii(rows: np.ndarray) -> np.ndarray:
    """Unnormalised DCT-II of each row of a (k, 32) array, as scipy.fftpack.dct computes it."""
    size = rows.shape[-1]
    folded = rows.astype(np.float64, copy=True)
    folded[:, 0] *= 2
    folded[:, size - 1] *= 2
    odd, even = folded[:, 1 : size - 1 : 2].copy(), folded[:, 2 : size - 1 : 2].copy()
    folded[:, 2 : size - 1 : 2] = even - odd  # pocketfft MPINPLACE(c[k+1], c[k])
    folded[:, 1 : size - 1 : 2] = even + odd
    spectrum = np.empty((rows.shape[0], size // 2 + 1), dtype=np.complex128)
    spectrum[:, 0] = folded[:, 0]
    spectrum[:, size // 2] = folded[:, size - 1]
    spectrum[:, 1 : size // 2] = folded[:, 1 : size - 1 : 2] + 1j * folded[:, 2 : size - 1 : 2]
    # norm="forward" leaves the inverse transform unscaled, like pocketfft's fct = 1.
    real = np.fft.irfft(spectrum, n=size, norm="forward")
    return _combine_mirrored(real, size)


def _combine_mirrored(real: np.ndarray, size: int) -> np.ndarray:
    out = real.copy()
    k = np.arange(1, size // 2)
    mirrored = size - k
    t1 = _TWIDDLES[k - 1] * real[:, mirrored] + _TWIDDLES[mirrored - 1] * real[:, k]
    t2 = _TWIDDLES[k - 1] * real[:, k] - _TWIDDLES[mirrored - 1] * real[:, mirrored]
    out[:, k] = 0.5 * (t1 + t2)
    out[:, mirrored] = 0.5 * (t1 - t2)
    out[:, size // 2] = real[:, size // 2] * _TWIDDLES[size // 2 - 1]
    return out
