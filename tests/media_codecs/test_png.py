from __future__ import annotations

import zlib

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
from PIL import Image, PngImagePlugin

from media_codecs import MediaTooLarge, UnsupportedFormat, get_codec, xmp
from media_codecs.image import png

codec = get_codec("png")


def _text_info(xmp_packet: bytes | None = XMP_WITH_CREATOR, compress_xmp: bool = False) -> PngImagePlugin.PngInfo:
    info = PngImagePlugin.PngInfo()
    info.add_text("Comment", "made for a test")
    if xmp_packet is not None:
        info.add_itxt("XML:com.adobe.xmp", xmp_packet.decode(), zip=compress_xmp)
    return info


def _rich_png(name: str = "chelsea", **options: object) -> bytes:
    """A photo with a text chunk, EXIF, an ICC profile and a foreign XMP packet."""
    options.setdefault("pnginfo", _text_info())
    return encode(photo(name), "PNG", exif=exif_with_orientation(), icc_profile=srgb_profile(), **options)


def _chunk_types(data: bytes) -> list[bytes]:
    return [chunk.type for chunk in png.parse_chunks(data)[0]]


@pytest.mark.parametrize("name", [*COLOUR_SAMPLES, "camera", "logo"])
def test_token_round_trips_and_strips_back_to_the_original_bytes(name: str) -> None:
    original = encode(photo(name), "PNG")
    signed = codec.embed_token(original, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == original
    assert codec.extract_token(original) is None
    assert codec.strip_token(original) == original


def test_embedding_twice_replaces_the_token() -> None:
    original = _rich_png()
    twice = codec.embed_token(codec.embed_token(original, TOKEN), OTHER_TOKEN)
    assert codec.extract_token(twice) == OTHER_TOKEN
    assert _chunk_types(twice).count(b"iTXt") == 1
    assert codec.strip_token(twice) == original


def test_token_chunk_is_uncompressed_itxt_before_idat_with_a_correct_crc() -> None:
    signed = codec.embed_token(encode(photo("coffee"), "PNG"), TOKEN)
    chunks = png.parse_chunks(signed)[0]
    types = [chunk.type for chunk in chunks]
    assert types.index(b"iTXt") < types.index(b"IDAT")
    chunk = chunks[types.index(b"iTXt")]
    assert chunk.data.startswith(b"XML:com.adobe.xmp\x00\x00\x00\x00\x00<?xpacket")
    for chunk in chunks:
        assert zlib.crc32(chunk.type + chunk.data).to_bytes(4, "big") == chunk.raw[-4:]
    assert decoded(signed).info["XML:com.adobe.xmp"]


def test_exif_icc_text_and_foreign_xmp_survive_embed_and_strip() -> None:
    original = _rich_png()
    signed = codec.embed_token(original, TOKEN)
    image = decoded(signed)
    assert image.info["icc_profile"] == srgb_profile()
    assert image.getexif()[0x0112] == 6
    assert image.info["Comment"] == "made for a test"
    packet = image.info["XML:com.adobe.xmp"].encode()
    assert b"Ada Lovelace" in packet and xmp.read_token(packet) == TOKEN
    assert np.array_equal(np.asarray(image), np.asarray(decoded(original)))
    assert codec.strip_token(signed) == original


def test_a_compressed_foreign_xmp_chunk_is_read_and_rewritten_uncompressed() -> None:
    original = _rich_png(pnginfo=_text_info(compress_xmp=True))
    signed = codec.embed_token(original, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert b"Ada Lovelace" in signed
    assert codec.strip_token(original) == original


@pytest.mark.parametrize("name", ["chelsea", "camera", "logo"])
def test_watermark_is_lossless_and_keeps_size_mode_and_metadata(stand_in_watermark, name) -> None:
    original = _rich_png(name)
    marked = codec.embed_watermark(original, MARK_ID)
    before, after = decoded(original), decoded(marked)
    assert (after.size, after.mode) == (before.size, before.mode)
    assert after.info["icc_profile"] == srgb_profile()
    assert after.getexif()[0x0112] == 6
    assert after.info["Comment"] == "made for a test"
    assert "Ada Lovelace" in after.info["XML:com.adobe.xmp"]
    assert codec.extract_watermark(marked) == MARK_ID
    assert codec.extract_watermark(original) is None
    if before.mode in ("RGBA", "LA"):
        assert np.array_equal(np.asarray(after)[..., -1], np.asarray(before)[..., -1])


def test_watermark_carries_an_existing_token_through(stand_in_watermark) -> None:
    signed = codec.embed_token(encode(photo("coffee"), "PNG"), TOKEN)
    marked = codec.embed_watermark(signed, MARK_ID)
    assert codec.extract_token(marked) == TOKEN
    assert codec.extract_watermark(codec.embed_token(marked, OTHER_TOKEN)) == MARK_ID


@pytest.mark.parametrize(
    ("image", "message"),
    [
        (Image.fromarray(photo("coffee")).convert("P"), "palette"),
        (Image.fromarray(photo("camera").astype(np.uint16) * 257), "16-bit"),
        (Image.fromarray(photo("coffee")[:100, :100]), "too small"),
    ],
)
def test_palette_sixteen_bit_and_tiny_pngs_cannot_be_watermarked(stand_in_watermark, image, message) -> None:
    data = encode(image, "PNG")
    with pytest.raises(UnsupportedFormat, match=message):
        codec.embed_watermark(data, MARK_ID)
    assert len(codec.fingerprint(data)) == 16


def test_a_sixteen_bit_photograph_is_hashed_as_its_eight_bit_picture_not_clipped_to_white() -> None:
    eight = photo("camera")
    sixteen = encode(Image.fromarray(eight.astype(np.uint16) * 257), "PNG")
    assert codec.fingerprint(sixteen) == codec.fingerprint(encode(Image.fromarray(eight), "PNG"))


def _with_declared_size(data: bytes, width: int, height: int) -> bytes:
    chunks, trailer = png.parse_chunks(data)
    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + chunks[0].data[8:]
    return png.assemble([png.make_chunk(b"IHDR", header), *chunks[1:]], trailer)


def test_pixel_count_is_checked_from_the_header_before_decoding(stand_in_watermark) -> None:
    huge = _with_declared_size(encode(photo("coffee"), "PNG"), 50000, 50000)
    for call in (codec.open, codec.extract_watermark, codec.fingerprint):
        with pytest.raises(MediaTooLarge):
            call(huge)
    with pytest.raises(MediaTooLarge):
        codec.embed_watermark(huge, MARK_ID)


def test_garbage_and_truncated_files_raise_codec_errors_only(stand_in_watermark) -> None:
    assert_only_codec_errors(codec, _rich_png("astronaut"))


@pytest.mark.skipif(not has_exiftool(), reason="exiftool is not installed")
def test_exiftool_reads_our_token(tmp_path) -> None:
    path = tmp_path / "signed.png"
    path.write_bytes(codec.embed_token(_rich_png(), TOKEN))
    assert exiftool_token(str(path)) == TOKEN
