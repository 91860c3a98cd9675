"""Time of embedding a C2PA manifest and of checking it, per format, pure (no database, no HTTP).

The image is scikit-image's astronaut scaled to 12 MP (JPEG quality 90; PNG and WebP at the same size),
the sound 30 s of a stereo tone (WAV, FLAC, MP3), the document a text PDF; each carries
our token first, as signing leaves it. Three signers: ML-DSA-65 alone; hybrid (ES256 claim signature under
a test CA, ML-DSA-65 countersignature), as `c2pa_signing=hybrid` generators sign; and hybrid with RFC 3161
time stamps from a real local authority (OpenSSL `ts` behind HTTP; tests/tsa_server.py), whose round trip
is timed alone beside it. Checking is record_format.manifest_checks.check_manifest: both signatures, both
certificate chains to the test root, the time stamp, the binding over the whole file, the assertions.
Targets: a hybrid manifest adds at most 50 ms plus one time-stamp round trip to signing a 12 MP JPEG;
checking a manifest in an image takes under 20 ms. MP4 has its own bench (bench/c2pa_bmff.py).

    .venv/bin/python bench/c2pa_embed.py [--runs 10] [--formats jpeg,png,webp,wav,flac,mp3,pdf]
"""

import argparse
import datetime
import io
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image

from bench.sign_verify import photo
from media_codecs import get_codec
from media_codecs.c2pa import ManifestFacts, embed, read_manifest
from record_format import manifest_checks
from tests.audio import ffmpeg_mp3, flac_bytes, tone, wav_bytes
from tests.c2pa_signers import der, hybrid_signer, ml_dsa_signer, signing_ca, tsa_stamper
from tests.media import encode
from tests.pdf_samples import PAGE_TEXTS, text_pdf
from tests.tsa_server import LocalTsa

TOKEN = "svc_0123456789abcdef.signature-part_1"
FACTS = ManifestFacts(record_id="rec_bench", model="bench-model", generator_id="gen_bench", kid="test-kid",
                      token=TOKEN, certificate_chain=(), watermark_id=0x0123456789ABCDEF)


def sample(fmt: str) -> bytes:
    if fmt == "jpeg":
        data = photo(12)
    elif fmt in ("png", "webp"):
        picture = Image.open(io.BytesIO(photo(12))).convert("RGB")
        data = encode(picture, fmt, **({"quality": 90} if fmt == "webp" else {}))
    elif fmt == "wav":
        data = wav_bytes(tone(30))
    elif fmt == "flac":
        data = flac_bytes(tone(30))
    elif fmt == "mp3":
        data = ffmpeg_mp3(tone(30))
    else:
        data = text_pdf(PAGE_TEXTS)
    return get_codec(fmt).embed_token(data, TOKEN)


def timed(function, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--formats", default="jpeg,png,webp,wav,flac,mp3,pdf")
    args = parser.parse_args()
    anchors = [der(signing_ca()["root"])]
    with LocalTsa() as tsa:
        stamp = tsa_stamper(tsa.url)
        tsa_roots = [der(tsa.root)]
        round_trip, _ = timed(lambda: stamp([b"one signature"]), args.runs)
        print(f"one time-stamp round trip (local OpenSSL ts behind HTTP): {round_trip:.1f} ms")
        print("| format | file MB | embed ML-DSA-65 ms | embed hybrid ms | embed hybrid + stamps ms "
              "| check ms (both signatures, chains, stamp, binding) | store KB |")
        print("|---|---|---|---|---|---|---|")
        for fmt in args.formats.split(","):
            data = sample(fmt)
            ml_dsa, _ = timed(lambda d=data: embed(d, FACTS, ml_dsa_signer()), args.runs)
            hybrid, _ = timed(lambda d=data: embed(d, FACTS, hybrid_signer()), args.runs)
            stamped_ms, stamped = timed(lambda d=data: embed(d, FACTS, hybrid_signer(stamp)), args.runs)
            manifest = read_manifest(stamped)
            moment = datetime.datetime.now(datetime.UTC)

            def check(d=stamped, m=manifest, moment=moment):
                return manifest_checks.check_manifest(d, m, anchors=anchors, tsa_roots=tsa_roots, now=moment)

            check_ms, report = timed(check, args.runs)
            assert report.signatures_valid and report.intact and report.status("time_stamp") == "valid", report
            assert report.status("certificate_chain") == "trusted", report
            print(f"| {fmt} | {len(data) / 1e6:.1f} | {ml_dsa:.1f} | {hybrid:.1f} | {stamped_ms:.1f} | {check_ms:.1f} "
                  f"| {manifest.store_length / 1024:.1f} |")


if __name__ == "__main__":
    main()
