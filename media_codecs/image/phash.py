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

import math

import numpy as np
from PIL import Image

HASH_SIZE = 8
_SIDE = HASH_SIZE * 4  # imagehash's highfreq_factor 4
# Below this spread (the standard deviation of the 32x32 grey thumbnail the hash is computed from, in grey
# levels) a picture has no perceptual identity: its AC terms are rounding noise, so every flat picture of
# any colour gets one and the same hash, and a lookup would "find" an unrelated record.
MIN_THUMBNAIL_SPREAD = 1.5


def phash_hex(image: Image.Image) -> str:
    """Return the perceptual hash of `image` as 16 lowercase hex digits.

    Raises what Pillow raises while converting or resizing; callers translate it.
    """
    return _hash_of(_thumbnail(image))


def distinctive_phash_hex(image: Image.Image) -> str | None:
    """`phash_hex`, or None for a picture too flat for its hash to identify it (MIN_THUMBNAIL_SPREAD)."""
    pixels = _thumbnail(image)
    return _hash_of(pixels) if float(pixels.std()) >= MIN_THUMBNAIL_SPREAD else None


def _thumbnail(image: Image.Image) -> np.ndarray:
    grey = _eight_bit(image).convert("L").resize((_SIDE, _SIDE), Image.Resampling.LANCZOS)
    return np.asarray(grey, dtype=np.float64)


def _eight_bit(image: Image.Image) -> Image.Image:
    """A 16-bit grey picture scaled to 8 bits: Pillow's conversion to L clips it at 255, which turns a
    16-bit photograph white (imagehash hashes that white picture; we hash the photograph)."""
    if not image.mode.startswith("I"):
        return image
    values = np.asarray(image, dtype=np.int64)
    if values.size and int(values.max()) > 255:
        values = np.clip(values, 0, 65535) // 257
    return Image.fromarray(np.clip(values, 0, 255).astype(np.uint8), "L")


def _hash_of(pixels: np.ndarray) -> str:
    coefficients = _dct_ii(_dct_ii(pixels.T).T)  # axis 0, then axis 1
    low = coefficients[:HASH_SIZE, :HASH_SIZE]
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
