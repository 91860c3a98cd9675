"""Splitting a 64-bit pHash into the four 16-bit bands that index it. Pure."""

BANDS = 4
BAND_BITS = 16


def phash_bands(phash_hex: str) -> tuple[int, int, int, int]:
    """The four bands of a 16-hex-digit pHash, most significant first."""
    value = int(phash_hex, 16)
    mask = (1 << BAND_BITS) - 1
    return tuple((value >> (BAND_BITS * (BANDS - 1 - i))) & mask for i in range(BANDS))  # type: ignore[return-value]


def band_neighbours(value: int, radius: int) -> list[int]:
    """Every 16-bit value within `radius` flipped bits of `value` (itself included)."""
    values = [value]
    frontier = [value]
    for _ in range(radius):
        frontier = list({v ^ (1 << bit) for v in frontier for bit in range(BAND_BITS)} - set(values))
        values.extend(frontier)
    return values


def hamming(a_hex: str, b_hex: str) -> int:
    """Bits that differ between two 16-hex-digit hashes."""
    return (int(a_hex, 16) ^ int(b_hex, 16)).bit_count()


def signed_value(phash_hex: str) -> int:
    """The 64-bit hash as a signed integer (two's complement), as a BIGINT column holds it."""
    value = int(phash_hex, 16)
    return value - (1 << 64) if value >> 63 else value
