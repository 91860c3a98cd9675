"""The codec contract, run against every registered codec: a new format joins by registering and
adding a sample file to SAMPLES (the first test fails until it does)."""

from __future__ import annotations

import contextlib
import re

import pytest
from conftest import MARK_ID, OTHER_TOKEN, TOKEN, corruptions, encode, photo

from media_codecs import CodecError, UnsupportedFormat, detect, get_codec, registered_codecs
from media_codecs.base import SCORE_FALLBACK, SCORE_MAGIC, Media
from tests import audio, text_samples, video
from tests.pdf_samples import text_pdf

SAMPLES = {
    "jpeg": lambda: encode(photo("coffee"), "JPEG", quality=90),
    "png": lambda: encode(photo("coffee"), "PNG"),
    "webp": lambda: encode(photo("coffee"), "WEBP", quality=90),
    "wav": audio.tagged_wav,
    "flac": audio.tagged_flac,
    "mp3": audio.tagged_mp3,
    "html": lambda: text_samples.HTML_PAGE.encode(),
    "txt": lambda: text_samples.english().encode(),
    "pdf": lambda: text_pdf(),
    "mp4": lambda: video.sample("mp4", seconds=1.0),
    "mov": lambda: video.sample("mov", seconds=1.0),
    "mkv": lambda: video.sample("mkv", seconds=1.0),
    "webm": lambda: video.sample("webm", seconds=1.0),
}
FORMATS = [codec.format for codec in registered_codecs()]


def test_every_registered_codec_has_a_contract_sample() -> None:
    assert sorted(SAMPLES) == sorted(FORMATS)


@pytest.fixture(params=FORMATS)
def case(request):
    return get_codec(request.param), SAMPLES[request.param]()


def test_the_codec_scores_its_own_files_highest(case) -> None:
    codec, sample = case
    assert codec.score(sample[:4096]) == (SCORE_MAGIC if codec.carries_token else SCORE_FALLBACK)
    assert detect(sample) is codec and detect(sample, codec.family) is codec


def test_open_parses_once_into_a_media_every_method_takes(case) -> None:
    codec, sample = case
    media = codec.open(sample)
    assert isinstance(media, Media) and media.codec is codec and media.data == sample
    assert codec.extract_token(media) is None
    assert codec.strip_token(media) == codec.strip_token(sample)


def test_the_token_round_trips_and_replaces(case) -> None:
    codec, sample = case
    if not codec.carries_token:  # plain text: nowhere to put it, and it says so
        assert codec.embed_token(sample, TOKEN) == sample and codec.extract_token(sample) is None
        return
    signed = codec.embed_token(sample, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == codec.strip_token(sample)
    resigned = codec.embed_token(signed, OTHER_TOKEN)
    assert codec.extract_token(resigned) == OTHER_TOKEN
    assert codec.strip_token(resigned) == codec.strip_token(sample)


def test_capabilities_do_what_they_declare(case, stand_in_watermark) -> None:
    codec, sample = case
    if codec.watermark_possible(sample):
        assert codec.extract_watermark(codec.embed_watermark(sample, MARK_ID)) == MARK_ID
    elif codec.can_watermark:  # this content cannot (audio under the watermark's minimum): said, not faked
        with pytest.raises(UnsupportedFormat):
            codec.embed_watermark(sample, MARK_ID)
    if codec.fingerprint_kind is not None:
        assert re.fullmatch(r"[0-9a-f]{16}", codec.fingerprint(sample))


def test_bad_bytes_raise_only_codec_errors(case) -> None:
    codec, sample = case
    for corrupted in corruptions(sample):
        for call in (codec.open, codec.extract_token, codec.strip_token, lambda data: codec.embed_token(data, TOKEN)):
            with contextlib.suppress(CodecError):  # any other exception fails the test
                call(corrupted)


def test_the_hashed_parts_are_the_stripped_bytes(case) -> None:
    codec, sample = case
    signed = codec.open(codec.embed_token(sample, TOKEN)) if codec.carries_token else codec.open(sample)
    assert b"".join(bytes(part) for part in codec.hashed_parts(signed)) == codec.strip_token(signed)


def test_every_codec_stands_on_its_familys_base_class() -> None:
    from media_codecs.audio.base import AudioCodec
    from media_codecs.image.base import ImageCodec
    from media_codecs.text.base import TextCodec
    from media_codecs.video.base import VideoCodec

    bases = {"image": ImageCodec, "audio": AudioCodec, "text": TextCodec, "video": VideoCodec}
    assert [codec.format for codec in registered_codecs() if not isinstance(codec, bases[codec.family])] == []
