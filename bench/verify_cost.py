"""What one POST /v1/verify of a signed 1-megapixel JPEG costs a worker, in process.

The photo is bench/sign_verify.py's astronaut at 1 MP, signed once through POST /v1/sign (token in XMP,
watermark); each verification runs through the whole stack (Django, DRF, the codecs, ML-DSA-65,
PostgreSQL) with the Django test client and must answer `confidence: high`. Two child processes, one
with glibc's malloc as it starts and one tuned as a gunicorn worker tunes it (config/allocator.py),
each timing the same requests: median wall and CPU time, minor page faults, SQL statements (the
per-IP limit counts in PostgreSQL here: no Redis), RSS.

    .venv/bin/python bench/verify_cost.py [--runs 200] [--database-url postgres://.../bench]
"""

import argparse
import io
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.sign_verify import photo


def measure(database_url: str, runs: int, tuned: bool) -> dict:
    if tuned:
        from config.allocator import tune_malloc

        assert tune_malloc(), "glibc's mallopt refused the thresholds"
    env = {**serve.server_env(database_url, None), "ALLOWED_HOSTS": "testserver",
           "VERIFY_RATE_PER_MINUTE": "100000000"}
    os.environ.update(env)
    import django

    django.setup()
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

    def verify() -> None:
        result = verifier.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart").json()
        assert result["authentic"] and result["confidence"] == "high", result

    for _ in range(5):  # imports, caches, the allocator's first blocks
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
            "bytes": len(signed.content)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    parser.add_argument("--child", choices=["plain", "tuned"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.database_url, args.runs, args.child == "tuned")))
        return
    env = serve.server_env(args.database_url, None)
    serve.ensure_database(args.database_url)
    serve.manage(env, "migrate", "--noinput")
    serve.manage(env, "createcachetable")
    rows = {}
    for mode in ("plain", "tuned"):
        out = subprocess.run([sys.executable, __file__, "--child", mode, "--runs", str(args.runs),
                              "--database-url", args.database_url], check=True, capture_output=True, text=True)
        rows[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"POST /v1/verify, signed 1 MP JPEG ({rows['plain']['bytes'] / 1e3:.0f} KB), confidence high, "
          f"{args.runs} requests per row\n")
    print("| malloc | median wall ms | median CPU ms | page faults / request | SQL statements | RSS MB |")
    print("|---|---|---|---|---|---|")
    for mode, label in (("plain", "as started"), ("tuned", "tuned (gunicorn worker)")):
        row = rows[mode]
        print(f"| {label} | {row['wall_ms']:.1f} | {row['cpu_ms']:.1f} | {row['faults']:,.0f} | {row['queries']} | "
              f"{row['rss_mb']:.0f} |")


if __name__ == "__main__":
    main()
