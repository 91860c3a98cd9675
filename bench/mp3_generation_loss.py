"""What marking an MP3 costs: the mark alone against a second encoding at the input's own bitrate.

Prints, per clip and bitrate, the waveform SNR of (a) the watermark on the decoded samples, (b) the
decoded samples re-encoded unchanged (generation loss), (c) marked and re-encoded, and whether the
mark reads back. Clips: sox plucked chords and espeak-ng speech (24 s), skipped when the tool is missing.

    .venv/bin/python bench/mp3_generation_loss.py
"""

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from media_codecs import get_codec
from media_codecs.audio import watermark
from tests.audio import lame_mp3

RATE = 44100
MARK = 0x1234_5678_9ABC_DEF0
CLIPS = {
    "sox chords": ["sox", "-n", "-r", "44100", "-c", "2", "{out}", "synth", "24", "pluck", "C3", "pluck", "E3",
                   "pluck", "G3", "tremolo", "3", "40", "gain", "-6"],
    "espeak-ng speech": ["espeak-ng", "-w", "{out}", "-s", "150", "The quick brown fox jumps over the lazy dog. " * 6],
}


def clip(command: list[str]) -> np.ndarray | None:
    if shutil.which(command[0]) is None:
        return None
    with tempfile.NamedTemporaryFile(suffix=".wav") as out:
        subprocess.run([part.replace("{out}", out.name) for part in command], check=True, capture_output=True)
        samples, rate = soundfile.read(out.name, always_2d=True)
    if rate != RATE:
        from scipy.signal import resample_poly

        samples = resample_poly(samples, RATE, rate, axis=0)
    if samples.shape[1] == 1:
        samples = np.repeat(samples, 2, axis=1)
    return samples[: RATE * 24]


def snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    n = min(len(reference), len(other))
    return float(10 * np.log10(np.sum(reference[:n] ** 2) / np.sum((reference[:n] - other[:n]) ** 2)))


def main() -> None:
    codec = get_codec("mp3")
    print("| clip | kbps | mark alone, dB | re-encode alone, dB | mark + re-encode, dB | mark reads |")
    print("|---|---|---|---|---|---|")
    for name, command in CLIPS.items():
        samples = clip(command)
        if samples is None:
            print(f"| {name} | skipped: {command[0]} is not installed | | | | |")
            continue
        for kbps in (128, 64):
            original = codec.open(lame_mp3(samples, RATE, kbps))
            decoded, rate = codec.samples(original)
            again, _ = codec.samples(codec.reencode(original, np.array(decoded)))
            marked = codec.open(codec.reencode(original, watermark.embed(decoded, rate, MARK)))
            print(f"| {name} | {kbps} | {snr_db(decoded, watermark.embed(decoded, rate, MARK)):.1f} "
                  f"| {snr_db(decoded, again):.1f} | {snr_db(decoded, codec.samples(marked)[0]):.1f} "
                  f"| {codec.extract_watermark(marked) == MARK} |")


if __name__ == "__main__":
    main()
