"""The audio watermark on audio made at test time: synthetic speech, music, noise, tones, and
espeak-ng speech where it is installed. Robustness is measured in bench/audio_watermark.py;
here each attack the module promises to survive is checked once."""

from __future__ import annotations

import io
import shutil
import subprocess
from fractions import Fraction

import numpy as np
import pytest
from scipy.signal import lfilter, resample_poly

from media_codecs.audio import spectrum
from media_codecs.audio.watermark import (
    ENVELOPE_STEPS,
    MIN_EMBED_SECONDS,
    AudioTooShort,
    WatermarkError,
    embed,
    envelope,
    extract,
    reading,
)

MARK = 0x0123_4567_89AB_CDEF
RATE = 44100


def speech_like(seconds: float, rate: int = RATE, seed: int = 0) -> np.ndarray:
    """Glottal pulse trains with a wandering pitch and some breath noise through three formant
    resonators, in syllables of 120-300 ms separated by short pauses: crude but speech-shaped."""
    rng = np.random.default_rng(seed)
    out, position = np.zeros(int(seconds * rate)), 0
    while position < len(out):
        length = int(rng.uniform(0.12, 0.3) * rate)
        f0 = rng.uniform(90, 220) * (1 + 0.1 * np.linspace(-1, 1, length))
        pulses = np.diff(np.floor(np.cumsum(f0 / rate)), prepend=0.0)
        syllable = pulses + 0.05 * rng.standard_normal(length)
        for formant in (rng.uniform(300, 900), rng.uniform(900, 2300), rng.uniform(2300, 3200)):
            radius = np.exp(-np.pi * 150 / rate)
            theta = 2 * np.pi * formant / rate
            syllable = lfilter([1.0], [1, -2 * radius * np.cos(theta), radius**2], syllable)
        syllable *= np.hanning(length)
        end = min(len(out), position + length)
        out[position:end] = syllable[: end - position]
        position = end + int(rng.uniform(0.03, 0.12) * rate)
    return 0.5 * out / np.max(np.abs(out))


