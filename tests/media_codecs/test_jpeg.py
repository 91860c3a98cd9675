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
from PIL import Image, JpegImagePlugin

from media_codecs import CodecError, MediaTooLarge, UnsupportedFormat, get_codec, xmp
from media_codecs.base import SCORE_MAGIC, SCORE_NONE
from media_codecs.image import jpeg

codec = get_codec("jpeg")


def _rich_jpeg(name: str = "chelsea", **options: object) -> bytes:
    """A photo with EXIF (orientation 6), an ICC profile and a foreign XMP packet."""
    return encode(
        photo(name),
        "JPEG",
        quality=88,
        exif=exif_with_orientation(),
        icc_profile=srgb_profile(),
        xmp=XMP_WITH_CREATOR,
        **options,
    )


def _segments(data: bytes) -> list[jpeg.Segment]:
    return jpeg.parse_header(data)[0]


@pytest.mark.parametrize("name", [*COLOUR_SAMPLES, "camera"])
def test_token_round_trips_and_strips_back_to_the_original_bytes(name: str) -> None:
    original = encode(photo(name), "JPEG", quality=85)
    signed = codec.embed_token(original, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == original
    assert codec.extract_token(original) is None
    assert codec.strip_token(original) == original


def test_embedding_twice_replaces_the_token() -> None:
    original = encode(photo("coffee"), "JPEG")
    twice = codec.embed_token(codec.embed_token(original, TOKEN), OTHER_TOKEN)
    assert codec.extract_token(twice) == OTHER_TOKEN
    assert twice.count(b"svc:Token>") == 2  # one open and one close tag
    assert sum(segment.is_xmp for segment in _segments(twice)) == 1
    assert codec.strip_token(twice) == original


def test_token_container_is_an_xmp_app1_after_jfif_and_exif() -> None:
    original = encode(photo("astronaut"), "JPEG", exif=exif_with_orientation())
    segments = _segments(codec.embed_token(original, TOKEN))
    assert [hex(s.marker) for s in segments[:3]] == ["0xe0", "0xe1", "0xe1"]
    assert segments[1].is_exif
    assert segments[2].payload.startswith(b"http://ns.adobe.com/xap/1.0/\x00")


def test_embed_token_never_changes_the_image_data() -> None:
    original = _rich_jpeg()
    signed = codec.embed_token(original, TOKEN)
    assert np.array_equal(np.asarray(decoded(signed)), np.asarray(decoded(original)))
    assert jpeg.parse_header(signed)[1] == jpeg.parse_header(original)[1]


def test_exif_icc_and_foreign_xmp_survive_embed_and_strip() -> None:
    original = _rich_jpeg()
    signed = codec.embed_token(original, TOKEN)
    image = decoded(signed)
    assert image.info["icc_profile"] == srgb_profile()
    assert image.getexif()[0x0112] == 6
    packet = image.info["xmp"]
    assert b"Ada Lovelace" in packet and xmp.read_token(packet) == TOKEN
    assert sum(segment.is_xmp for segment in _segments(signed)) == 1
    assert codec.strip_token(signed) == original


def test_watermark_keeps_size_mode_tables_sampling_and_metadata(stand_in_watermark) -> None:
    original = _rich_jpeg("chelsea")
    marked = codec.embed_watermark(original, MARK_ID)
    before, after = decoded(original), decoded(marked)
    assert (after.size, after.mode) == (before.size, before.mode) == ((451, 300), "RGB")
    assert after.quantization == before.quantization
    assert JpegImagePlugin.get_sampling(after) == JpegImagePlugin.get_sampling(before)
    assert after.info["icc_profile"] == srgb_profile()
    assert after.getexif()[0x0112] == 6  # orientation kept as a tag; pixels not transposed
    assert b"Ada Lovelace" in after.info["xmp"]
    assert codec.extract_watermark(marked) == MARK_ID
    assert codec.extract_watermark(original) is None


@pytest.mark.parametrize("name", COLOUR_SAMPLES)
def test_watermarked_jpeg_stays_within_fifteen_percent_of_the_input_size(name) -> None:
    # The real watermark: its mid-frequency noise is what costs bytes; the stand-in's
    # flat blocks would make this check meaningless.
    original = encode(photo(name), "JPEG", quality=90)
    marked = codec.embed_watermark(original, MARK_ID)
    assert len(marked) <= 1.15 * len(original)
    assert codec.extract_watermark(marked) == MARK_ID


def test_watermark_keeps_progressive_and_greyscale(stand_in_watermark) -> None:
    original = encode(photo("camera"), "JPEG", quality=80, progressive=True)
    marked = codec.embed_watermark(original, MARK_ID)
    image = decoded(marked)
    assert image.mode == "L" and image.info.get("progressive")
    assert codec.extract_watermark(marked) == MARK_ID


def test_watermark_carries_an_existing_token_through(stand_in_watermark) -> None:
    signed = codec.embed_token(encode(photo("coffee"), "JPEG"), TOKEN)
    assert codec.extract_token(codec.embed_watermark(signed, MARK_ID)) == TOKEN


def test_cmyk_and_too_small_images_cannot_be_watermarked(stand_in_watermark) -> None:
    cmyk = encode(Image.fromarray(photo("coffee")).convert("CMYK"), "JPEG")
    with pytest.raises(UnsupportedFormat, match="CMYK"):
        codec.embed_watermark(cmyk, MARK_ID)
    with pytest.raises(UnsupportedFormat, match="too small"):
        codec.embed_watermark(encode(photo("coffee")[:64, :64], "JPEG"), MARK_ID)
    assert codec.fingerprint(cmyk) is not None


def _with_declared_size(data: bytes, width: int, height: int) -> bytes:
    segments, tail = jpeg.parse_header(data)
    for index, segment in enumerate(segments):
        if segment.marker == 0xC0:
            payload = segment.payload[:1] + height.to_bytes(2, "big") + width.to_bytes(2, "big")
            segments[index] = jpeg.make_segment(0xC0, payload + segment.payload[5:])
    return jpeg.assemble(segments, tail)


def test_pixel_count_is_checked_from_the_header_before_decoding(stand_in_watermark) -> None:
    huge = _with_declared_size(encode(photo("coffee"), "JPEG"), 60000, 60000)
    for call in (codec.open, codec.extract_watermark, codec.fingerprint):
        with pytest.raises(MediaTooLarge):
            call(huge)
    with pytest.raises(MediaTooLarge):
        codec.embed_watermark(huge, MARK_ID)


def test_pillow_bomb_check_is_reported_as_media_too_large(monkeypatch, stand_in_watermark) -> None:
    original = encode(photo("coffee"), "JPEG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)
    with pytest.raises(MediaTooLarge):
        codec.fingerprint(original)


def test_garbage_and_truncated_files_raise_codec_errors_only(stand_in_watermark) -> None:
    assert_only_codec_errors(codec, _rich_jpeg("astronaut"))


def test_a_malformed_foreign_xmp_packet_is_refused_not_overwritten() -> None:
    original = encode(photo("coffee"), "JPEG", xmp=b"<x:xmpmeta><unclosed>")
    with pytest.raises(CodecError):
        codec.embed_token(original, TOKEN)
    assert codec.extract_token(original) is None
    assert codec.strip_token(original) == original


@pytest.mark.skipif(not has_exiftool(), reason="exiftool is not installed")
def test_exiftool_reads_our_token(tmp_path) -> None:
    path = tmp_path / "signed.jpg"
    path.write_bytes(codec.embed_token(_rich_jpeg(), TOKEN))
    assert exiftool_token(str(path)) == TOKEN


def test_only_jpeg_heads_score() -> None:
    assert codec.score(encode(photo("coffee"), "JPEG")[:64]) == SCORE_MAGIC
    assert codec.score(b"\xff\xd8") == SCORE_NONE
    assert codec.score(b"\x89PNG\r\n\x1a\n") == SCORE_NONE
