"""Benchmark the audio watermark (and, with --peer, audiowmark beside it) on a fixed clip set.

Run from the project root:  .venv/bin/python bench/audio_watermark.py [--quick] [--peer PATH]
[--clips speech,sox,np] [--attacks MP3,noise]

Target clips (44.1 kHz stereo), mirroring the peer's set in docs/audio-peers.md: three espeak-ng
speech clips (one kept at 24 bits, the others at 16), sox chords, percussion, a 40 Hz-16 kHz sweep
over quiet pink noise, music-like material (a synthetic melody, sox chords with percussion, pinkish
noise) and white noise, 24 s each; two 3-minute files (sox chords, looped speech). Hard cases,
reported apart and never counted in the target figures: a pure sine chirp with silence around it
and bare sine tones (nothing but one partial to hide a mark in). A generator whose tool is missing
is skipped, saying so. Codec attacks use ffmpeg (libmp3lame, aac, libvorbis). Prints one markdown
table: exact-id recovery per attack, SNR of the marked clips, embed/extract time per minute, false ids.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy.signal import butter, resample_poly, sosfiltfilt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from media_codecs.audio.watermark import embed, extract

RATE = 44100
SECONDS = 24
IDS = (0x0123_4567_89AB_CDEF, 0xF00D_CAFE_1234_5678)
SPEECH = (
    ("en", "Provenance signing attaches a verifiable record to every file we publish. The mark has to "
           "survive compression, resampling and trimming, and it must never name the wrong file. "
           "Listeners should not hear it, even in a quiet room with good headphones on."),
    ("en-us+f3", "On the first of March the committee met again to discuss the budget for the new "
                 "library. Several members asked whether the old building could be repaired instead, "
                 "and the chair promised a full report before the summer."),
    ("de", "Die Wettervorhersage fuer morgen meldet Regen im Norden und Sonne im Sueden. Am Abend "
           "ziehen von Westen her Gewitter auf, die Temperaturen sinken auf zwoelf Grad."),
)
CHORDS = (("C3", "E3", "G3", "C4"), ("A2", "C3", "E3", "A3"), ("F2", "A2", "C3", "F3"), ("G2", "B2", "D3", "G3"))
SOX_CLIPS = {  # sox effects per clip; {s} is the length in seconds, {r} the repeat count
    "sox-chords": [["synth", "2", *(arg for note in chord for arg in ("pluck", note)), "fade", "0", "2", "0.3",
                    "tremolo", "3", "40", "reverb", "30", "gain", "-n", "-6"] for chord in CHORDS],
    "sox-percussion": [["synth", "0.25", "pinknoise", "fade", "0", "0.25", "0.2", "gain", "-n", "-3",
                        "repeat", "{r}", "reverb", "20"]],
    "sox-sweep": [["synth", "{s}", "sine", "40:16000", "gain", "-n", "-3"],
                  ["synth", "{s}", "pinknoise", "gain", "-n", "-33"]],  # summed: sweep over quiet noise
}
_SOX_MIX = {"sox-chords": np.concatenate, "sox-percussion": sum, "sox-sweep": sum}


# ---------------------------------------------------------------- clips


def _stereo(x: np.ndarray) -> np.ndarray:
    return np.stack([x, x], axis=1) if x.ndim == 1 else x[:, :2]


def _fit(x: np.ndarray, seconds: float) -> np.ndarray:
    n = int(seconds * RATE)
    reps = -(-n // len(x))
    return np.concatenate([x] * reps)[:n]


def _read(path: Path) -> np.ndarray:
    data, rate = sf.read(str(path), always_2d=True)
    if rate != RATE:
        data = resample_poly(data, RATE, rate, axis=0)
    return data


def speech_clips(tmp: Path) -> dict[str, np.ndarray]:
    if not shutil.which("espeak-ng"):
        print("skip speech: espeak-ng not installed")
        return {}
    clips = {}
    for i, (voice, text) in enumerate(SPEECH):
        path = tmp / f"speech{i}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-s", "150", "-w", str(path), text], check=True)
        x = _read(path)
        bits = 24 if i == 2 else 16
        lsb = 2.0 ** (1 - bits)
        mono = _fit(0.9 * x[:, 0] / np.max(np.abs(x)), SECONDS)
        clips[f"speech-{voice}-{bits}bit"] = np.round(_stereo(mono) / lsb) * lsb
    return clips


def sox_clip(tmp: Path, name: str, seconds: float) -> np.ndarray | None:
    if not shutil.which("sox"):
        return None
    parts = []
    for i, effects in enumerate(SOX_CLIPS[name]):
        path = tmp / f"{name}{i}.wav"
        args = [a.format(s=seconds, r=int(seconds / 0.25) - 1) for a in effects]
        subprocess.run(["sox", "-n", "-r", str(RATE), "-c", "2", "-b", "24", str(path), *args],
                       check=True, capture_output=True)
        parts.append(_read(path))
    length = min(len(p) for p in parts)
    mixed = _SOX_MIX[name](parts) if name == "sox-chords" else _SOX_MIX[name](p[:length] for p in parts)
    return _fit(mixed, seconds)


def numpy_clips() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    t = np.arange(SECONDS * RATE) / RATE
    melody = np.zeros_like(t)
    for i, f0 in enumerate((196.0, 247.0, 294.0, 392.0)):  # harmonic notes with vibrato, one per 3 s
        note = ((t // 3) % 4 == i) * np.exp(-(t % 3))
        phase = 2 * np.pi * f0 * t + 3 * np.sin(2 * np.pi * 5 * t)
        melody += note * sum(np.sin(k * phase) / k for k in range(1, 9))
    pink = np.cumsum(rng.standard_normal((len(t), 2)), axis=0)
    pink = np.diff(pink, axis=0, prepend=0) + 0.02 * pink / np.sqrt(np.arange(1, len(t) + 1))[:, None]
    return {
        "np-melody": _stereo(0.3 * melody / np.max(np.abs(melody))),
        "np-noise": 0.1 * rng.standard_normal((len(t), 2)),
        "np-pinkish": 0.3 * pink / np.max(np.abs(pink)),
    }


def hard_clips() -> dict[str, np.ndarray]:
    """Pathological material, reported apart: one partial at a time, silence around it."""
    t = np.arange(SECONDS * RATE) / RATE
    inner = (t >= 4) & (t < SECONDS - 4)  # 4 s of digital silence either side
    tc = np.clip(t - 4, 0, None)
    chirp = np.sin(2 * np.pi * 100 * 16 / np.log(80) * (80 ** (tc / 16) - 1)) * inner
    tones = np.sin(2 * np.pi * np.where((t // 2) % 2 == 0, 440.0, 660.0) * t)
    return {"hard-sine-chirp": _stereo(0.5 * chirp), "hard-bare-tones": _stereo(0.3 * tones)}


def build_clips(tmp: Path, quick: bool) -> dict[str, np.ndarray]:
    clips = speech_clips(tmp)
    if not shutil.which("sox"):
        print("skip sox clips: sox not installed")
    for name in SOX_CLIPS:
        clip = sox_clip(tmp, name, SECONDS)
        if clip is not None:
            clips[name] = clip
    if "sox-chords" in clips and "sox-percussion" in clips:
        clips["sox-band"] = 0.7 * clips["sox-chords"] + 0.3 * clips["sox-percussion"]
    clips.update(numpy_clips())
    if quick:
        keep = [*[n for n in clips if n.startswith("speech")][:1], "sox-chords", "sox-sweep", "np-noise"]
        return {n: clips[n] for n in keep if n in clips}
    long = sox_clip(tmp, "sox-chords", 180.0)
    if long is not None:
        clips["3min-sox-chords"] = long
    speech = [c for n, c in clips.items() if n.startswith("speech")]
    if speech:
        clips["3min-speech"] = _fit(speech[0], 180.0)
    clips.update(hard_clips())
    return clips


# ---------------------------------------------------------------- attacks


def _ffmpeg(x: np.ndarray, tmp: Path, ext: str, *codec: str) -> np.ndarray:
    src, enc = tmp / "attack.wav", tmp / f"attack.{ext}"
    sf.write(str(src), x, RATE, subtype="FLOAT")
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(src), *codec, str(enc)], check=True)
    dec = tmp / "decoded.wav"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(enc), "-ar", str(RATE), str(dec)], check=True)
    return _read(dec)


def _resample(x: np.ndarray, ratio: float) -> np.ndarray:
    frac = Fraction(ratio).limit_denominator(1000)
    return resample_poly(x, frac.numerator, frac.denominator, axis=0)


def _add_noise(x: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).standard_normal(x.shape)
    return x + noise * np.sqrt(np.mean(x * x) / 10 ** (snr_db / 10))


def _dither16(x: np.ndarray, seed: int) -> np.ndarray:
    lsb = 1 / 32768
    tpdf = np.random.default_rng(seed).random(x.shape) - np.random.default_rng(seed + 1).random(x.shape)
    return np.clip(np.round(x / lsb + tpdf), -32768, 32767) * lsb


def _middle(x: np.ndarray, seconds: float) -> np.ndarray:
    start = (len(x) - int(seconds * RATE)) // 2
    return x[start : start + int(seconds * RATE)]


def attacks(tmp: Path) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    lowpass = butter(8, 4000, fs=RATE, output="sos")
    return {
        "none": lambda x: x,
        "MP3 128 kbps": lambda x: _ffmpeg(x, tmp, "mp3", "-c:a", "libmp3lame", "-b:a", "128k"),
        "MP3 64 kbps": lambda x: _ffmpeg(x, tmp, "mp3", "-c:a", "libmp3lame", "-b:a", "64k"),
        "AAC-LC 128 kbps": lambda x: _ffmpeg(x, tmp, "m4a", "-c:a", "aac", "-b:a", "128k"),
        "Ogg Vorbis q3": lambda x: _ffmpeg(x, tmp, "ogg", "-c:a", "libvorbis", "-q:a", "3"),
        "resample 44.1->48->44.1": lambda x: _resample(_resample(x, 48000 / RATE), RATE / 48000),
        "gain -6 dB": lambda x: x * 10 ** (-6 / 20),
        "gain +3 dB clipped": lambda x: np.clip(x * 10 ** (3 / 20), -1, 1),
        "white noise 30 dB SNR": lambda x: _add_noise(x, 30, 1),
        "white noise 20 dB SNR": lambda x: _add_noise(x, 20, 2),
        "keep 10 s from the middle": lambda x: _middle(x, 10),
        "low-pass 4 kHz": lambda x: sosfiltfilt(lowpass, x, axis=0),
        "24-bit -> 16-bit dither": lambda x: _dither16(x, 3),
        "speed +2% (pitch too)": lambda x: _resample(x, 1 / 1.02),
        "speed -2% (pitch too)": lambda x: _resample(x, 1 / 0.98),
    }


# ---------------------------------------------------------------- peer


class Peer:
    """audiowmark run through its CLI with its defaults (128-bit payload: the id twice)."""

    def __init__(self, binary: str, tmp: Path) -> None:
        self.binary, self.tmp = binary, tmp

    @staticmethod
    def payload(mark_id: int) -> str:
        return f"{mark_id:016x}" * 2

    def embed(self, x: np.ndarray, mark_id: int) -> np.ndarray:
        src, out = self.tmp / "peer_in.wav", self.tmp / "peer_out.wav"
        sf.write(str(src), x, RATE, subtype="FLOAT")
        subprocess.run([self.binary, "add", str(src), str(out), self.payload(mark_id)], check=True,
                       capture_output=True)
        return _read(out)

    def extract(self, x: np.ndarray) -> set[str]:
        path = self.tmp / "peer_get.wav"
        sf.write(str(path), x, RATE, subtype="FLOAT")
        done = subprocess.run([self.binary, "get", str(path)], capture_output=True, text=True)
        # "pattern <time> <hex payload> <sharpness> <quality> <kind>": it always lists its best guesses
        return {line.split()[2] for line in done.stdout.splitlines() if line.startswith("pattern")}


# ---------------------------------------------------------------- run


def snr_db(original: np.ndarray, marked: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(original**2) / (np.sum((marked - original) ** 2) + 1e-30)))


def run(clips: dict[str, np.ndarray], attack_table: dict, peer: Peer | None) -> None:
    # ours, peer for each kind of clip: 24-s target clips, 3-minute target files, hard cases
    hits = {name: [0] * 6 for name in attack_table}
    tries = [0, 0, 0]
    snrs, peer_snrs, failures = {}, {}, {}
    embed_s = extract_s = extract_none_s = minutes = minutes_none = 0.0
    for clip_name, clip in clips.items():
        is_long = len(clip) > 60 * RATE
        kind = 2 if clip_name.startswith("hard-") else int(is_long)
        tries[kind] += len(IDS)
        for mark_id in IDS:
            started = time.perf_counter()
            marked = embed(clip, RATE, mark_id)
            embed_s += time.perf_counter() - started
            minutes += len(clip) / RATE / 60
            snrs.setdefault(clip_name, []).append(snr_db(clip, marked))
            peer_marked = peer.embed(clip, mark_id) if peer else None
            if peer:
                peer_snrs.setdefault(clip_name, []).append(snr_db(clip, peer_marked[: len(clip)]))
            for attack_name, attack in attack_table.items():
                attacked = attack(marked)
                started = time.perf_counter()
                found = extract(attacked, RATE)
                if attack_name == "none" and kind == 0:
                    extract_none_s += time.perf_counter() - started
                    minutes_none += len(clip) / RATE / 60
                extract_s += time.perf_counter() - started
                hits[attack_name][2 * kind] += found == mark_id
                if found != mark_id:
                    failures.setdefault(clip_name, []).append(attack_name)
                if peer:
                    hits[attack_name][2 * kind + 1] += Peer.payload(mark_id) in peer.extract(attack(peer_marked))
        print(f"  {clip_name}: SNR {np.min(snrs[clip_name]):.1f} dB; ours missed: {failures.get(clip_name, [])}",
              file=sys.stderr, flush=True)
    extract_minutes = sum(len(c) / RATE / 60 for c in clips.values()) * len(IDS) * len(attack_table)
    false_ours, false_peer, unmarked = _false_ids(clips, attack_table, peer)
    _print_table(hits, tries, peer is not None)
    all_snr = [v for n, values in snrs.items() for v in values if not n.startswith("hard-")] or [np.nan]
    print(f"\nSNR ours (target clips): min {np.min(all_snr):.1f} dB, median {np.median(all_snr):.1f} dB; "
          "per clip min/median: " + ", ".join(f"{n} {np.min(v):.1f}/{np.median(v):.1f}" for n, v in snrs.items()))
    if peer:
        all_peer = [v for n, values in peer_snrs.items() for v in values if not n.startswith("hard-")] or [np.nan]
        print(f"SNR peer (target clips): min {np.min(all_peer):.1f} dB, median {np.median(all_peer):.1f} dB; "
              "per clip min/median: " + ", ".join(f"{n} {np.min(v):.1f}/{np.median(v):.1f}"
                                                  for n, v in peer_snrs.items()))
    print("Ours missed (clip: attacks): " + ("; ".join(f"{n}: {', '.join(a)}" for n, a in failures.items())
                                            or "nothing"))
    print(f"Embed {embed_s / minutes:.2f} s per minute of audio; extract {extract_s / extract_minutes:.2f} s "
          f"per minute over all attacks, {extract_none_s / max(minutes_none, 1e-9):.2f} s per minute "
          "on unattacked 24-s clips")
    print(f"False ids on {unmarked} unmarked reads: ours {false_ours}"
          + (f", peer {false_peer}" if peer else ""))


def _false_ids(clips: dict[str, np.ndarray], attack_table: dict, peer: Peer | None) -> tuple[int, int, int]:
    """Reads of unmarked clips (plain and after several attacks). Ours: any id at all is a false id;
    audiowmark always prints candidate payloads, so for it a false id is one of the bench's ids."""
    ours = theirs = count = 0
    for clip in clips.values():
        for attack_name in ("none", "MP3 64 kbps", "Ogg Vorbis q3", "speed +2% (pitch too)",
                            "white noise 20 dB SNR", "keep 10 s from the middle", "low-pass 4 kHz"):
            if attack_name not in attack_table:  # a run restricted by --attacks
                continue
            attacked = attack_table[attack_name](clip)
            count += 1
            ours += extract(attacked, RATE) is not None
            theirs += bool(peer and peer.extract(attacked) & {Peer.payload(i) for i in IDS})
    return ours, theirs, count


