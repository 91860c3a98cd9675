"""Tests for the luminance watermark (pure module: run with ``-p no:django``)."""

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import skimage.data
from PIL import Image

from media_codecs.image.watermark import (
    MARK_BITS,
    MIN_SIDE,
    WatermarkError,
    embed_luma,
    extract_luma,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
MARK_ID = 0xC0FFEE_1234_5678_9A


def _luma(rgb: np.ndarray) -> np.ndarray:
    return rgb.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)


def _sign_rgb(rgb: np.ndarray, mark_id: int) -> np.ndarray:
    """What a caller does: mark Y, keep chroma, back to 8-bit RGB (adding dY to R, G and B)."""
    y = _luma(rgb)
    delta = embed_luma(y, mark_id) - y
    return np.clip(np.rint(rgb + delta[..., None]), 0, 255).astype(np.uint8)


def _jpeg(rgb: np.ndarray, quality: int) -> np.ndarray:
    return _recompress(rgb, "JPEG", quality)


def _recompress(rgb: np.ndarray, fmt: str, quality: int) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, fmt, quality=quality)
    buffer.seek(0)
    return np.array(Image.open(buffer).convert("RGB"))


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def signed_photo(photo) -> np.ndarray:
    return _sign_rgb(photo, MARK_ID)


def test_a_signed_photo_reads_back_its_id(signed_photo):
    assert extract_luma(_luma(signed_photo)) == MARK_ID


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    return float(10 * np.log10(255**2 / np.mean((a.astype(np.float64) - b) ** 2)))


def test_signing_keeps_photos_above_43_db_psnr(photo, signed_photo, signed_coffee):
    assert _psnr(photo, signed_photo) >= 43
    assert _psnr(skimage.data.coffee(), signed_coffee) >= 43


def test_a_flat_gradient_gets_only_a_faint_mark():
    # sky, walls, gradients: the first layer's masking leaves about 0.6 level RMS there, whatever the
    # budget; on a wholly flat image the small-copy layer adds about 0.4 (there is no texture to take it)
    rows = np.linspace(90, 200, 384, dtype=np.float32)[:, None]
    sky = np.repeat(rows, 512, axis=1)
    delta = np.rint(embed_luma(sky, MARK_ID)) - np.rint(sky)
    assert 0.4 < float(delta.std()) < 0.9
    assert float(np.abs(delta).max()) <= 4


def test_texture_gets_more_of_the_mark_than_flat_areas(photo):
    # astronaut: a flat patch of the background at the top against the textured suit
    y = _luma(photo)
    delta = embed_luma(y, MARK_ID) - y
    assert delta[0:128, 320:384].std() < 0.6 * delta[320:448, 128:256].std()


def test_embed_returns_float32_of_the_same_shape(photo):
    y = _luma(photo)[:200, :333]
    marked = embed_luma(y, MARK_ID)
    assert marked.dtype == np.float32
    assert marked.shape == y.shape


def test_a_jpeg_75_copy_still_reads(signed_photo):
    assert extract_luma(_luma(_jpeg(signed_photo, 75))) == MARK_ID


def test_a_cropped_copy_still_reads(signed_photo):
    assert extract_luma(_luma(signed_photo[37:470, 21:455])) == MARK_ID


def test_a_slightly_rotated_copy_still_reads(signed_photo):
    rotated = np.array(Image.fromarray(signed_photo).rotate(2, resample=Image.Resampling.BICUBIC))
    assert extract_luma(_luma(rotated)) == MARK_ID


def _resize(rgb: np.ndarray, scale_x: float, scale_y: float) -> np.ndarray:
    height, width = rgb.shape[:2]
    size = (round(width * scale_x), round(height * scale_y))
    return np.array(Image.fromarray(rgb).resize(size, Image.Resampling.BICUBIC))


@pytest.fixture(scope="module")
def signed_coffee() -> np.ndarray:
    return _sign_rgb(skimage.data.coffee(), MARK_ID)


@pytest.mark.parametrize("flip", ["horizontal", "vertical", "both"])
def test_a_mirrored_copy_still_reads(signed_photo, signed_coffee, flip):
    axes = {"horizontal": (1,), "vertical": (0,), "both": (0, 1)}[flip]
    for signed in (signed_photo, signed_coffee):
        assert extract_luma(_luma(np.flip(signed, axes))) == MARK_ID


@pytest.mark.parametrize("scale_x, scale_y", [(1.0, 0.8), (0.8, 1.0), (1.25, 1.0), (0.9, 1.1)])
def test_a_copy_with_another_aspect_ratio_still_reads(signed_photo, signed_coffee, scale_x, scale_y):
    for signed in (signed_photo, signed_coffee):
        assert extract_luma(_luma(_resize(signed, scale_x, scale_y))) == MARK_ID