def music_like(seconds: float, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    out = np.zeros_like(t)
    for i, f0 in enumerate((196.0, 247.0, 294.0, 392.0)):
        note = ((t // 0.5) % 4 == i) * np.exp(-3 * (t % 0.5))
        out += note * sum(np.sin(2 * np.pi * k * f0 * t) / k for k in range(1, 10))
    return 0.4 * out / np.max(np.abs(out))


def stereo(x: np.ndarray) -> np.ndarray:
    return np.stack([x, 0.7 * x], axis=1)


def snr_db(original: np.ndarray, marked: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(original**2) / np.sum((marked - original) ** 2)))


def resample(x: np.ndarray, ratio: float) -> np.ndarray:
    frac = Fraction(ratio).limit_denominator(1000)
    return resample_poly(x, frac.numerator, frac.denominator, axis=0)


def espeak(text: str, seconds: float, tmp_path) -> tuple[np.ndarray, int] | None:
    """Real synthesised speech, looped to ``seconds``; None when espeak-ng is not installed."""
    if not shutil.which("espeak-ng"):
        return None
    soundfile = pytest.importorskip("soundfile")
    path = tmp_path / "speech.wav"
    subprocess.run(["espeak-ng", "-s", "150", "-w", str(path), text], check=True)
    speech, rate = soundfile.read(str(path))
    return np.resize(speech, int(seconds * rate)), rate


@pytest.fixture(scope="module")
def speech_24s(tmp_path_factory) -> tuple[np.ndarray, np.ndarray]:
    """24 s of espeak-ng speech at 44.1 kHz stereo (music when espeak-ng is missing), marked."""
    text = ("Provenance signing attaches a verifiable record to every file we publish. The mark has "
            "to survive compression, resampling and trimming, and must never name the wrong file.")
    made = espeak(text, 24, tmp_path_factory.mktemp("speech"))
    original = stereo(resample(made[0], RATE / made[1]) if made else music_like(24))
    return original, embed(original, RATE, MARK)


@pytest.mark.parametrize(("rate", "channels"), [(8000, 1), (16000, 2), (48000, 6), (96000, 1)])
def test_round_trip_at_each_rate_and_channel_count(rate: int, channels: int) -> None:
    noise_bed = 0.01 * np.random.default_rng(rate).standard_normal(12 * rate)
    mono = music_like(12, rate) + noise_bed
    samples = mono if channels == 1 else np.stack([mono * (1 - 0.1 * c) for c in range(channels)], axis=1)
    marked = embed(samples, rate, MARK)
    assert marked.shape == samples.shape
    assert extract(marked, rate) == MARK


def add_noise(x: np.ndarray, snr: float, seed: int = 9) -> np.ndarray:
    return x + np.random.default_rng(seed).standard_normal(x.shape) * np.sqrt(np.mean(x**2) / 10 ** (snr / 10))


def test_synthetic_speech_round_trip_spends_its_35_db_budget() -> None:
    original = stereo(speech_like(24))
    marked = embed(original, RATE, MARK)
    # the strongest step that fits: at least 35 dB, but not a weak mark far under the budget
    assert 35.0 <= snr_db(original, marked) <= 37.5
    assert extract(marked, RATE) == MARK
    assert extract(marked[7 * RATE : 17 * RATE], RATE) == MARK
    assert extract(add_noise(marked, 30), RATE) == MARK


def test_music_survives_white_noise_at_20_db_snr() -> None:
    original = stereo(music_like(24))
    marked = embed(original, RATE, MARK)
    assert snr_db(original, marked) >= 35.0
    assert extract(add_noise(marked, 20), RATE) == MARK


def test_tonal_music_no_step_fits_is_marked_to_its_budget_and_read_after_a_cut() -> None:
    # a few partials with vibrato, notes decaying for 3 s: even the smallest step's mark exceeds the
    # budget, so the mark is planned to the budget (dear symbol copies moved part of the way)
    t = np.arange(24 * RATE) / RATE
    phase = 2 * np.pi * np.where((t // 3) % 2 == 0, 196.0, 294.0) * t + 3 * np.sin(2 * np.pi * 5 * t)
    melody = np.exp(-(t % 3)) * sum(np.sin(k * phase) / k for k in range(1, 9))
    original = stereo(melody / np.max(np.abs(melody)) * 0.3)
    marked = embed(original, RATE, MARK)
    assert 35.0 <= snr_db(original, marked) <= 36.0
    assert extract(marked[7 * RATE : 17 * RATE], RATE) == MARK
    assert extract(add_noise(marked, 20), RATE) == MARK


def test_marked_speech_keeps_35_db_snr_and_its_shape(speech_24s) -> None:
    original, marked = speech_24s
    assert marked.shape == original.shape
    assert snr_db(original, marked) >= 35.0
    assert extract(marked, RATE) == MARK


def test_music_and_noise_round_trip() -> None:
    rng = np.random.default_rng(3)
    for samples in (stereo(music_like(12)), 0.1 * rng.standard_normal((12 * RATE, 2))):
        marked = embed(samples, RATE, 0xFFFF_FFFF_FFFF_FFFF)
        assert snr_db(samples, marked) >= 35.0
        assert extract(marked, RATE) == 0xFFFF_FFFF_FFFF_FFFF


def test_digital_silence_is_left_untouched() -> None:
    # 0 / 0 in the embedder's noise share once turned silence into NaN samples
    silence = np.zeros((12 * RATE, 2))
    assert np.array_equal(embed(silence, RATE, MARK), silence)
    assert extract(silence, RATE) is None


def test_loud_input_is_never_pushed_beyond_full_scale() -> None:
    loud = np.clip(3 * music_like(12), -1, 1)
    marked = embed(loud, RATE, MARK)
    assert np.max(np.abs(marked)) <= 1.0
    assert extract(marked, RATE) == MARK


def test_embedding_is_deterministic_and_ids_differ() -> None:
    samples = music_like(12)
    assert np.array_equal(embed(samples, RATE, 7), embed(samples, RATE, 7))
    assert extract(embed(samples, RATE, 8), RATE) == 8


def test_ten_seconds_cut_from_the_middle_still_read(speech_24s) -> None:
    _, marked = speech_24s
    assert extract(marked[7 * RATE : 17 * RATE], RATE) == MARK


def test_resampling_gain_and_clipping_are_survived(speech_24s) -> None:
    _, marked = speech_24s
    assert extract(resample(marked, 48000 / RATE), 48000) == MARK
    assert extract(marked * 0.5, RATE) == MARK
    assert extract(np.clip(marked * 1.41, -1, 1), RATE) == MARK


def test_white_noise_at_30_db_snr_is_survived(speech_24s) -> None:
    _, marked = speech_24s
    assert extract(add_noise(marked, 30), RATE) == MARK


@pytest.mark.parametrize("speed", [1.02, 0.98])
def test_speed_change_with_pitch_is_survived(speech_24s, speed: float) -> None:
    _, marked = speech_24s
    assert extract(resample(marked, 1 / speed), RATE) == MARK


def test_mp3_round_trip() -> None:
    lameenc = pytest.importorskip("lameenc")
    soundfile = pytest.importorskip("soundfile")
    samples = stereo(music_like(24))  # lame resamples 64 kbps stereo to 24 kHz
    marked = embed(samples, RATE, MARK)
    encoder = lameenc.Encoder()
    encoder.set_bit_rate(64)
    encoder.set_in_sample_rate(RATE)
    encoder.set_channels(2)
    encoder.set_quality(2)
    pcm = (np.clip(marked, -1, 1) * 32767).astype(np.int16)
    mp3 = encoder.encode(pcm.tobytes()) + encoder.flush()
    try:
        decoded, rate = soundfile.read(io.BytesIO(bytes(mp3)))
    except soundfile.LibsndfileError:
        pytest.skip("this libsndfile cannot decode MP3")
    assert extract(decoded, rate) == MARK


@pytest.mark.skipif(not shutil.which("espeak-ng"), reason="espeak-ng not installed")
def test_real_speech_round_trip_at_its_own_rate(tmp_path) -> None:
    text = ("The watermark must stay inaudible in speech, which leaves it little room between the "
            "words. This sentence is long enough to fill a dozen seconds at a normal speaking rate.")
    speech, rate = espeak(text, 13, tmp_path)
    marked = embed(speech, rate, MARK)
    assert snr_db(speech, marked) >= 35.0
    assert extract(marked, rate) == MARK


def test_unmarked_audio_never_yields_an_id() -> None:
    rng = np.random.default_rng(1)
    t = np.arange(12 * RATE) / RATE
    unmarked = [
        np.zeros(12 * RATE),
        0.2 * rng.standard_normal((12 * RATE, 2)),
        speech_like(12, seed=21),
        stereo(music_like(12)),
        0.5 * np.sin(2 * np.pi * 1000 * t),
        0.5 * np.sin(2 * np.pi * 200 * 12 / np.log(40) * (40 ** (t / 12) - 1)),
    ]
    # and unmarked audio after the attacks that make a reader try harder (noise floor, speed search)
    unmarked += [add_noise(stereo(music_like(12)), 20), add_noise(speech_like(12, seed=22), 20),
                 resample(speech_like(12, seed=23), 1 / 1.02)]
    for samples in unmarked:
        assert extract(samples, RATE) is None


def sweep_over_pink_noise(seconds: float, seed: int = 4) -> np.ndarray:
    """A linear 40 Hz-16 kHz sine sweep over pink noise 39 dB under it (as the bench's sox sweep): from
    about a fifth of the way on, all its energy is above the cells' 0.3-3.4 kHz band."""
    t = np.arange(int(seconds * RATE)) / RATE
    sweep = 0.5 * np.sin(2 * np.pi * (40 * t + (16000 - 40) * t**2 / (2 * seconds)))
    spectrum_ = np.fft.rfft(np.random.default_rng(seed).standard_normal(len(t)))
    spectrum_[1:] /= np.sqrt(np.arange(1, len(spectrum_)))
    pink = np.fft.irfft(spectrum_, len(t))
    pink *= np.sqrt(np.mean(sweep**2) / np.mean(pink**2)) * 10 ** (-39 / 20)
    return stereo(sweep + pink)


@pytest.mark.parametrize(("snr", "seed"), [(30, 11), (20, 12)])
def test_band_poor_sweep_survives_white_noise_through_the_envelope(snr: float, seed: int) -> None:
    original = sweep_over_pink_noise(24)
    marked = embed(original, RATE, MARK)
    assert snr_db(original, marked) >= 35.0
    noisy = add_noise(marked, snr, seed)
    assert extract(noisy, RATE) == MARK
    # it is the envelope that reads it: the cells hold only the pink noise the added noise covers
    mix = spectrum.mono_mix(noisy)
    assert envelope.read(mix, RATE, ENVELOPE_STEPS) == MARK
    assert reading.read(spectrum.resample(mix, RATE, spectrum.RATE), search_speed=False) is None


def test_envelope_is_read_after_gain_and_within_the_readers_30_s() -> None:
    original = sweep_over_pink_noise(40)
    marked = embed(original, RATE, 0xFFFF_0000_FFFF_0001)
    mix = spectrum.mono_mix(add_noise(marked * 0.5, 20))
    assert envelope.read(mix, RATE, ENVELOPE_STEPS) == 0xFFFF_0000_FFFF_0001
    # one period and a bit (10.6 s) from anywhere is enough
    assert envelope.read(mix[13 * RATE : 25 * RATE], RATE, ENVELOPE_STEPS) == 0xFFFF_0000_FFFF_0001


def test_both_carriers_together_keep_35_db_on_speech_and_the_sweep() -> None:
    for original in (stereo(speech_like(24, seed=5)), sweep_over_pink_noise(24)):
        marked = embed(original, RATE, MARK)
        assert 35.0 <= snr_db(original, marked) <= 37.5


def test_envelope_never_reads_an_id_from_unmarked_audio() -> None:
    rng = np.random.default_rng(2)
    unmarked = [sweep_over_pink_noise(24, seed=8), add_noise(sweep_over_pink_noise(24, seed=9), 20),
                0.2 * rng.standard_normal((24 * RATE, 2)), stereo(music_like(24)), speech_like(24, seed=31),
                add_noise(stereo(music_like(24)), 20), np.zeros(24 * RATE)]
    for samples in unmarked:
        assert envelope.read(spectrum.mono_mix(samples), RATE, ENVELOPE_STEPS) is None
        assert extract(samples, RATE) is None
    # a mark of another id is never read as this one, nor as a wrong id
    other = embed(sweep_over_pink_noise(24, seed=10), RATE, 0x0BAD_0BAD_0BAD_0BAD)
    assert envelope.read(spectrum.mono_mix(add_noise(other, 20)), RATE, ENVELOPE_STEPS) in (None, 0x0BAD_0BAD_0BAD_0BAD)


def test_envelope_is_too_short_under_one_period() -> None:
    marked = embed(sweep_over_pink_noise(24), RATE, MARK)
    assert envelope.read(spectrum.mono_mix(marked[: int(envelope.PERIOD_SECONDS * RATE)]), RATE, ENVELOPE_STEPS) is None


def test_too_short_audio_is_refused_and_reads_as_nothing() -> None:
    short = speech_like(MIN_EMBED_SECONDS - 1)
    with pytest.raises(AudioTooShort):
        embed(short, RATE, MARK)
    assert extract(short, RATE) is None
    assert extract(np.zeros(0), RATE) is None


def test_bad_ids_shapes_and_rates_are_refused() -> None:
    samples = speech_like(12)
    with pytest.raises(WatermarkError):
        embed(samples, RATE, 1 << 64)
    with pytest.raises(WatermarkError):
        embed(samples, RATE, -1)
    with pytest.raises(WatermarkError):
        embed(np.zeros((RATE * 12, 9)), RATE, MARK)
    with pytest.raises(WatermarkError):
        embed(samples, 4000, MARK)
    assert extract(np.zeros((10, 10, 10)), RATE) is None
