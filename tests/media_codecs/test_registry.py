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
from media_codecs.base import SCORE_FALLBACK, SCORE_MAGIC, SCORE_NONE, SCORE_WEAK
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


@pytest.mark.parametrize("data", [b"", b"\xff", b"GIF89a" + bytes(60), b"RIFF\x00\x00\x00\x00AVI LIST", bytes(64)])
def test_unknown_content_is_an_unsupported_format(data: bytes) -> None:
    with pytest.raises(UnsupportedFormat):
        detect(data)


def test_scoring_never_raises_on_short_heads() -> None:
    for codec in media_codecs.registered_codecs():
        for length in range(0, 13):
            assert codec.score(b"\xff\xd8\xff\x89PNG\r\nRIFF"[:length]) in (SCORE_NONE, SCORE_MAGIC)


def test_unknown_format_names_are_an_unsupported_format() -> None:
    with pytest.raises(UnsupportedFormat, match="gif"):
        get_codec("gif")


def test_builtin_codecs_are_registered_in_order() -> None:
    assert [codec.format for codec in media_codecs.registered_codecs()] == [
        "jpeg", "png", "webp", "wav", "flac", "mp3", "mp4", "mov", "mkv", "webm", "html", "pdf", "txt"]


class _ToyCodec(Codec):
    """Container-less stand-ins for the formats the next families bring; only `score` matters here."""

    mime_type = "application/octet-stream"

    def parse(self, data: bytes) -> None:
        return None

    def embed_token(self, data: bytes, token: str) -> bytes:
        return data + token.encode()

    def extract_token(self, data: bytes) -> str | None:
        return None

    def strip_token(self, data: bytes) -> bytes:
        return data


class _Pdf(_ToyCodec):
    format, family = "pdf", "text"

    def score(self, head: bytes) -> int:
        # ISO 32000-1 annex H.3: readers accept %PDF- anywhere in the first 1024 bytes.
        position = head[:1024].find(b"%PDF-")
        return SCORE_NONE if position < 0 else SCORE_MAGIC if position == 0 else SCORE_WEAK


class _PlainText(_ToyCodec):
    format, family = "plain", "text"

    def score(self, head: bytes) -> int:
        try:
            text = head.decode("utf-8-sig")
        except UnicodeDecodeError:
            return SCORE_NONE  # a multi-byte character cut by the head's end is not handled in a toy
        printable = sum(character.isprintable() or character in "\t\r\n" for character in text)
        return SCORE_FALLBACK if "\x00" not in text and printable >= 0.95 * len(text) else SCORE_NONE


@pytest.fixture
def toy_registry(monkeypatch) -> None:
    registry.registered_codecs()  # load the built-ins into the table we copy
    monkeypatch.setattr(registry, "_codecs", dict(registry._codecs))
    media_codecs.register(_Pdf())  # HTML and plain text are real codecs now


@pytest.mark.parametrize(("data", "expected"), [
    (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj", "pdf"),
    (b"garbage a mailer added\r\n%PDF-1.4\n1 0 obj", "pdf"),  # bytes before %PDF
    (b"<!DOCTYPE html><html><body>hi</body></html>", "html"),
    (b"<html lang=en><head><title>t</title></head><body>no doctype</body></html>", "html"),
    ("\ufeffPlain text with a BOM, caf\u00e9 \u2014 and more.\n".encode(), "txt"),
    (b"Just words, no markup at all.\n", "txt"),
], ids=["pdf", "pdf-after-junk", "html", "html-without-doctype", "text-with-bom", "text"])
def test_the_best_score_wins(toy_registry, data: bytes, expected: str) -> None:
    assert detect(data).format == expected


def test_a_signature_beats_the_text_fallback(toy_registry) -> None:
    for image_format, sample in SAMPLES.items():
        assert detect(sample()).format == image_format
    with pytest.raises(UnsupportedFormat):
        detect(b"\x00\x01\x02 binary, not text")


def test_a_declared_family_restricts_detection(toy_registry) -> None:
    jpeg_bytes = SAMPLES["jpeg"]()
    assert detect(jpeg_bytes, "image").format == "jpeg"
    with pytest.raises(UnsupportedFormat, match="audio"):
        detect(jpeg_bytes, "audio")
    with pytest.raises(UnsupportedFormat, match="text"):
        detect(jpeg_bytes, "text")
    assert detect(b"<html><body>x</body></html>", "text").format == "html"


def test_detection_ignores_names_and_reports_truncation() -> None:
    png_bytes = SAMPLES["png"]()
    assert detect(png_bytes).format == "png"  # whatever the upload was called: only bytes are read
    with pytest.raises(UnsupportedFormat):
        open_media(b"")
    with pytest.raises(CorruptMedia):
        open_media(SAMPLES["jpeg"]()[:200])
    with pytest.raises(CorruptMedia):
        open_media(png_bytes[:60])


def test_capabilities_are_declared_not_inferred_from_names() -> None:
    declared = {codec.format: (codec.family, codec.can_watermark, codec.fingerprint_kind, codec.token_source)
                for codec in media_codecs.registered_codecs()}
    image = ("image", True, "image-phash", "xmp")
    audio = ("audio", True, None, "metadata")
    video = ("video", True, "video-phash", "metadata")
    assert declared == {"jpeg": image, "png": image, "webp": image, "wav": audio, "flac": audio, "mp3": audio,
                        "mp4": video, "mov": video, "mkv": video, "webm": video,
                        "html": ("text", True, None, "metadata"), "pdf": ("text", False, None, "xmp"),
                        "txt": ("text", True, None, "metadata")}
    toy = _PlainText()
    assert not toy.can_watermark and toy.fingerprint_kind is None
    assert toy.extract_watermark(b"text") is None and toy.fingerprint(b"text") is None
    with pytest.raises(UnsupportedFormat):
        toy.embed_watermark(b"text", 1)


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