def test_combined_flip_aspect_change_crop_and_jpeg_still_read(signed_photo, signed_coffee):
    for signed in (signed_photo, signed_coffee):
        stretched = _resize(signed[:, ::-1], 1.2, 1.0)
        height, width = stretched.shape[:2]
        cropped = np.ascontiguousarray(stretched[height // 20 : -height // 20, width // 20 : -width // 20])
        assert extract_luma(_luma(_jpeg(cropped, 75))) == MARK_ID
        rotated = Image.fromarray(_resize(signed, 0.9, 1.1)[::-1]).rotate(2, resample=Image.Resampling.BICUBIC)
        assert extract_luma(_luma(np.array(rotated))) == MARK_ID


def test_a_mirrored_stretched_webp_copy_still_reads(signed_photo, signed_coffee):
    # under WebP's block grid one tile vector is often buried among the host's autocorrelation
    # peaks (the astronaut's was, before the lattice search paired every peak of the other axis)
    for signed in (signed_photo, signed_coffee):
        copy = _recompress(_resize(np.ascontiguousarray(signed[:, ::-1]), 0.85, 1.0), "WEBP", 80)
        assert extract_luma(_luma(copy)) == MARK_ID


def test_a_copy_at_the_documented_minimum_scale_still_reads(signed_photo, signed_coffee):
    # docs/api.md: a copy keeps the mark down to 75% of the signed size, re-saved as JPEG 75
    for signed in (signed_photo, signed_coffee):
        height, width = signed.shape[:2]
        small = Image.fromarray(signed).resize((round(width * 0.75), round(height * 0.75)), Image.Resampling.LANCZOS)
        assert extract_luma(_luma(_jpeg(np.array(small), 75))) == MARK_ID


def test_an_unmarked_photo_gives_none_even_mirrored_or_stretched(photo):
    for variant in (photo[:, ::-1], photo[::-1], _resize(photo, 1.0, 0.8), _resize(photo, 1.25, 1.0)):
        assert extract_luma(_luma(np.ascontiguousarray(variant))) is None


def test_an_unmarked_photo_gives_none(photo):
    assert extract_luma(_luma(photo)) is None


def test_random_noise_gives_none():
    rng = np.random.default_rng(7)
    for shape in [(256, 256), (300, 451)]:
        assert extract_luma(rng.uniform(0, 255, shape).astype(np.float32)) is None


def test_a_flat_grey_image_gives_none():
    assert extract_luma(np.full((256, 256), 128, dtype=np.float32)) is None


def test_an_image_smaller_than_the_minimum_raises():
    with pytest.raises(WatermarkError):
        embed_luma(np.zeros((MIN_SIDE - 1, 500), dtype=np.float32), MARK_ID)


def test_a_tiny_image_reads_as_none_rather_than_raising():
    assert extract_luma(np.zeros((40, 40), dtype=np.float32)) is None


def test_an_id_outside_64_bits_raises():
    y = np.full((256, 256), 100, dtype=np.float32)
    with pytest.raises(WatermarkError):
        embed_luma(y, 1 << MARK_BITS)
    with pytest.raises(WatermarkError):
        embed_luma(y, -1)


def test_different_ids_read_back_distinctly(photo):
    tile = photo[:256, 128:384]
    ids = [0, (1 << MARK_BITS) - 1, 0x0123_4567_89AB_CDEF, 0x8000_0000_0000_0001]
    assert [extract_luma(_luma(_sign_rgb(tile, mark_id))) for mark_id in ids] == ids


def test_an_odd_sized_grayscale_image_round_trips():
    gray = skimage.data.camera()[:301, :257].astype(np.float32)
    marked = np.clip(np.rint(embed_luma(gray, MARK_ID)), 0, 255)
    assert extract_luma(marked) == MARK_ID


def test_embedding_is_deterministic(photo):
    y = _luma(photo)[:256, :256]
    assert np.array_equal(embed_luma(y, MARK_ID), embed_luma(y, MARK_ID))


def test_the_module_imports_without_django():
    code = "import media_codecs.image.watermark, sys; assert 'django' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, check=True)


@pytest.mark.parametrize("shape", [(512, 1024), (130, 257), (7, 9)])
def test_the_masking_grid_is_the_mean_of_each_whole_block(shape):
    from media_codecs.image.watermark import _GRID, _block_means

    rows = np.random.default_rng(sum(shape)).random(shape, dtype=np.float32) * 255
    height, width = shape[0] // _GRID * _GRID, shape[1] // _GRID * _GRID
    expected = rows[:height, :width].reshape(height // _GRID, _GRID, width // _GRID, _GRID).mean(axis=(1, 3))
    np.testing.assert_allclose(_block_means(rows), expected, rtol=1e-6, atol=1e-4)


# ---------------------------------------------------------------- small re-shared copies (second layer)


def _scaled_to_short_side(rgb: np.ndarray, side: int, resample) -> np.ndarray:
    height, width = rgb.shape[:2]
    factor = side / min(height, width)
    size = (round(width * factor), round(height * factor))
    if resample == "opencv-area":
        import cv2

        return cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    return np.array(Image.fromarray(rgb).resize(size, resample))


@pytest.fixture(scope="module")
def retina() -> np.ndarray:
    return skimage.data.retina()  # 1411 x 1411: a 256-pixel copy is an 18% scale


@pytest.fixture(scope="module")
def signed_retina(retina) -> np.ndarray:
    return _sign_rgb(retina, MARK_ID)


def test_a_small_reshared_copy_still_reads(signed_photo, signed_retina):
    # issue 19: short side 256 px (Lanczos), JPEG 75, from originals of 512 and 1411 px
    for signed in (signed_photo, signed_retina):
        copy = _jpeg(_scaled_to_short_side(signed, 256, Image.Resampling.LANCZOS), 75)
        assert extract_luma(_luma(copy)) == MARK_ID


@pytest.mark.parametrize("resample", [Image.Resampling.BICUBIC, "opencv-area"])
def test_small_copies_made_by_other_resamplers_read(signed_photo, signed_retina, resample):
    for signed in (signed_photo, signed_retina):
        copy = _jpeg(_scaled_to_short_side(signed, 256, resample), 75)
        assert extract_luma(_luma(copy)) == MARK_ID


def test_a_320_pixel_webp_copy_reads(signed_retina):
    copy = _recompress(_scaled_to_short_side(signed_retina, 320, Image.Resampling.LANCZOS), "WEBP", 80)
    assert extract_luma(_luma(copy)) == MARK_ID


def test_small_copies_of_unmarked_photos_give_none(photo, retina):
    for image in (photo, retina, skimage.data.immunohistochemistry()):
        for side in (256, 200):
            copy = _jpeg(_scaled_to_short_side(image, side, Image.Resampling.LANCZOS), 75)
            assert extract_luma(_luma(copy)) is None


def test_signing_lands_every_coded_bit_on_its_lattice(photo):
    # the small-copy layer moves each coded bit's projection in the canonical copy onto its lattice point
    import cv2

    from media_codecs import ecc
    from media_codecs.image.watermark import _QIM_STEP, CANON, _canon_layout, _canon_projections

    marked = embed_luma(_luma(photo), MARK_ID)
    canonical = cv2.resize(marked, (CANON, CANON), interpolation=cv2.INTER_AREA)
    coded = ecc.conv_encode(ecc.payload_bits(MARK_ID))
    offset = _canon_projections(canonical) / _QIM_STEP - _canon_layout().dither - coded / 2
    miss = offset - np.rint(offset)  # in lattice steps: 0 on the point, 0.5 on the other bit's
    assert float(np.abs(miss).max()) < 0.05


# the last shape is past _WHOLE_PLANE_PIXELS: its canonical copy is summed band by band
@pytest.mark.parametrize("shape", [(256, 256), (517, 300), (1411, 1030), (2050, 260), (2101, 2003)])
def test_the_canonical_copy_built_band_by_band_is_the_area_resize(shape):
    import cv2

    from media_codecs.image.watermark import CANON, _host_measures

    y = np.random.default_rng(sum(shape)).random(shape, dtype=np.float32) * 255
    canonical = _host_measures(lambda first, last: y[first:last], *shape)[1].result()
    expected = cv2.resize(y, (CANON, CANON), interpolation=cv2.INTER_AREA)
    np.testing.assert_allclose(canonical, expected, atol=2e-3)


def test_a_strip_longer_than_16384_pixels_carries_only_the_first_layer():
    # the second layer's resampling matrices grow with the long side: it is left out past 16384
    from media_codecs.image.watermark import _host_measures

    strip = np.full((300, 16385), 120, dtype=np.float32)
    assert _host_measures(lambda first, last: strip[first:last], *strip.shape)[1] is None


def test_an_image_under_256_pixels_a_side_carries_only_the_first_layer():
    from media_codecs.image.watermark import _host_measures

    y = skimage.data.camera()[:255, :400].astype(np.float32)
    assert _host_measures(lambda first, last: y[first:last], *y.shape)[1] is None
    marked = np.clip(np.rint(embed_luma(y, MARK_ID)), 0, 255)
    assert extract_luma(marked) == MARK_ID


@pytest.mark.parametrize("size", [256, 301, 512, 1411, 4000])
def test_the_banded_round_trip_is_the_resampling_matrices_product(size):
    from media_codecs.image.watermark import _apply_round_trip, _area_matrix, _linear_matrix, _round_trip

    dense = _area_matrix(size) @ _linear_matrix(size)
    change = np.random.default_rng(size).normal(size=dense.shape).astype(np.float32)
    trip = _round_trip(size)
    np.testing.assert_allclose(_apply_round_trip(change, trip, trip), dense @ change @ dense.T, atol=1e-4)


def test_embedding_in_bands_equals_embedding_the_whole_plane_past_the_kept_size(monkeypatch):
    # past _WHOLE_PLANE_PIXELS the canonical copy is summed band by band: the same mark to rounding
    from media_codecs.image import watermark

    y = np.asarray(Image.fromarray(skimage.data.astronaut()).resize((2100, 2000)).convert("L"), dtype=np.float32)
    banded = embed_luma(y, MARK_ID)
    monkeypatch.setattr(watermark, "_WHOLE_PLANE_PIXELS", y.size)
    np.testing.assert_allclose(banded, embed_luma(y, MARK_ID), atol=2e-3)
