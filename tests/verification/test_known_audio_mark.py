"""An audio record's own file is read once: its content hash covers every byte the audio decoder is given
(the data chunk, STREAMINFO and the FLAC frames, the MPEG frames), so a file with the record's hash reads
alike each time. The first verification reads the mark and keeps the answer (`mark_in_file`); later ones
report it without decoding; any other file is read (tests/verification/test_known_mark.py for images)."""

import io

import pytest

from media_codecs import get_codec
from media_codecs.audio.base import AudioCodec
from provenance.models import Record
from tests import audio, factories
from tests.media_codecs.audio.test_marked_containers import music

pytestmark = pytest.mark.django_db

MAKERS = {
    "wav": lambda samples: audio.wav_bytes(samples),
    "flac": lambda samples: audio.flac_bytes(samples),
    "mp3": lambda samples: audio.ffmpeg_mp3(samples, kbps=128),
}


@pytest.fixture
def mark_reads(monkeypatch) -> list[str]:
    """The formats of every audio mark read from here on."""
    reads = []
    original = AudioCodec.extract_watermark

    def counted(self, content):
        reads.append(self.format)
        return original(self, content)

    monkeypatch.setattr(AudioCodec, "extract_watermark", counted)
    return reads


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content), **({"token": token} if token else {})}
    response = api_client.post("/v1/verify", body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.mark.parametrize("fmt", MAKERS)
def test_an_audio_records_own_file_is_read_once_and_a_changed_one_every_time(api_client, key_client, org,
                                                                             mark_reads, fmt):
    generator = factories.make_generator(org=org, formats=["audio"])
    response = key_client(org).post("/v1/sign", {"content": io.BytesIO(MAKERS[fmt](music())), "model": "m",
                                                 "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    signed, record = response.content, Record.objects.get(pk=response["X-Service-Record-Id"])
    mark_reads.clear()
    first = _verify(api_client, signed)
    assert mark_reads == [fmt] and first["signals"]["watermark_found"] is True
    assert Record.objects.values_list("mark_in_file", flat=True).get(pk=record.pk) is True
    later = _verify(api_client, signed)
    assert mark_reads == [fmt] and later == first  # the unchanged file is not decoded again

    codec = get_codec(fmt)
    changed = audio.ffmpeg_mp3(codec.samples(signed)[0], kbps=128)  # new samples, the token given beside them
    for _ in range(2):
        result = _verify(api_client, changed, token=codec.extract_token(signed))
        assert result["tampered"] is True and result["signals"]["watermark_found"] is True
    assert mark_reads == [fmt, "mp3", "mp3"]
