"""One cost budget for every verification request, read from the headers before anything is decoded, and
the per-IP limit charged with each file's cost (verification/services.py REQUEST_UNITS, docs/api.md).

The reproductions: anonymous batches of 50 twelve-second 32 kbps MP3s, 20 FLACs and 10 WAVs held a worker
for 140, 50 and 25 s. Bounded here by what was decoded (every codec's mark and fingerprint readers are
counted) and by this process's own CPU time, never by the clock.
"""

import base64
import functools
import io
import resource

import pytest

from media_codecs import open_media, registered_codecs
from media_codecs.base import Codec
from tests import audio as ta
from tests.media import photo_bytes
from verification.services import REQUEST_UNITS, content_units, file_cost

pytestmark = pytest.mark.django_db

URL = "/v1/verify"
# The three batches of the reproduction cost 127, 51 and 25 units; refusing them must cost about what
# parsing their headers does, a small part of what decoding one file would (about a second of CPU).
REFUSAL_CPU_SECONDS = 0.8


@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """The format of every mark or fingerprint read (each decodes the file) from here on."""
    seen: list[str] = []
    for codec in registered_codecs():
        for name in ("extract_watermark", "fingerprint"):
            original = getattr(codec, name)

            @functools.wraps(original)
            def counted(content, _original=original, _format=codec.format):
                seen.append(_format)
                return _original(content)

            monkeypatch.setattr(codec, name, counted)
    return seen


@functools.cache
def clip(fmt: str) -> bytes:
    # Small files, as the attack's were (its 50 MP3s made a 3.1 MB request): mono, a tone for FLAC, 8 kHz WAV
    return {"mp3": lambda: ta.lame_mp3(ta.noise(12, channels=1), kbps=32),
            "flac": lambda: ta.flac_bytes(ta.tone(12, channels=1)),
            "wav": lambda: ta.wav_bytes(ta.noise(12, rate=8000, channels=1), rate=8000)}[fmt]()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _batch(api_client, contents: list[bytes]):
    items = [{"content": base64.b64encode(content).decode()} for content in contents]
    body = {"items": items}
    started = _cpu()
    response = api_client.post(f"{URL}/batch", body, format="json")
    return response, _cpu() - started


@pytest.mark.parametrize(("fmt", "count"), [("mp3", 50), ("flac", 20), ("wav", 10)])
def test_the_audio_batches_of_the_attack_are_refused_before_any_decoding(api_client, settings, reads, fmt, count):
    settings.VERIFY_RATE_PER_MINUTE = 100_000
    response, cpu = _batch(api_client, [clip(fmt)] * count)
    assert response.status_code == 413, response.content[:300]
    body = response.json()
    assert body["error"] == "payload_too_large" and body["details"]["max_units"] == REQUEST_UNITS
    assert body["details"]["units"] > REQUEST_UNITS
    assert reads == []
    assert cpu < REFUSAL_CPU_SECONDS, cpu


def test_a_batch_within_the_budget_is_verified(api_client, reads):
    photo = photo_bytes("astronaut", "png")
    response, _ = _batch(api_client, [clip("mp3"), photo])
    assert response.status_code == 200, response.content[:300]
    assert [item["reason"] for item in response.json()] == ["no_provenance_found"] * 2
    assert "mp3" in reads and "png" in reads


def test_a_clip_costs_more_than_an_image_and_the_budget_holds_one_of_each_worst_case():

    units = {fmt: content_units(clip(fmt), open_media(clip(fmt))) for fmt in ("mp3", "flac", "wav")}
    photo = photo_bytes("astronaut", "jpeg")  # 512x512
    assert content_units(photo, open_media(photo)) < 1 < min(units.values())
    assert all(2 < value < REQUEST_UNITS / 5 for value in units.values()), units
    long_wav = ta.wav_bytes(ta.noise(40, channels=2))  # read 30 s from the middle: the longest audio read
    assert content_units(long_wav, open_media(long_wav)) <= REQUEST_UNITS
    assert content_units(b"plain text", None) < 1 and file_cost(0.1) == 1 and file_cost(11.4) == 11


