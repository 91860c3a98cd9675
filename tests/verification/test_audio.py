"""POST /v1/sign and /v1/verify on WAV, FLAC and MP3: the token in the file's metadata, no watermark yet."""

import io

import pytest

from media_codecs import detect, get_codec
from provenance.models import Record
from tests import audio, factories

pytestmark = pytest.mark.django_db
FORMATS = {
    "wav": (audio.tagged_wav, "audio/wav"),
    "flac": (audio.tagged_flac, "audio/flac"),
    "mp3": (audio.tagged_mp3, "audio/mpeg"),
}


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image", "audio"])


def _sign(client, generator, content: bytes, **fields):
    return client.post("/v1/sign", {"content": io.BytesIO(content), "model": "music-gen",
                                    "generator_id": str(generator.pk), **fields}, format="multipart")


def _verify(api_client, content: bytes) -> dict:
    response = api_client.post("/v1/verify", {"content": io.BytesIO(content)}, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.mark.parametrize("fmt", FORMATS)
def test_signed_audio_comes_back_in_its_format_and_verifies_from_its_metadata(api_client, key_client, org,
                                                                              generator, fmt):
    make, mime_type = FORMATS[fmt]
    response = _sign(key_client(org), generator, make(), format="audio")
    assert response.status_code == 201, response.content[:300]
    assert response["Content-Type"] == mime_type and response["X-Service-Format"] == "audio"
    assert detect(response.content).format == fmt
    assert get_codec(fmt).extract_token(response.content) == response["X-Service-Token"]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert (record.format, record.watermark_id, record.phash) == ("audio", "none", None)
    result = _verify(api_client, response.content)
    assert result == {"authentic": True, "tampered": False, "confidence": "medium", "token_source": "metadata",
                      "signals": {"watermark_found": False, "record_found": True, "signature_valid": True},
                      "provenance": {"org": org.name, "model": "music-gen",
                                     "signed_at": result["provenance"]["signed_at"]},
                      "record_id": response["X-Service-Record-Id"]}


@pytest.mark.parametrize("fmt", FORMATS)
def test_reencoded_audio_with_the_token_kept_is_tampered(api_client, key_client, org, generator, fmt):
    signed = _sign(key_client(org), generator, FORMATS[fmt][0]()).content
    codec = get_codec(fmt)
    media = codec.open(signed)
    samples, _ = codec.samples(media)
    altered = codec.reencode(media, samples * 0.8)
    assert codec.extract_token(altered) == codec.extract_token(signed)
    result = _verify(api_client, altered)
    assert (result["authentic"], result["tampered"], result["reason"]) == (False, True, "content_tampered")
    assert (result["token_source"], result["confidence"]) == ("metadata", "low")


@pytest.mark.parametrize("fmt", FORMATS)
def test_audio_without_its_token_container_has_no_provenance(api_client, key_client, org, generator, fmt):
    signed = _sign(key_client(org), generator, FORMATS[fmt][0]()).content
    result = _verify(api_client, get_codec(fmt).strip_token(signed))
    assert (result["authentic"], result["token_source"], result["reason"]) == (False, "none", "no_provenance_found")


def test_an_image_only_generator_does_not_sign_audio(key_client, org):
    image_only = factories.make_generator(org=org, formats=["image"])
    response = _sign(key_client(org), image_only, audio.tagged_wav())
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"


def test_audio_over_the_duration_limit_is_413(key_client, org, generator):
    from tests import hostile_media as hm

    response = _sign(key_client(org), generator, hm.wav_longer_than(21 * 60))
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"
    assert not Record.objects.exists()


@pytest.mark.parametrize(("content", "error"), [
    (audio.wav_bytes(audio.tone(0.1))[:-500] + b"", "validation_error"),  # truncated
    (b"RF64\xff\xff\xff\xffWAVEds64" + bytes(28), "format_not_supported"),
])
def test_malformed_or_unsupported_audio_is_400(key_client, org, generator, content, error):
    response = _sign(key_client(org), generator, content)
    assert response.status_code == 400 and response.json()["error"] == error
