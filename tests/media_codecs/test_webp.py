from __future__ import annotations

import numpy as np
import pytest
from conftest import (
    COLOUR_SAMPLES,
    MARK_ID,
    OTHER_TOKEN,
    TOKEN,
    XMP_WITH_CREATOR,
    assert_only_codec_errors,
    decoded,
    encode,
    exif_with_orientation,
    exiftool_token,
    has_exiftool,
    photo,
    srgb_profile,
)
from PIL import Image

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, get_codec, xmp
from media_codecs.image import webp

codec = get_codec("webp")


def _rich_webp(name: str = "chelsea", **options: object) -> bytes:
    """A photo with EXIF, an ICC profile and a foreign XMP packet (extended format)."""
    return encode(
        photo(name),
        "WEBP",
        exif=exif_with_orientation(),
        icc_profile=srgb_profile(),
        xmp=XMP_WITH_CREATOR,
        **options,
    )


def _fourccs(data: bytes) -> list[bytes]:
    return [chunk.fourcc for chunk in webp.parse_chunks(data)[0]]


def _rgba_photo() -> np.ndarray:
    pixels = np.dstack([photo("coffee"), np.full(photo("coffee").shape[:2], 255, np.uint8)])
    pixels[:100, :100, 3] = 0  # a transparent corner, so encoders keep the alpha channel
    pixels[100:200, :100, 3] = 128
    return pixels


SIMPLE_INPUTS = {
    "lossy": lambda: encode(photo("astronaut"), "WEBP", quality=80),
    "lossless": lambda: encode(photo("chelsea"), "WEBP", lossless=True),
    "lossless-alpha": lambda: encode(_rgba_photo(), "WEBP", lossless=True),
    "lossy-alpha": lambda: encode(_rgba_photo(), "WEBP", quality=80),
    "greyscale": lambda: encode(photo("camera"), "WEBP", quality=85),
}


@pytest.mark.parametrize("kind", SIMPLE_INPUTS)
def test_token_round_trips_and_strips_back_to_the_original_bytes(kind: str) -> None:
    original = SIMPLE_INPUTS[kind]()
    signed = codec.embed_token(original, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == original
    assert codec.extract_token(original) is None
    assert codec.strip_token(original) == original
    assert np.array_equal(np.asarray(decoded(signed)), np.asarray(decoded(original)))


@pytest.mark.parametrize(("kind", "alpha"), [("lossy", False), ("lossless", False), ("lossless-alpha", True)])
def test_a_simple_file_becomes_extended_with_canvas_alpha_and_xmp_flags(kind: str, alpha: bool) -> None:
    original = SIMPLE_INPUTS[kind]()
    signed = codec.embed_token(original, TOKEN)
    chunks = webp.parse_chunks(signed)[0]
    assert [c.fourcc for c in chunks] == [b"VP8X", webp.parse_chunks(original)[0][0].fourcc, b"XMP "]
    flags = chunks[0].payload[0]
    assert flags & webp.FLAG_XMP
    assert bool(flags & webp.FLAG_ALPHA) is alpha
    assert webp.canvas_size(chunks) == decoded(original).size
    assert int.from_bytes(signed[4:8], "little") == len(signed) - 8


def test_embedding_twice_replaces_the_token() -> None:
    original = _rich_webp()
    twice = codec.embed_token(codec.embed_token(original, TOKEN), OTHER_TOKEN)
    assert codec.extract_token(twice) == OTHER_TOKEN
    assert _fourccs(twice).count(b"XMP ") == 1
    assert codec.strip_token(twice) == original


@pytest.mark.parametrize("name", COLOUR_SAMPLES)
def test_exif_icc_and_foreign_xmp_survive_embed_and_strip(name: str) -> None:
    original = _rich_webp(name)
    signed = codec.embed_token(original, TOKEN)
    image = decoded(signed)
    assert image.info["icc_profile"] == srgb_profile()
    assert image.getexif()[0x0112] == 6
    packet = image.info["xmp"]
    assert b"Ada Lovelace" in packet and xmp.read_token(packet) == TOKEN
    assert codec.strip_token(signed) == original
    assert codec.strip_token(original) == original


@pytest.mark.parametrize("kind", ["lossy", "lossless", "lossless-alpha", "lossy-alpha"])
def test_watermark_keeps_size_mode_compression_and_alpha(stand_in_watermark, kind: str) -> None:
    original = SIMPLE_INPUTS[kind]()
    marked = codec.embed_watermark(original, MARK_ID)
    before, after = decoded(original), decoded(marked)
    assert (after.size, after.mode) == (before.size, before.mode)
    assert (b"VP8L" in _fourccs(marked)) is (b"VP8L" in _fourccs(original))
    if before.mode == "RGBA":
        assert np.array_equal(np.asarray(after)[..., 3], np.asarray(before)[..., 3])
    assert codec.extract_watermark(marked) == MARK_ID
    assert codec.extract_watermark(original) is None


def test_watermark_keeps_metadata_and_an_existing_token(stand_in_watermark) -> None:
    signed = codec.embed_token(_rich_webp(), TOKEN)
    marked = codec.embed_watermark(signed, MARK_ID)
    image = decoded(marked)
    assert image.info["icc_profile"] == srgb_profile()
    assert image.getexif()[0x0112] == 6
    assert b"Ada Lovelace" in image.info["xmp"]
    assert codec.extract_token(marked) == TOKEN
    assert _fourccs(marked)[0] == b"VP8X" and _fourccs(marked)[1] == b"ICCP"


def test_animated_and_tiny_webps_cannot_be_watermarked(stand_in_watermark) -> None:
    frames = [Image.fromarray(photo("coffee")), Image.fromarray(photo("coffee")[::-1].copy())]
    animated = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100)
    with pytest.raises(UnsupportedFormat, match="animated"):
        codec.embed_watermark(animated, MARK_ID)
    signed = codec.embed_token(animated, TOKEN)
    assert codec.extract_token(signed) == TOKEN and codec.strip_token(signed) == animated
    with pytest.raises(UnsupportedFormat, match="too small"):
        codec.embed_watermark(encode(photo("coffee")[:50, :50], "WEBP"), MARK_ID)


