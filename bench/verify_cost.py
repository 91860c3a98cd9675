"""What one POST /v1/verify of a 1-megapixel JPEG costs a worker, in process.

The photo is bench/sign_verify.py's astronaut at 1 MP, signed once through POST /v1/sign (token in XMP,
watermark). Two files are verified: the signed file as returned (its mark is read at the first
verification and the answer kept with the record, so later ones do not decode it; `confidence: high`),
and a re-shared copy (re-encoded at quality 85 without metadata: the mark is read and finds the record);
with --large, also a 49-megapixel lossless WebP of one colour (no token: the whole picture is decoded, its
mark read and its fingerprint computed, and nothing found), the largest picture verification accepts.
Each verification runs through the whole stack (Django, DRF, the codecs, ML-DSA-65, PostgreSQL) with
the Django test client. For each file two child processes, one with glibc's malloc as it starts and one
tuned as gunicorn workers once tuned it (`tune_malloc`), time the same requests: median wall and CPU
time, minor page faults, SQL statements (the per-IP limit counts in PostgreSQL here: no Redis), RSS.

    .venv/bin/python bench/verify_cost.py [--runs 200] [--large] [--database-url postgres://.../bench]
"""

import argparse
import io
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.load import reshared as reshared_copy
from bench.sign_verify import photo


def tune_malloc() -> bool:
    """glibc's thresholds as gunicorn workers once set them (mmap from 16 MB, 32 MB of free heap kept), to
    measure again what they buy; production leaves malloc as it starts. False where there is no mallopt."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's <malloc.h>
    return bool(mallopt(m_mmap_threshold, 16 * 2**20)) and bool(mallopt(m_trim_threshold, 32 * 2**20))


def measure(database_url: str, runs: int, tuned: bool, file: str) -> dict:
    if tuned:
        assert tune_malloc(), "glibc's mallopt refused the thresholds"
    serve.django_in_process({**serve.server_env(database_url, None), "ALLOWED_HOSTS": "testserver",
                             "VERIFY_RATE_PER_MINUTE": "100000000"})
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from rest_framework.test import APIClient

    from tests import factories

    org = factories.make_org(plan="enterprise", name=f"bench-verify-{time.time_ns()}")
    generator = factories.make_generator(org=org, formats=["image"])
    signer = APIClient()
    signer.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    signed = signer.post("/v1/sign", {"content": io.BytesIO(photo(1.0)), "model": "bench",
                                      "generator_id": str(generator.pk)}, format="multipart")
    assert signed.status_code == 201, signed.content[:200]
    verifier = APIClient()
    reshared = file == "reshared"
    content = reshared_copy(signed.content) if reshared else signed.content
    if file == "large":
        from tests.hostile_media import pixel_bomb

        content, runs = pixel_bomb("WEBP"), max(3, runs // 40)

    def verify() -> None:
        result = verifier.post("/v1/verify", {"content": io.BytesIO(content)}, format="multipart").json()
        if file == "large":
            assert result["authentic"] is False, result
        elif reshared:  # the mark is read and finds the record; the pixels changed
            assert result["token_source"] == "watermark" and result["tampered"], result
        else:  # the record's own file: its mark was read once, then kept
            assert result["authentic"] and result["confidence"] == "high", result

    for _ in range(5 if file != "large" else 1):  # imports, caches, the allocator's first blocks
        verify()
    with CaptureQueriesContext(connection) as queries:
        verify()
    statements = len(queries)  # now: the test client's next request empties the log
    walls, cpus = [], []
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        verify()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    status = Path("/proc/self/status").read_text().splitlines()
    rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return {"wall_ms": statistics.median(walls) * 1e3, "cpu_ms": statistics.median(cpus) * 1e3,
            "faults": faults / runs, "queries": statements, "rss_mb": rss / 1024,
            "bytes": len(content)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    parser.add_argument("--child", choices=["plain", "tuned"], help=argparse.SUPPRESS)
    parser.add_argument("--file", default="signed", help=argparse.SUPPRESS)
    parser.add_argument("--large", action="store_true", help="also verify a 49-megapixel WebP")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.database_url, args.runs, args.child == "tuned", args.file)))
        return
    serve.prepared_database(args.database_url)
    print("| file | malloc | median wall ms | median CPU ms | page faults / request | SQL statements | RSS MB |")
    print("|---|---|---|---|---|---|---|")
    files = [("signed", "signed, unchanged"), ("reshared", "re-shared copy")]
    if args.large:
        files.append(("large", "49 MP WebP, no mark"))
    for kind, file in files:
        for mode, label in (("plain", "as started"), ("tuned", "tuned (gunicorn worker)")):
            command = [sys.executable, __file__, "--child", mode, "--runs", str(args.runs),
                       "--database-url", args.database_url, "--file", kind]
            out = subprocess.run(command, check=True, capture_output=True, text=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {file} ({row['bytes'] / 1e3:.0f} KB) | {label} | {row['wall_ms']:.1f} | {row['cpu_ms']:.1f} | "
                  f"{row['faults']:,.0f} | {row['queries']} | {row['rss_mb']:.0f} |")
    print(f"\nPOST /v1/verify of a 1 MP JPEG, {args.runs} requests per row. 'signed, unchanged': the file /v1/sign "
          "returned (token in XMP), confidence high; its mark was read at the first verification and kept. "
          "'re-shared copy': that file re-encoded at quality 85 without metadata; the mark is read and finds "
          "the record.")


if __name__ == "__main__":
    main()