def _print_table(hits: dict, tries: list[int], with_peer: bool) -> None:
    kinds = [(0, "24-s clips"), (1, "3-min"), (2, "HARD CASES (not targets)")]
    kinds = [(k, label) for k, label in kinds if tries[k]]
    head = "| attack |" + "".join(f" ours {label} |" + (f" audiowmark {label} |" if with_peer else "")
                                  for _, label in kinds)
    print("\n" + head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, counts in hits.items():
        row = f"| {name} |"
        for k, _ in kinds:
            row += f" {100 * counts[2 * k] / tries[k]:.0f}% |"
            row += f" {100 * counts[2 * k + 1] / tries[k]:.0f}% |" if with_peer else ""
        print(row)
    print(f"\nTries per attack: {tries[0]} (24-s target clips), {tries[1]} (3-min), {tries[2]} (hard cases)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="four 24-s clips, no 3-minute clip")
    parser.add_argument("--peer", metavar="PATH", help="audiowmark binary to run beside ours")
    parser.add_argument("--clips", metavar="WORDS", help="only clips whose name starts with one of these "
                        "comma-separated words (speech,sox,np: the 24-s clips; 3min; hard; sox-sweep)")
    parser.add_argument("--attacks", metavar="WORDS", help="only attacks whose name contains one of these "
                        "comma-separated words (MP3,noise); 'none' is always run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        clips = _chosen(build_clips(tmp, args.quick), args.clips, prefix=True)
        print(f"{len(clips)} clips: {', '.join(clips)}; ids {', '.join(f'{i:016x}' for i in IDS)}",
              file=sys.stderr)
        attack_table = _chosen(attacks(tmp), args.attacks and f"none,{args.attacks}")
        run(clips, attack_table, Peer(args.peer, tmp) if args.peer else None)


def _chosen(table: dict, words: str | None, prefix: bool = False) -> dict:
    """The entries whose name contains (starts with, for ``prefix``) one of the comma-separated ``words``."""
    if not words:
        return table
    wanted = [word.strip().lower() for word in words.split(",") if word.strip()]
    return {name: value for name, value in table.items()
            if any(name.lower().startswith(word) if prefix else word in name.lower() for word in wanted)}


if __name__ == "__main__":
    main()