def test_the_per_ip_limit_is_charged_each_files_units_before_it_is_decoded(api_client, settings, reads):
    mp3 = clip("mp3")
    from media_codecs import open_media

    cost = file_cost(content_units(mp3, open_media(mp3)))
    assert cost > 1
    settings.VERIFY_RATE_PER_MINUTE = 2 * cost - 1
    single = api_client.post(URL, {"content": io.BytesIO(mp3)}, format="multipart")
    assert single.status_code == 200
    assert int(single["X-RateLimit-Remaining"]) == cost - 1
    reads.clear()
    again = api_client.post(URL, {"content": io.BytesIO(mp3)}, format="multipart")  # twice its cost is over the limit
    assert again.status_code == 429 and again.json()["error"] == "rate_limited"
    assert reads == []


def test_a_batch_is_charged_what_its_files_cost_one_by_one(api_client, settings):
    # Each request from its own address: each is the first its window counts
    settings.VERIFY_RATE_PER_MINUTE = 1000
    mp3, photo = clip("mp3"), photo_bytes("astronaut", "jpeg")
    costs = []
    for index, content in enumerate((mp3, photo)):
        single = api_client.post(URL, {"content": io.BytesIO(content)}, format="multipart",
                                 REMOTE_ADDR=f"198.51.100.{10 + index}")
        costs.append(1000 - int(single["X-RateLimit-Remaining"]))
    items = [{"content": base64.b64encode(content).decode()} for content in (mp3, photo, photo)]
    response = api_client.post(f"{URL}/batch", {"items": items}, format="json", REMOTE_ADDR="198.51.100.20")
    assert response.status_code == 200
    assert 1000 - int(response["X-RateLimit-Remaining"]) == costs[0] + 2 * costs[1]
    assert costs[1] == 1 and costs[0] > 1  # a twelve-second clip is several verifications' work


def test_by_content_is_held_to_the_budget_and_charged_its_units(api_client, settings, reads):
    settings.VERIFY_RATE_PER_MINUTE = 1000
    response = api_client.post("/v1/c2pa/matches/byContent", {"content": io.BytesIO(clip("flac"))}, format="multipart",
                               REMOTE_ADDR="198.51.100.30")
    assert response.status_code == 200, response.content[:300]
    assert 1000 - int(response["X-RateLimit-Remaining"]) > 1 and reads == ["flac"]
    silent = ta.flac_bytes(ta.tone(40, rate=192_000, channels=8) * 0, rate=192_000)
    reads.clear()
    refused = api_client.post("/v1/c2pa/matches/byContent", {"content": io.BytesIO(silent)}, format="multipart")
    assert refused.status_code == 413 and refused.json()["error"] == "payload_too_large"
    assert reads == []


def test_every_codec_states_its_work_from_the_header():
    assert all(type(codec).decode_work is not Codec.decode_work or codec.family == "text"
               for codec in registered_codecs())


def test_text_is_priced_by_the_marks_characters_its_reader_takes_run_by_run():
    from media_codecs import open_media

    def units(text: str) -> float:
        data = text.encode()
        return content_units(data, open_media(data))

    plain, marked = "hello world " * 400_000, "a\u200bb\u200c " * 400_000
    assert units(marked) > units(plain) + 1.5  # fewer characters, but 800,000 of the mark's
    assert units("a\u200bb\u200c " * 2_300_000) > REQUEST_UNITS  # 21 MB of them: 3 s of reading


def test_a_format_that_carries_a_manifest_is_charged_the_bindings_pass_over_its_bytes():
    from media_codecs.base import BYTES_PER_UNIT
    from tests.video import make_video

    for data in (make_video("mp4", seconds=1.0), photo_bytes("astronaut", "png")):
        media = open_media(data)
        assert content_units(data, media) == pytest.approx(
            media.codec.decode_work(media).units + len(data) / BYTES_PER_UNIT)
    mkv = make_video("mkv", seconds=1.0)  # no manifest travels in Matroska: nothing more to hash
    assert content_units(mkv, open_media(mkv)) == open_media(mkv).codec.decode_work(open_media(mkv)).units
