"""POST /v1/sign and /v1/verify on WAV, FLAC and MP3: the token in the file's metadata and, for audio
long enough, the watermark in the samples. The short clips of the first tests carry the token alone."""

import base64
import functools
import json

import numpy as np
import pytest
from dilithium_py.ml_dsa import ML_DSA_65

from media_codecs import detect, get_codec
from provenance.models import Record
from tests import audio, factories
from tests.media_codecs.audio.test_marked_containers import music
from tests.verification import uploads

pytestmark = pytest.mark.django_db
FORMATS = {
    "wav": (audio.tagged_wav, "audio/wav"),
    "flac": (audio.tagged_flac, "audio/flac"),
    "mp3": (audio.tagged_mp3, "audio/mpeg"),
}


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image", "audio"])


_sign = functools.partial(uploads.sign, model="music-gen")
_verify = uploads.verify


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
                      "summary": uploads.unchanged_unmarked_summary(result),
                      "record_id": response["X-Service-Record-Id"], "log": {"status": "pending"},
                      "signature_timestamp": None, "c2pa": None, "disclosure": uploads.default_disclosure(result)}


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
def test_audio_without_its_token_container_is_found_by_its_content_hash(api_client, key_client, org, generator,
                                                                       fmt):
    # The content hash leaves the token container out: the stripped file is still the signed content.
    signed = _sign(key_client(org), generator, FORMATS[fmt][0]())
    result = _verify(api_client, get_codec(fmt).strip_token(signed.content))
    assert (result["authentic"], result["token_source"], result["record_id"]) == (
        True, "content_hash", signed["X-Service-Record-Id"])


@pytest.mark.parametrize("fmt", FORMATS)
def test_changed_audio_without_its_token_container_has_no_provenance(api_client, key_client, org, generator, fmt):
    signed = _sign(key_client(org), generator, FORMATS[fmt][0]()).content
    result = _verify(api_client, get_codec(fmt).strip_token(signed)[:-64])  # and its last bytes cut off
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


MARKED = {
    "wav": (lambda: audio.tagged_wav(music(), bits=24), "audio/wav"),
    "flac": (lambda: audio.tagged_flac(music()), "audio/flac"),
    "mp3": (lambda: audio.tagged_mp3(music()), "audio/mpeg"),
}


@pytest.mark.parametrize("fmt", MARKED)
def test_long_audio_is_watermarked_and_verifies_high_then_through_the_mark_alone(api_client, key_client, org,
                                                                                  generator, fmt):
    make, mime_type = MARKED[fmt]
    response = _sign(key_client(org), generator, make())
    assert response.status_code == 201, response.content[:300]
    assert response["Content-Type"] == mime_type
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert record.watermark_id != "none"
    codec = get_codec(fmt)
    assert codec.extract_watermark(response.content) == int(record.watermark_id, 16)
    result = _verify(api_client, response.content)
    assert (result["authentic"], result["confidence"], result["token_source"]) == (True, "high", "metadata")
    assert result["signals"]["watermark_found"] is True
    stripped = _verify(api_client, codec.strip_token(response.content))
    assert (stripped["authentic"], stripped["token_source"], stripped["record_id"]) == (
        True, "watermark", str(record.pk))


def test_reencoded_marked_audio_is_tampered_with_the_mark_still_found(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, MARKED["flac"][0]()).content
    flac, wav = get_codec("flac"), get_codec("wav")
    samples, rate = flac.samples(signed)
    as_wav = audio.wav_bytes(np.asarray(samples) * 0.9, rate=rate)  # converted, quieter, container gone
    result = _verify(api_client, as_wav)
    assert (result["token_source"], result["tampered"], result["authentic"]) == ("watermark", True, False)
    assert result["signals"]["watermark_found"] is True and result["reason"] == "content_tampered"
    assert wav.extract_token(as_wav) is None


def test_a_signed_audio_record_verifies_with_dilithium_py_from_public_endpoints(api_client, key_client, org,
                                                                              generator):
    record_id = _sign(key_client(org), generator, MARKED["wav"][0]())["X-Service-Record-Id"]
    record = api_client.get(f"/v1/records/{record_id}").json()
    assert record["format"] == "audio"
    keys = api_client.get(f"/v1/keys/{record['generator_id']}").json()["public_keys"]
    public_key = base64.b64decode(next(k["key"] for k in keys if k["kid"] == record["kid"]))
    message = json.dumps(record["signed_payload"], sort_keys=True, separators=(",", ":")).encode()
    assert ML_DSA_65.verify(public_key, message, base64.b64decode(record["signature"]))


def test_signing_streams_the_audio_twice_and_verifying_decodes_it_once(api_client, key_client, org, generator,
                                                                      monkeypatch):
    wav = get_codec("wav")
    calls = []
    real_decode, real_blocks = type(wav).decode, type(wav).decode_blocks
    monkeypatch.setattr(type(wav), "decode", lambda self, media: calls.append("whole") or real_decode(self, media))
    monkeypatch.setattr(type(wav), "decode_blocks",
                        lambda self, media: calls.append("blocks") or real_blocks(self, media))
    signed = _sign(key_client(org), generator, MARKED["wav"][0]())
    assert signed.status_code == 201 and calls == ["blocks", "blocks"]  # plan the mark, then add it
    assert _verify(api_client, signed.content)["confidence"] == "high" and calls == ["blocks", "blocks", "whole"]


def test_a_three_minute_song_is_watermarked_on_signing_and_reads_back(api_client, key_client, org, generator):
    from tests import hostile_media as hm

    song = hm.music_flac(180)  # 44.1 kHz stereo: 15.9 million samples, over the old marking limit of 6 million
    response = _sign(key_client(org), generator, song)
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert record.watermark_id != "none"
    flac = get_codec("flac")
    assert flac.info(response.content).frames == flac.info(song).frames
    stripped = _verify(api_client, flac.strip_token(response.content))
    assert (stripped["authentic"], stripped["token_source"], stripped["record_id"]) == (
        True, "watermark", str(record.pk))
