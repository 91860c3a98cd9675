from __future__ import annotations

import io
import re
from pathlib import Path

import imagehash
import numpy as np
import pytest
import scipy.fftpack
from conftest import encode, photo
from PIL import Image

from media_codecs import get_codec
from media_codecs.image import phash

COLOUR_SAMPLES = (
    "astronaut",
    "chelsea",
    "coffee",
    "rocket",
    "immunohistochemistry",
    "hubble_deep_field",
    "retina",
    "cat",
    "colorwheel",
    "logo",
)
GREY_SAMPLES = ("camera", "coins", "moon", "page", "text", "clock", "brick", "grass", "gravel")


def _random_images() -> list[Image.Image]:
    rng = np.random.default_rng(2026)
    sizes = ((64, 80), (33, 97), (300, 200))
    noise = [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for h, w in sizes]
    flat = [Image.new("L", (50, 40), value) for value in (0, 1, 128, 255)] + [Image.new("RGB", (9, 9), (10, 200, 30))]
    ramp = np.tile(np.arange(64, dtype=np.uint8) * 4, (48, 1))
    return [*noise, *flat, Image.fromarray(ramp), Image.fromarray(ramp.T.copy())]


@pytest.mark.parametrize("name", COLOUR_SAMPLES + GREY_SAMPLES)
def test_hash_of_a_sample_photo_equals_imagehash(name: str) -> None:
    image = Image.fromarray(photo(name))
    assert phash.phash_hex(image) == str(imagehash.phash(image, hash_size=8))


def test_hash_of_random_flat_and_ramp_images_equals_imagehash() -> None:
    for image in _random_images():
        assert phash.phash_hex(image) == str(imagehash.phash(image))


def test_dct_matches_scipy_to_the_last_bit() -> None:
    rng = np.random.default_rng(7)
    blocks = [rng.integers(0, 256, (32, 32)).astype(np.uint8) for _ in range(200)]
    blocks += [np.full((32, 32), value, np.uint8) for value in (0, 3, 128, 255)]
    for block in blocks:
        expected = scipy.fftpack.dct(scipy.fftpack.dct(block, axis=0), axis=1)
        ours = phash._dct_ii(phash._dct_ii(block.astype(np.float64).T).T)
        assert np.array_equal(ours, expected)


@pytest.mark.parametrize(("image_format", "options"), [("JPEG", {}), ("PNG", {}), ("WEBP", {"lossless": True})])
def test_codecs_hash_the_decoded_file_like_imagehash_does(image_format: str, options: dict) -> None:
    data = encode(photo("chelsea"), image_format, **options)
    codec = get_codec(image_format.lower())
    result = codec.fingerprint(data)
    assert re.fullmatch("[0-9a-f]{16}", result)

    assert result == str(imagehash.phash(Image.open(io.BytesIO(data))))


def test_the_runtime_module_needs_neither_imagehash_nor_scipy() -> None:
    source = Path(phash.__file__).read_text()
    assert not re.search(r"^\s*(import|from)\s+(imagehash|scipy)", source, re.MULTILINE)


def test_a_flat_picture_of_any_colour_has_no_distinctive_hash() -> None:
    rng = np.random.default_rng(3)
    flats = [Image.new("RGB", (120, 90), colour) for colour in ((0, 0, 0), (255, 255, 255), (120, 160, 200))]
    # A dark frame with sensor-like noise of one grey level is still flat.
    flats.append(Image.fromarray(np.clip(16 + rng.normal(0, 1, (90, 120)), 0, 255).astype(np.uint8)))
    # Why: every flat picture hashes within a bit of every other (far inside any lookup's distance).
    hashes = [int(phash.phash_hex(image), 16) for image in flats[:3]]
    assert max((a ^ b).bit_count() for a in hashes for b in hashes) <= 1
    assert all(phash.distinctive_phash_hex(image) is None for image in flats)


@pytest.mark.parametrize("name", ["astronaut", "moon", "page"])
def test_a_picture_with_structure_keeps_its_hash(name: str) -> None:
    image = Image.fromarray(photo(name))
    assert phash.distinctive_phash_hex(image) == phash.phash_hex(image)
    ramp = Image.fromarray(np.tile(np.arange(64, dtype=np.uint8), (48, 1)))  # a gentle gradient is structure
    assert phash.distinctive_phash_hex(ramp) == phash.phash_hex(ramp)


