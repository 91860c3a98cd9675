"""The watermark through WAV, FLAC and MP3: embedded by re-encoding among the file's metadata, read back
when the token container is gone, decoded once per file; content it cannot carry says so."""

from __future__ import annotations

import numpy as np
import pytest
from mutagen.mp3 import MP3

from media_codecs import UnsupportedFormat, get_codec
from media_codecs.audio import watermark
from tests import audio

MARK = 0x5EED_0000_A0D1_0042
SECONDS = 12.0  # over the watermark's minimum (watermark.MIN_EMBED_SECONDS)


def music(seconds: float = SECONDS, rate: int = audio.RATE) -> np.ndarray:
    """Plucked chords over a quiet noise bed, stereo: material the mark can hide in."""
    rng = np.random.default_rng(7)
    t = np.arange(int(seconds * rate)) / rate
    out = 0.02 * rng.standard_normal(len(t))
    for i, f0 in enumerate((196.0, 247.0, 294.0, 392.0)):
        note = ((t // 0.4) % 4 == i) * np.exp(-4 * (t % 0.4))
        out += note * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 12))
    out = 0.5 * out / np.max(np.abs(out))
    return np.stack([out, 0.8 * out + 0.01 * rng.standard_normal(len(t))], axis=1)


MARKABLE = {
    "wav 16-bit": ("wav", lambda: audio.tagged_wav(music(), bits=16)),
    "wav 24-bit": ("wav", lambda: audio.tagged_wav(music(), bits=24)),
    "flac": ("flac", lambda: audio.tagged_flac(music())),
    "mp3 128 kbps": ("mp3", lambda: audio.tagged_mp3(music())),
}


def _snr_db(original: np.ndarray, marked: np.ndarray) -> float:
    return 10 * np.log10(np.sum(original**2) / np.sum((original - marked) ** 2))


@pytest.mark.parametrize("case", MARKABLE)
def test_the_mark_survives_its_container_and_the_token_strip(case):
    fmt, make = MARKABLE[case]
    codec, original = get_codec(fmt), make()
    assert codec.watermark_possible(original)
    marked = codec.embed_watermark(original, MARK)
    signed = codec.embed_token(marked, "svc_test-token")
    stripped = codec.strip_token(signed)
    assert codec.extract_token(stripped) is None
    assert codec.extract_watermark(stripped) == MARK
    assert codec.extract_token(signed) == "svc_test-token"
    before, after = codec.samples(original)[0], codec.samples(marked)[0]
    assert after.shape == before.shape
    if fmt != "mp3":  # lossless: the only change is the mark
        assert _snr_db(before, after) >= 35.0
        assert codec.strip_token(codec.embed_token(original, "svc_x")) != stripped  # the mark is content


def test_every_other_piece_of_metadata_is_kept_through_marking():
    wav = get_codec("wav")
    marked = wav.embed_watermark(audio.tagged_wav(music(), bits=24), MARK)
    assert [chunk_id for chunk_id, _ in audio.riff_walk(marked)] == [
        b"fmt ", b"LIST", b"junk", b"data", b"odd ", b"cue "]
    assert wav.info(marked).bits_per_sample == 24
    mp3 = get_codec("mp3")
    original = audio.tagged_mp3(music())
    marked_mp3 = mp3.embed_watermark(original, MARK)
    info_before, info_after = MP3(_file(original)).info, MP3(_file(marked_mp3)).info
    assert (info_after.bitrate, info_after.sample_rate, info_after.channels) == (
        info_before.bitrate, info_before.sample_rate, info_before.channels)
    assert MP3(_file(marked_mp3)).tags["TIT2"].text == MP3(_file(original)).tags["TIT2"].text