def test_pixel_count_is_checked_from_the_header_before_decoding(stand_in_watermark) -> None:
    chunks, _ = webp.parse_chunks(codec.embed_token(encode(photo("coffee"), "WEBP"), TOKEN))
    huge_side = (10000 - 1).to_bytes(3, "little")
    chunks[0] = webp.make_chunk(b"VP8X", chunks[0].payload[:4] + huge_side + huge_side)
    huge = webp.assemble(chunks)
    for call in (codec.open, codec.extract_watermark, codec.fingerprint):
        with pytest.raises(MediaTooLarge):
            call(huge)
    with pytest.raises(MediaTooLarge):
        codec.embed_watermark(huge, MARK_ID)


def test_garbage_and_truncated_files_raise_codec_errors_only(stand_in_watermark) -> None:
    assert_only_codec_errors(codec, _rich_webp("astronaut"))


@pytest.mark.skipif(not has_exiftool(), reason="exiftool is not installed")
@pytest.mark.parametrize("kind", ["lossy", "lossless-alpha"])
def test_exiftool_reads_our_token(tmp_path, kind: str) -> None:
    path = tmp_path / "signed.webp"
    path.write_bytes(codec.embed_token(SIMPLE_INPUTS[kind](), TOKEN))
    assert exiftool_token(str(path)) == TOKEN


def test_libwebp_decodes_the_pixels_opencv_decodes() -> None:
    """pixels.decode_webp calls libwebp into one array; OpenCV's decoder (the fallback) holds a canvas beside it."""
    from media_codecs.image import pixels
    from tests import hostile_media, media

    if pixels._libwebp()[0] is None:
        pytest.skip("no libwebp.so on this system")
    rng = np.random.default_rng(5)
    files = [hostile_media.photo_like("WEBP", 0.5), hostile_media.pixel_bomb("WEBP", 300, 200)]
    for name in ("astronaut", "coffee"):
        rgb = Image.fromarray(media._pixels(name))
        rgba = np.asarray(rgb.convert("RGBA")).copy()
        rgba[..., 3] = rng.integers(0, 256, rgba.shape[:2])
        rgba[:40, :40, 3] = 0  # fully transparent pixels keep their colour
        for picture in (rgb, Image.fromarray(rgba)):
            files += [media.encode(picture, "webp", **options) for options in
                      ({"quality": 90}, {"quality": 30}, {"lossless": True})]
    for data in files:
        ours, opencv = pixels.decode_webp(data), pixels.decode_with_opencv(data)
        assert ours.shape == opencv.shape and np.array_equal(ours, opencv)
    with pytest.raises(CorruptMedia):
        pixels.decode_webp(files[0][:200])
