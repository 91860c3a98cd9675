"""What one POST /v1/verify of a 12-second audio clip costs a worker, in process, per format.

The clip is 12 s of espeak-ng speech (sox chords when espeak-ng is missing), 44.1 kHz stereo 16-bit, as
WAV, FLAC and MP3 (LAME 128 kbps). Each is signed once through POST /v1/sign (token in the container,
watermark in the samples); then each verification runs through the whole stack (Django, DRF, the codecs,
ML-DSA-65, PostgreSQL) with the Django test client, and this process's CPU time (`time.process_time`)
and wall time around the request are taken. Files per format:

- signed, first read: the file /v1/sign returned, its record's kept answer cleared before each request, so
  the mark is read each time (what the first verification of a record's own file costs);
- signed, kept: the same file once its answer is kept with the record (the mark is not read again);
- re-shared MP3 128 kbps: the signed file re-encoded by ffmpeg (libmp3lame) without its metadata: the
  mark is read and finds the record;
- unmarked: the clip as it was before signing, never seen by the service: every search the reader has
  runs and finds nothing (the dearest read);
- and once, an MP3 at 32 kbps signed with its token alone (too low a rate to carry the mark), its kept
  answer cleared before each request: the token finds the record and the mark is looked for in vain.

    nice -n 10 .venv/bin/python bench/audio_verify.py [--runs 10] [--database-url postgres://.../bench]
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

SECONDS = 12
RATE = 44_100
TEXT = ("Provenance signing attaches a verifiable record to every file we publish. The mark has to survive "
        "compression, resampling and trimming, and it must never name the wrong file.")


def clip() -> np.ndarray:
    """12 s of 44.1 kHz stereo: espeak-ng speech looped, or sox chords."""
    import soundfile
    from scipy.signal import resample_poly

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.wav"
        if shutil.which("espeak-ng"):
            subprocess.run(["espeak-ng", "-v", "en", "-s", "150", "-w", str(path), TEXT], check=True)
        else:
            subprocess.run(["sox", "-n", "-r", str(RATE), "-c", "1", str(path), "synth", str(SECONDS), "pluck", "C3",
                            "pluck", "E3", "pluck", "G3", "tremolo", "3", "40"], check=True)
        samples, rate = soundfile.read(str(path), always_2d=True)
    mono = resample_poly(samples[:, 0], RATE, rate) if rate != RATE else samples[:, 0]
    mono = np.resize(mono, SECONDS * RATE)
    mono = 0.9 * mono / np.max(np.abs(mono))
    return np.stack([mono, mono], axis=1)


def ffmpeg(data: bytes, suffix: str, *args: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / f"in.{suffix}", Path(tmp) / "out.mp3"
        source.write_bytes(data)
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-map_metadata", "-1", *args, str(target)],
                       check=True)
        return target.read_bytes()


def measure(runs: int) -> list[tuple[str, str, float, float, str]]:
    import django

    django.setup()
    from rest_framework.test import APIClient

    from provenance.models import Record
    from tests import audio, factories

    org = factories.make_org(plan="enterprise", name=f"bench-audio-verify-{time.time_ns()}")
    generator = factories.make_generator(org=org, formats=["audio"])
    signer = APIClient()
    signer.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    verifier = APIClient()

    def sign(content: bytes) -> tuple[bytes, Record]:
        response = signer.post("/v1/sign", {"content": io.BytesIO(content), "model": "bench",
                                            "generator_id": str(generator.pk)}, format="multipart")
        assert response.status_code == 201, response.content[:300]
        return response.content, Record.objects.get(pk=response["X-Service-Record-Id"])

    def timed(content: bytes, before=None) -> tuple[float, float, dict]:
        walls, cpus = [], []
        for _ in range(runs + 1):  # the first request warms imports and caches, and is not counted
            if before:
                before()
            wall, cpu = time.perf_counter(), time.process_time()
            response = verifier.post("/v1/verify", {"content": io.BytesIO(content)}, format="multipart")
            cpus.append(time.process_time() - cpu)
            walls.append(time.perf_counter() - wall)
            assert response.status_code == 200, response.content[:300]
        return statistics.median(cpus[1:]) * 1e3, statistics.median(walls[1:]) * 1e3, response.json()

    def outcome(result: dict) -> str:
        return (f"{result['token_source']}, record {'found' if result.get('record_id') else 'none'}, "
                f"mark {'found' if result['signals']['watermark_found'] else 'not found'}")

    rows = []
    samples = clip()
    originals = {"wav": audio.wav_bytes(samples), "flac": audio.flac_bytes(samples),
                 "mp3": audio.ffmpeg_mp3(samples, kbps=128)}
    for fmt, original in originals.items():
        signed, record = sign(original)

        def forget(record=record) -> None:
            Record.objects.filter(pk=record.pk).update(mark_in_file=None)

        cpu, wall, result = timed(signed, forget)
        rows.append((fmt, "signed, first read", cpu, wall, outcome(result)))
        cpu, wall, result = timed(signed)
        rows.append((fmt, "signed, kept", cpu, wall, outcome(result)))
        cpu, wall, result = timed(ffmpeg(signed, fmt, "-c:a", "libmp3lame", "-b:a", "128k"))
        rows.append((fmt, "re-shared MP3 128 kbps", cpu, wall, outcome(result)))
        cpu, wall, result = timed(original)
        rows.append((fmt, "unmarked", cpu, wall, outcome(result)))
    low_rate, record = sign(audio.ffmpeg_mp3(samples, kbps=32))
    cpu, wall, result = timed(low_rate, lambda: Record.objects.filter(pk=record.pk).update(mark_in_file=None))
    rows.append(("mp3", "32 kbps, token only, first read", cpu, wall, outcome(result)))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    os.environ.update(serve.prepared_database(args.database_url, ALLOWED_HOSTS="testserver",
                                              VERIFY_RATE_PER_MINUTE="100000000"))
    load = os.getloadavg()[0]
    rows = measure(args.runs)
    print("| format | file | median CPU ms | median wall ms | answer |")
    print("|---|---|---|---|---|")
    for fmt, file, cpu, wall, answer in rows:
        print(f"| {fmt} | {file} | {cpu:.0f} | {wall:.0f} | {answer} |")
    print(f"\nPOST /v1/verify of a {SECONDS}-s 44.1 kHz stereo clip, {args.runs} requests a row (median); "
          f"load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.")


if __name__ == "__main__":
    main()
