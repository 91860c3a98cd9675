"""What reading the mark from a 12-s clip costs: CPU time of this process, never wall time.

A read that finds the mark stops there; one that finds none (unmarked audio, or a token-only file)
runs every search the reader has (noise floor, envelope, speed grid), which is the dear case a public
verification can ask for. bench/audio_verify.py prints the same reads through POST /v1/verify.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from media_codecs import get_codec, open_media
from media_codecs.audio import spectrum
from media_codecs.audio.watermark import reading
from tests import audio
from tests.media_codecs.audio.test_marked_containers import music

MARK = 0x0DD5_0000_C0DE_0029
# CPU seconds for one read of 12 s, a generous margin over the ~0.1-0.2 s it takes on a quiet core
# (it took 0.9-1.0 s before the pilot search was vectorised).
READ_BUDGET = 0.6

MAKERS = {
    "wav": lambda samples: audio.wav_bytes(samples),
    "flac": lambda samples: audio.flac_bytes(samples),
    "mp3": lambda samples: audio.ffmpeg_mp3(samples, kbps=128),
}


@pytest.fixture(scope="module")
def clips() -> dict[str, bytes]:
    """Per format: the 12-s clip unmarked, marked, and the marked one re-encoded as MP3 at 128 kbps."""
    made = {}
    for fmt, make in MAKERS.items():
        codec = get_codec(fmt)
        unmarked = make(music())
        marked = codec.embed_watermark(unmarked, MARK)
        made[f"{fmt} unmarked"] = unmarked
        made[f"{fmt} marked"] = marked
        made[f"{fmt} marked, as MP3 128 kbps"] = audio.ffmpeg_mp3(codec.samples(marked)[0], kbps=128)
    return made


def _cpu_of_read(data: bytes) -> tuple[int | None, float]:
    media = open_media(data)
    codec = media.codec
    started = time.process_time()
    found = codec.extract_watermark(media)
    return found, time.process_time() - started


@pytest.mark.parametrize("case", [f"{fmt} {kind}" for fmt in MAKERS
                                  for kind in ("unmarked", "marked", "marked, as MP3 128 kbps")])
def test_a_12_s_read_stays_within_its_cpu_budget(clips, case):
    _cpu_of_read(clips[case])  # imports and caches of the first read are not the read's cost
    found, cpu = _cpu_of_read(clips[case])
    assert found == (None if case.endswith("unmarked") else MARK)
    assert cpu < READ_BUDGET, f"{case}: {cpu:.2f} s of CPU"


def test_a_read_that_finds_nothing_bounds_its_pilot_searches(clips, monkeypatch):
    """Counted, not timed: the offsets the cells' pilot is searched at (each a gather over every shift and
    step) for a 12-s clip with no mark. The speed grid is scored on the 16-ms offsets, and only the best
    three speeds on every 8-ms one (each of the 20 speeds on all 8 before: 176 offsets in all)."""
    searched = []
    original = reading._pilot_search

    def counted(cells):
        searched.append(len(cells))
        return original(cells)

    monkeypatch.setattr(reading, "_pilot_search", counted)
    assert get_codec("wav").extract_watermark(clips["wav unmarked"]) is None
    fine, coarse = 2 * spectrum.SLOT_FRAMES, spectrum.SLOT_FRAMES
    assert sorted(searched) == sorted([fine] * 2 + [coarse] * len(reading._SPEEDS) + [fine] * reading._SPEED_TRIALS)
    assert sum(searched) == 120


def test_only_short_resampling_filters_are_kept():
    """The reader's speed grid reuses its filters; an odd rate's long one (a file picks its rate) is not kept."""
    spectrum._lowpass.cache_clear()
    spectrum.resample(np.zeros(4000), 8000, 44101)  # 44101 / 8000 taken as 9388 / 1703: 187,761 taps
    assert spectrum._lowpass.cache_info().currsize == 0
    spectrum.resample(np.zeros(4000), 1.0, 1.0025)  # 401 / 400
    spectrum.resample(np.zeros(4000), 1.0, 1.0025)
    assert spectrum._lowpass.cache_info()[:2] == (1, 1)  # (hits, misses)
