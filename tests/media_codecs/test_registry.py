from __future__ import annotations

import pytest
from conftest import encode, photo

import media_codecs
from media_codecs import (
    Codec,
    CorruptMedia,
    MediaTooLarge,
    UnsupportedFormat,
    detect,
    get_codec,
    open_media,
    registry,
)
from media_codecs.image import png

SAMPLES = {
    "jpeg": lambda: encode(photo("coffee"), "JPEG"),
    "png": lambda: encode(photo("coffee"), "PNG"),
    "webp": lambda: encode(photo("coffee"), "WEBP"),
}


@pytest.mark.parametrize("image_format", SAMPLES)
def test_detect_recognises_each_image_format_from_its_first_bytes(image_format: str) -> None:
    codec = detect(SAMPLES[image_format]())
    assert codec is get_codec(image_format)
    assert (codec.format, codec.family, codec.mime_type) == (image_format, "image", f"image/{image_format}")
    assert isinstance(codec, Codec)


@pytest.mark.parametrize("data", [b"", b"\xff", b"GIF89a" + bytes(60), b"RIFF\x00\x00\x00\x00WAVEfmt ", bytes(64)])
def test_unknown_content_is_an_unsupported_format(data: bytes) -> None:
    with pytest.raises(UnsupportedFormat):
        detect(data)


def test_sniffing_never_raises_on_short_heads() -> None:
    for codec in media_codecs.registered_codecs():
        for length in range(0, 13):
            assert codec.sniff(b"\xff\xd8\xff\x89PNG\r\nRIFF"[:length]) in (True, False)


def test_unknown_format_names_are_an_unsupported_format() -> None:
    with pytest.raises(UnsupportedFormat, match="gif"):
        get_codec("gif")


def test_builtin_codecs_are_registered_in_sniffing_order() -> None:
    assert [codec.format for codec in media_codecs.registered_codecs()] == ["jpeg", "png", "webp"]


class _Greeting(Codec):
    """A toy codec: files that start with "hello"."""

    format, family, mime_type = "greeting", "text", "text/plain"

    def sniff(self, head: bytes) -> bool:
        return head.startswith(b"hello")

    def parse(self, data: bytes) -> None:
        return None

    def embed_token(self, data: bytes, token: str) -> bytes:
        return data + token.encode()

    def extract_token(self, data: bytes) -> str | None:
        return None

    def strip_token(self, data: bytes) -> bytes:
        return data

    def embed_watermark(self, data: bytes, mark_id: int) -> bytes:
        return data

    def extract_watermark(self, data: bytes) -> int | None:
        return None

    def perceptual_hash(self, data: bytes) -> str | None:
        return None

    def check_limits(self, data: bytes) -> None:
        return None


def test_a_registered_codec_takes_part_in_detection(monkeypatch) -> None:
    registry.registered_codecs()  # load the built-ins into the table we copy
    monkeypatch.setattr(registry, "_codecs", dict(registry._codecs))
    codec = _Greeting()
    media_codecs.register(codec)
    assert detect(b"hello world") is codec
    assert get_codec("greeting") is codec
    assert detect(SAMPLES["png"]()) is get_codec("png")


def test_open_media_checks_the_header_limits() -> None:
    data = SAMPLES["png"]()
    assert open_media(data).codec is get_codec("png")
    chunks, trailer = png.parse_chunks(data)
    header = (40000).to_bytes(4, "big") * 2 + chunks[0].data[8:]
    with pytest.raises(MediaTooLarge):
        open_media(png.assemble([png.make_chunk(b"IHDR", header), *chunks[1:]], trailer))
    with pytest.raises(CorruptMedia):
        open_media(data[:40])


def test_every_codec_error_is_a_codec_error() -> None:
    for error in (UnsupportedFormat, CorruptMedia, MediaTooLarge):
        assert issubclass(error, media_codecs.CodecError)
