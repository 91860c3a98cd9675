"""Splitting a 64-bit pHash into the four 16-bit bands that index it. Pure."""

BANDS = 4
BAND_BITS = 16


def phash_bands(phash_hex: str) -> tuple[int, int, int, int]:
    """The four bands of a 16-hex-digit pHash, most significant first."""
    value = int(phash_hex, 16)
    mask = (1 << BAND_BITS) - 1
    return tuple((value >> (BAND_BITS * (BANDS - 1 - i))) & mask for i in range(BANDS))  # type: ignore[return-value]
