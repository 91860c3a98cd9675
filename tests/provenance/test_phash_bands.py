"""The pure band arithmetic behind the near-match lookup."""

import pytest

from provenance.phash_bands import band_neighbours, hamming, phash_bands, signed_value


def test_bands_are_taken_most_significant_first():
    assert phash_bands("8f0f12345678abcd") == (0x8F0F, 0x1234, 0x5678, 0xABCD)


@pytest.mark.parametrize(("radius", "count"), [(0, 1), (1, 17), (2, 1 + 16 + 120)])
def test_band_neighbours_are_every_value_within_the_radius_once(radius, count):
    neighbours = band_neighbours(0x8F0F, radius)
    assert len(neighbours) == len(set(neighbours)) == count
    assert neighbours[0] == 0x8F0F
    assert all((value ^ 0x8F0F).bit_count() <= radius and 0 <= value < 1 << 16 for value in neighbours)


@pytest.mark.parametrize(("a", "b", "distance"), [
    ("0000000000000000", "0000000000000000", 0),
    ("0000000000000000", "0000000000000001", 1),
    ("8000000000000000", "0000000000000000", 1),
    ("0001000100010001", "0000000000000000", 4),  # one bit in each band
    ("ffffffffffffffff", "0000000000000000", 64),
    ("8f0f0f0f0f0f0f0f", "70f0f0f0f0f0f0f0", 64),
])
def test_hamming_counts_the_bits_that_differ(a, b, distance):
    assert hamming(a, b) == hamming(b, a) == distance


@pytest.mark.parametrize(("phash", "value"), [
    ("0000000000000000", 0),
    ("7fffffffffffffff", (1 << 63) - 1),
    ("8000000000000000", -(1 << 63)),
    ("ffffffffffffffff", -1),
    ("8f0f0f0f0f0f0f0f", 0x8F0F0F0F0F0F0F0F - (1 << 64)),
])
def test_signed_value_is_the_twos_complement_a_bigint_holds(phash, value):
    assert signed_value(phash) == value
    assert f"{value & ((1 << 64) - 1):016x}" == phash
