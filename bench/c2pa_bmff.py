"""Time and memory of embedding a C2PA manifest into a 60 s 1080p H.264 MP4, and of checking its binding, pure.

ffmpeg makes the clip at bench time (testsrc2 with noise, x264 veryfast at 6 Mbit/s, an AAC tone; 46 MB), our
token goes in first (`cerv` box), then `embed` with a hybrid signer like the service's (ES256 claim
signature under a test CA, ML-DSA-65 countersignature, no time stamps): strip, plan the `uuid` box after
`ftyp` with the chunk offsets moved, hash the file (`c2pa.hash.bmff.v3`, memoryviews into hashlib), sign,
join. The binding check reads the manifest and re-hashes the file as c2pa-rs does. Peak memory is
tracemalloc's, relative to the file's size: embed returns one new file (1x) and should allocate little else.
Target: embed adds at most 100 ms.

    .venv/bin/python bench/c2pa_bmff.py [--runs 5] [--seconds 60]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from media_codecs import get_codec
from media_codecs.c2pa import ManifestFacts, embed, read_manifest
from media_codecs.c2pa.reading import binding_matches
from tests.c2pa_signers import hybrid_signer

TOKEN = "svc_0123456789abcdef.signature-part_1"


def make_clip(seconds: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "clip.mp4"
        subprocess.run(["ffmpeg", "-v", "error",
                        "-f", "lavfi", "-i", f"testsrc2=size=1920x1080:rate=30:duration={seconds}",
                        "-f", "lavfi", "-i", f"sine=frequency=440:duration={seconds}",
                        "-vf", "noise=alls=12:allf=t", "-c:v", "libx264", "-preset", "veryfast", "-b:v", "6M",
                        "-c:a", "aac", "-shortest", str(path)], check=True)
        return path.read_bytes()


def timed(function, runs: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - start) * 1000)
    return times, result


def peak(function) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()

    data = get_codec("mp4").embed_token(make_clip(args.seconds), TOKEN)
    facts = ManifestFacts(record_id="rec_bench", model="bench-model", generator_id="gen_bench", kid="bench-kid",
                          token=TOKEN, certificate_chain=())
    signer = hybrid_signer()
    embed_times, out = timed(lambda: embed(data, facts, signer), args.runs)
    manifest = read_manifest(out)
    check_times, matches = timed(lambda: binding_matches(out, manifest), args.runs)
    assert matches, "the binding does not match"
    strip_times, _ = timed(lambda: get_codec("mp4").hashed_parts(out), args.runs)
    embed_peak = peak(lambda: embed(data, facts, signer))
    check_peak = peak(lambda: binding_matches(out, manifest))
    size = len(data)
    print(f"file {size / 1e6:.1f} MB, store {manifest.store_length / 1e3:.1f} KB, {args.runs} runs")
    for name, times in (("embed", embed_times), ("binding check", check_times),
                        ("hashed_parts of the embedded file", strip_times)):
        print(f"{name}: median {statistics.median(times):.1f} ms; runs " + ", ".join(f"{t:.1f}" for t in times))
    print(f"embed peak allocation {embed_peak / 1e6:.1f} MB = {embed_peak / size:.2f}x the file")
    print(f"binding check peak allocation {check_peak / 1e6:.2f} MB = {check_peak / size:.3f}x the file")


if __name__ == "__main__":
    main()