def test_audio_under_the_minimum_and_thin_mp3_carry_the_token_alone():
    wav, mp3 = get_codec("wav"), get_codec("mp3")
    short = audio.tagged_wav(music(watermark.MIN_EMBED_SECONDS - 1))
    assert not wav.watermark_possible(short)
    with pytest.raises(UnsupportedFormat):
        wav.embed_watermark(short, MARK)
    thin = audio.with_id3(audio.lame_mp3(music(), kbps=96))  # 48 kbps a channel: re-encoding costs too much
    assert not mp3.watermark_possible(thin)
    mono = audio.with_id3(audio.lame_mp3(music()[:, :1], kbps=64))  # 64 kbps for one channel is enough
    assert mp3.watermark_possible(mono)


def test_a_file_is_decoded_once_however_often_it_is_read(monkeypatch):
    flac = get_codec("flac")
    media = flac.open(flac.embed_watermark(audio.tagged_flac(music()), MARK))
    calls = []
    real_decode = type(flac).decode
    monkeypatch.setattr(type(flac), "decode", lambda self, m: calls.append(1) or real_decode(self, m))
    assert flac.extract_watermark(media) == MARK
    assert flac.extract_watermark(media) == MARK and flac.samples(media)[1] == audio.RATE
    assert len(calls) == 1


def test_unmarked_audio_reads_no_mark():
    for fmt, make in (("wav", lambda: audio.tagged_wav(music())), ("flac", lambda: audio.tagged_flac(music()))):
        assert get_codec(fmt).extract_watermark(make()) is None


def _file(data: bytes):
    import io

    return io.BytesIO(data)


@pytest.mark.parametrize("fmt", ["wav", "flac", "mp3"])
def test_verification_decodes_only_the_middle_minute(fmt, monkeypatch):
    from media_codecs.audio import base

    monkeypatch.setattr(base, "READ_SECONDS", 5.0)  # a 12-s file stands in for a long one
    codec = get_codec(fmt)
    data = {"wav": lambda: audio.tagged_wav(music()), "flac": lambda: audio.tagged_flac(music()),
            "mp3": lambda: audio.tagged_mp3(music())}[fmt]()
    media = codec.open(data)
    window, rate = codec.middle(media, 5.0)
    assert window.shape == (5 * rate, 2)
    assert "samples" not in media._cache  # the whole file was never decoded
    whole = codec.samples(codec.open(data))[0]
    start = (len(whole) - len(window)) // 2
    if fmt == "mp3":  # seeking in MP3 lands on the same audio give or take the decoder's priming
        assert np.corrcoef(whole[start : start + len(window), 0], window[:, 0])[0, 1] > 0.99
    else:
        assert np.array_equal(whole[start : start + len(window)], window)


def test_a_long_file_is_read_from_its_middle_and_marked_files_still_read():
    wav = get_codec("wav")
    long_marked = wav.embed_watermark(audio.wav_bytes(music(70.0, rate=16_000), rate=16_000), MARK)
    media = wav.open(long_marked)
    assert wav.extract_watermark(media) == MARK
    assert "samples" not in media._cache and len(media._cache["middle"]) == 30 * 16_000


def test_audio_over_the_marking_limit_is_signed_with_its_token_alone():
    from media_codecs.audio.base import MAX_MARKED_SAMPLES
    from tests import hostile_media as hm

    flac = get_codec("flac")
    frames = MAX_MARKED_SAMPLES // 2 + 1  # stereo: one frame over, as the header declares it
    assert not flac.watermark_possible(hm.flac_declaring(total_samples=frames))
    assert flac.watermark_possible(hm.flac_declaring(total_samples=frames - 1))


def test_marking_streams_the_same_mark_the_array_embedder_adds():
    wav = get_codec("wav")
    original = audio.wav_bytes(music(), rate=audio.RATE)
    marked = wav.samples(wav.embed_watermark(original, MARK))[0]
    expected = watermark.embed(wav.samples(original)[0], audio.RATE, MARK)
    assert np.max(np.abs(marked - expected)) <= 1.0 / 32768  # the same to the 16-bit rounding