def test_the_codecs_give_no_fingerprint_for_a_flat_picture() -> None:
    buffer = io.BytesIO()
    Image.new("RGB", (256, 192), (120, 160, 200)).save(buffer, "JPEG", quality=85)
    assert get_codec("jpeg").fingerprint(buffer.getvalue()) is None


def _textured(width: int, height: int, mode: str) -> Image.Image:
    rng = np.random.default_rng(width * height)
    coarse = Image.fromarray(rng.integers(0, 256, (height // 16 + 2, width // 16 + 2, 3), dtype=np.uint8))
    return coarse.resize((width, height), Image.Resampling.BILINEAR).convert(mode)


# Over a megapixel the thumbnail is made a strip of rows at a time (pixels.STRIP_PIXELS): still imagehash's
# bits, for every mode, odd heights, narrow and tall pictures, and OpenCV's arrays as for Pillow's images.
@pytest.mark.parametrize(("width", "height", "mode"), [(1999, 1501, "RGB"), (1500, 1001, "RGBA"), (1700, 1300, "L"),
                                                        (1200, 1100, "P"), (1200, 1100, "CMYK"), (20, 70_001, "RGB"),
                                                        (32, 40_000, "L"), (70_001, 17, "RGB")])
def test_a_large_picture_hashes_in_strips_like_imagehash(width: int, height: int, mode: str) -> None:
    image = _textured(width, height, mode)
    assert width * height > phash.pixels.STRIP_PIXELS
    assert phash.phash_hex(image) == str(imagehash.phash(image))
    if mode in ("RGB", "RGBA"):
        assert phash.phash_hex(np.asarray(image)) == str(imagehash.phash(image))


@pytest.mark.parametrize("peak", [200, 60_000])
def test_a_large_sixteen_bit_picture_is_scaled_as_a_whole(peak: int) -> None:
    values = (np.asarray(_textured(1500, 1200, "L"), dtype=np.uint32) * peak // 255).astype(np.uint16)
    image = Image.fromarray(values)
    assert image.mode == "I;16"
    whole = np.clip(values.astype(np.int64) // (257 if peak > 255 else 1), 0, 255).astype(np.uint8)
    assert phash.phash_hex(image) == str(imagehash.phash(Image.fromarray(whole, "L")))


def test_the_pass_order_rule_is_pillows() -> None:
    rng = np.random.default_rng(11)
    for width in range(1, 80, 3):
        for height in range(1, 240, 7):
            image = Image.fromarray(rng.integers(0, 256, (height, width), dtype=np.uint8))
            whole = image.resize((32, 32), Image.Resampling.LANCZOS)
            first = (width, 32) if phash._columns_first(width, height) else (32, height)
            assert image.resize(first, Image.Resampling.LANCZOS).resize((32, 32), Image.Resampling.LANCZOS) == whole


def test_a_picture_over_the_read_view_size_reads_as_the_whole_picture_does() -> None:
    """Over READ_VIEW_PIXELS the codec keeps only the mark's window and the pHash's thumbnail, and lets the
    decoded pixels go before reading: the same answers."""
    from media_codecs.image import base, pixels

    width, height = 4400, 3700
    assert width * height > base.READ_VIEW_PIXELS
    data = encode(np.asarray(_textured(width, height, "RGB")), "PNG", compress_level=1)
    codec = get_codec("png")
    media = codec.media(data)
    found = codec.fingerprint(media), codec.extract_watermark(media)
    assert "pixels" not in media._cache  # let go
    whole = Image.open(io.BytesIO(data))
    assert found == (str(imagehash.phash(whole)), pixels.read_watermark(whole))


def test_decided_bits_count_the_terms_that_structure_sets() -> None:
    from media_codecs.image.phash import decided_bits

    flat = np.full((32, 32), 128.0)
    ramp = np.tile(np.linspace(0, 255, 32), (32, 1))
    texture = np.random.default_rng(5).integers(0, 256, (32, 32)).astype(np.float64)
    assert decided_bits(flat, 0.02) == 0
    assert decided_bits(ramp, 0.02) < 16 <= decided_bits(texture, 0.02)
