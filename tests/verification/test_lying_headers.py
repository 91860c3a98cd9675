"""A file whose header understates its payload: /v1/sign refuses it (400 validation_error, no record, the
quota untouched); /v1/verify reads nothing of it (no provenance found: what it answers for any content its
codecs cannot read), costs one verification and decodes nothing (docs/decisions.md, "Lying headers").

The reproduction: a FLAC whose STREAMINFO declared 10 s over far more samples was signed as 10 s of audio.
"""

import io

import pytest

from billing.models import UsageCounter
from media_codecs.audio import flac
from provenance.models import Record
from tests import audio as ta
from tests import factories
from tests import hostile_media as hm
from tests.media_codecs.test_lying_headers import _patched_mdhd_duration, flac_cli, with_total_samples
from tests.verification import uploads
from tests.verification.test_budget import reads  # noqa: F401  (a fixture)
from tests.video import make_video

pytestmark = pytest.mark.django_db


def lying_flac() -> bytes:
    return with_total_samples(flac_cli(12), 10 * ta.RATE)  # 10 s declared over 12 s of frames


def appended_flac() -> bytes:
    data = flac_cli(10)
    return data + bytes(flac.parse_flac(data).frames) * 3  # 40 s of frames behind a 10-s STREAMINFO


LIARS = {
    "flac": ("audio", lying_flac),
    "flac-appended": ("audio", appended_flac),
    "mp3": ("audio", lambda: hm.mp3_with_xing_frames(2) + hm.mp3_frames(500)),
    "mp4": ("video", lambda: _patched_mdhd_duration(make_video("mp4", seconds=4, size=(64, 48)), 4)),
}


@pytest.mark.parametrize("name", list(LIARS))
def test_a_lying_header_is_not_signed_and_counts_nothing(key_client, org, name):
    family, build = LIARS[name]
    generator = factories.make_generator(org=org, formats=[family])
    response = uploads.sign(key_client(org), generator, build(), model="m")
    assert response.status_code == 400, response.content[:300]
    body = response.json()
    assert body["error"] == "validation_error" and "malformed" in body["details"]["content"][0]
    assert not Record.objects.exists()
    assert sum(UsageCounter.objects.filter(org=org).values_list("signatures_used", flat=True)) == 0


@pytest.mark.parametrize("name", list(LIARS))
def test_a_lying_header_is_verified_as_unreadable_without_decoding(api_client, settings, reads, name):  # noqa: F811
    settings.VERIFY_RATE_PER_MINUTE = 100
    _, build = LIARS[name]
    response = api_client.post("/v1/verify", {"content": io.BytesIO(build())}, format="multipart")
    assert response.status_code == 200
    assert response.json()["reason"] == "no_provenance_found"
    assert int(response["X-RateLimit-Remaining"]) >= 100 - 2  # one verification (two if the window turned)
    assert reads == []


def test_the_honest_flac_is_signed(key_client, org):
    generator = factories.make_generator(org=org, formats=["audio"])
    response = uploads.sign(key_client(org), generator, flac_cli(12), model="m")
    assert response.status_code == 201, response.content[:300]
