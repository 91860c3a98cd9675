"""The progress callback (media_codecs/progress.py) and the codec work that reports through it: fractions only
grow, end at 1, come a bounded number of times, and the bytes made are the same with a callback or without."""

from __future__ import annotations

import datetime

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey

from media_codecs import get_codec
from media_codecs.c2pa import ManifestFacts, embed, self_signed_certificate
from media_codecs.progress import STEP, counted, parts, steps
from tests import audio, video
from tests.media import photo_bytes
from tests.media_codecs.conftest import TOKEN

MARK_ID = 0x0123456789ABCDEF
MOST_CALLS = round(1 / STEP) + 1


class Heard(list):
    """A callback that keeps every fraction it is given."""

    def __call__(self, fraction: float) -> None:
        self.append(fraction)


def assert_sound(heard: Heard) -> None:
    assert heard, "no progress reported"
    assert heard == sorted(heard) and len(set(heard)) == len(heard)  # only upward, never the same twice
    assert heard[-1] == 1.0 and all(0.0 < fraction <= 1.0 for fraction in heard)
    assert len(heard) <= MOST_CALLS


def test_steps_forward_only_moves_of_a_step_upward_and_the_end():
    heard = Heard()
    report = steps(heard)
    for fraction in (0.0, 0.004, 0.01, 0.015, 0.5, 0.3, 0.505, 0.52, 1.2, 1.0):
        report(fraction)
    assert heard == [0.01, 0.5, 0.52, 1.0]


def test_a_million_reports_reach_the_callback_at_most_once_a_step():
    heard = Heard()
    report = steps(heard)
    for done in range(1, 1_000_001):
        report(done / 1_000_000)
    assert_sound(heard)
    assert len(heard) == MOST_CALLS - 1  # every percent from 1 to 100


def test_parts_span_the_whole_in_order_of_their_weights():
    heard = Heard()
    first, empty, second = parts(steps(heard), [1, 0, 3])
    first(1.0)
    empty(1.0)
    second(0.5)
    second(1.0)
    assert heard == [0.25, 0.625, 1.0]


def test_without_a_callback_nothing_is_made_to_call():
    assert parts(None, [1, 2]) == [None, None]
    assert list(counted(iter(range(3)), 3, None)) == [0, 1, 2]


def test_counted_reports_the_share_of_items_taken():
    heard = Heard()
    assert list(counted(iter("abcd"), 4, heard)) == list("abcd")
    assert heard == [0.25, 0.5, 0.75, 1.0]


@pytest.fixture(scope="module")
def long_clip() -> bytes:
    return video.make_video(seconds=6.0, fps=25, keyint=25)


def test_video_fingerprints_report_their_decoding_and_give_the_same_set(long_clip):
    codec = get_codec("mp4")
    heard = Heard()
    with_progress = codec.fingerprints(codec.open(long_clip), heard)
    assert_sound(heard)
    assert len(heard) >= 10  # the frames up to the last offset, then the keyframes' packets
    assert with_progress == codec.fingerprints(codec.open(long_clip))


@pytest.mark.parametrize("make", [audio.tagged_wav, audio.tagged_flac], ids=["wav", "flac"])
def test_an_audio_watermark_reports_both_passes_and_makes_the_same_bytes(make):
    data = make(audio.noise(seconds=20.0))
    codec = get_codec("wav" if data.startswith(b"RIFF") else "flac")
    heard = Heard()
    marked = codec.embed_watermark(codec.open(data), MARK_ID, heard)
    assert_sound(heard)
    assert any(fraction < 0.45 for fraction in heard) and any(0.5 < fraction < 1.0 for fraction in heard)
    assert marked == codec.embed_watermark(codec.open(data), MARK_ID)


@pytest.mark.parametrize("fmt", ["jpeg", "png"])
def test_an_image_watermark_reports_its_steps_and_makes_the_same_bytes(fmt):
    data = photo_bytes("astronaut", fmt)
    codec = get_codec(fmt)
    heard = Heard()
    marked = codec.embed_watermark(codec.open(data), MARK_ID, heard)
    assert heard == [0.3, 0.6, 1.0]
    assert marked == codec.embed_watermark(codec.open(data), MARK_ID)


def test_a_c2pa_embed_in_a_video_reports_its_steps_and_makes_the_same_bytes(long_clip):
    key = MLDSA65PrivateKey.generate()
    moment = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    certificate = self_signed_certificate(key, common_name="gen_42", organization="Test Org", not_before=moment,
                                          not_after=moment + datetime.timedelta(days=30))
    facts = ManifestFacts(record_id="rec_0123", model="video-model", generator_id="gen_42", kid="0011223344556677",
                          token=TOKEN, certificate_chain=(certificate,), public_key=key.public_key().public_bytes_raw(),
                          public_key_url="https://example.test/v1/keys/gen_42", watermark_id=None,
                          created_at="2026-01-01T00:00:00Z")

    def constant_signature(message: bytes) -> bytes:  # ML-DSA-65's size; a real signature is randomised
        return bytes(3309)

    heard = Heard()
    embedded = embed(long_clip, facts, constant_signature, progress=heard)
    assert_sound(heard)
    assert embedded == embed(long_clip, facts, constant_signature)


def test_a_silent_clip_still_ends_its_progress_at_one():
    flat = video.make_video(seconds=1.0, picture=lambda index, width, height: np.zeros((height, width, 3), np.uint8))
    codec = get_codec("mp4")
    heard = Heard()
    assert codec.fingerprints(codec.open(flat), heard) == []
    assert heard[-1] == 1.0
