"""Signing with a progress callback (what a job's worker passes) hears the whole of the work, and makes the
same bytes as the synchronous route, which passes none."""

import uuid
from datetime import UTC, datetime

import pytest

from provenance import signing
from tests import audio, factories, video
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
MARK_ID = 0x0123456789ABCDEF
RECORD_ID = uuid.UUID("01234567-89ab-4def-8123-456789abcdef")
SIGNED_AT = datetime(2026, 11, 28, 2, 30, tzinfo=UTC)

SAMPLES = {
    "wav": lambda: audio.tagged_wav(audio.noise(seconds=8.0)),
    "mp4": lambda: video.make_video(seconds=5.0, keyint=25),
    "png": lambda: photo_bytes("astronaut", "png"),
}


class Heard(list):
    def __call__(self, fraction: float) -> None:
        self.append(fraction)


@pytest.fixture
def same_ids(monkeypatch):
    """The record id, the mark id and the signing time (which the file discloses) fixed, so that two signings
    of one file can be compared byte for byte."""
    monkeypatch.setattr(signing.uuid, "uuid4", lambda: RECORD_ID)
    monkeypatch.setattr(signing.secrets, "randbits", lambda bits: MARK_ID)
    monkeypatch.setattr(signing.timezone, "now", lambda: SIGNED_AT)


def _prepare(org, generator, data, progress=None, watermark=True):
    return signing.content_sign_prepare(org=org, generator_id=str(generator.pk), model="m", data=data,
                                        declared_family=None, progress=progress, watermark=watermark)


@pytest.mark.parametrize("fmt", list(SAMPLES))
def test_a_progress_callback_changes_no_byte_of_the_signed_file(org, same_ids, fmt):
    generator = factories.make_generator(org=org, formats=["image", "audio", "video"])
    data = SAMPLES[fmt]()
    heard = Heard()
    # a video's mark is left out here: its H.264 re-encode (PyAV's libx264) is not always byte-stable
    marked = fmt != "mp4"
    with_progress = _prepare(org, generator, data, heard, watermark=marked)
    without = _prepare(org, generator, data, watermark=marked)
    assert with_progress.data == without.data
    assert with_progress.draft.content_hash == without.draft.content_hash
    assert heard == sorted(heard) and heard[-1] == 1.0 and 0 < heard[0] < 1
    assert len(heard) <= 101
