"""The exact-hash lookup's cost per verification with 1,000,000 records in PostgreSQL (target: p99 under 1 ms).

Verification looks the file's content hash up after token and watermark, before the perceptual hash
(`verification.selectors.record_for_content_hash`: the earliest record of the hash, with its organization,
key and generator, one probe of the `(content_hash, signed_at, id)` index). This fills the benchmark database
once, in SQL (reused on later runs): the records of bench/phash_lookup.py (each its own hash), plus a crowd
of records that all share one hash (a client re-sending one file, a picture signed by many). Then it times
the lookup, as a verification makes it, for:
- hits: hashes of stored records (a client-signed file verified without its token);
- misses: hashes no record has: the cost every unsigned or changed file now pays before the pHash search;
- the crowd's hash: 100,000 records, one answer (the earliest).
Each lookup's wall-clock time, this process's CPU time for it (building the statement's parameters and
the record with its organization, key and generator), and PostgreSQL's own execution time (EXPLAIN
ANALYZE), so a busy machine's scheduling delays can be told from the lookup's cost. And, for scale,
hashing a 1-megapixel JPEG as verification does (`content_hash_of_opened`), which an
unsigned file now pays too. It prints the plan PostgreSQL chose for each kind.

    .venv/bin/python bench/exact_hash_lookup.py [--records 1000000] [--crowd 100000] [--queries 2000]
        [--rounds 3] [--database-url postgres://postgres@127.0.0.1:5432/bench]
"""

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.phash_lookup import fill

CROWD_HASH = "sha3-256:" + "c0" * 32
CROWD_SQL = """
INSERT INTO provenance_record (id, org_id, generator_id, key_id, model, watermark_id, content_hash, signature,
                               signed_at)
SELECT gen_random_uuid(), %(org)s, %(generator)s, %(key)s, 'bench-crowd', 'none', %(hash)s, '\\x00'::bytea,
       now() - (i || ' seconds')::interval
FROM generate_series(%(start)s, %(stop)s) AS i
"""


def fill_crowd(target: int) -> int:
    from django.db import connection

    from generators.models import GeneratorKey
    from provenance.models import Record

    existing = Record.objects.filter(content_hash=CROWD_HASH).count()
    if existing >= target:
        return existing
    key = GeneratorKey.objects.filter(generator__name="bench-phash").select_related("generator").first()
    with connection.cursor() as cursor:
        cursor.execute(CROWD_SQL, {"org": key.generator.org_id, "generator": key.generator_id, "key": key.pk,
                                   "hash": CROWD_HASH, "start": existing, "stop": target - 1})
        cursor.execute("VACUUM ANALYZE provenance_record")
    print(f"  crowd: {target:,} records sharing one hash", flush=True)
    return target


def time_lookups(hashes: list[str]) -> tuple[list[float], list[float], int]:
    """Wall-clock and this thread's CPU time of each lookup, in ms, and how many found a record."""
    from verification.selectors import record_for_content_hash

    timings, cpu, found = [], [], 0
    for content_hash in hashes:
        started, started_cpu = time.perf_counter(), time.thread_time()
        record = record_for_content_hash(content_hash)
        timings.append((time.perf_counter() - started) * 1000)
        cpu.append((time.thread_time() - started_cpu) * 1000)
        found += record is not None
    return timings, cpu, found


def server_ms(hashes: list[str]) -> list[float]:
    """PostgreSQL's own execution time of the lookup's statement for each hash (EXPLAIN ANALYZE)."""
    from django.db import connection

    from verification.selectors import _EARLIEST_WITH_HASH

    sql = (_EARLIEST_WITH_HASH._compiled or _EARLIEST_WITH_HASH._compile())[0]
    timings = []
    with connection.cursor() as cursor:
        for content_hash in hashes:
            cursor.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql, [content_hash])
            timings.append(cursor.fetchone()[0][0]["Execution Time"])
    return timings


def plan(content_hash: str) -> str:
    """The plan's index line for the lookup's own SQL."""
    from django.db import connection

    from verification.selectors import _EARLIEST_WITH_HASH

    sql = (_EARLIEST_WITH_HASH._compiled or _EARLIEST_WITH_HASH._compile())[0]
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, [content_hash])
        lines = [row[0].strip() for row in cursor.fetchall()]
    scan = next(line for line in lines if "record_content_hash_earliest" in line)
    rows = scan.split("rows=")[-1].split()[0]
    sort = "with a sort" if any("Sort" in line for line in lines) else "no sort"
    buffers = next((line for line in lines if line.startswith("Buffers")), "")
    return f"{scan.split('  (')[0].removeprefix('->').strip()}, {rows} row(s) read, {sort}; {buffers}"


def hashing_ms(repeat: int) -> list[float]:
    import numpy as np
    from PIL import Image

    from media_codecs import open_media
    from record_format.hashing import content_hash_of_opened
    from tests.media import encode

    rng = np.random.default_rng(7)
    data = encode(Image.fromarray(rng.integers(0, 255, (768, 1365, 3), dtype=np.uint8)), "jpeg", quality=90)
    media = open_media(data)
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        content_hash_of_opened(data, media)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def row(label: str, timings: list[float], shown: str) -> str:
    timings = sorted(timings)
    p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
    return (f"| {label} | {shown} | {statistics.mean(timings):.3f} | {statistics.median(timings):.3f} "
            f"| {p99:.3f} | {timings[-1]:.3f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--crowd", type=int, default=100_000, help="records sharing one content hash")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds per kind (the machine may be shared)")
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()

    serve.django_in_process(serve.prepared_database(args.database_url))
    from django.db import connection

    from provenance.models import Record

    fill("bench", args.records, (None, None, None), 1 << 16)
    fill_crowd(args.crowd)
    total = Record.objects.count()
    rng = random.Random(11)
    hits = list(Record.objects.filter(model="bench").order_by("?").values_list("content_hash", flat=True)
                [:args.queries])
    misses = ["sha3-256:" + f"{rng.getrandbits(256):064x}" for _ in range(args.queries)]
    crowd = [CROWD_HASH] * args.queries
    time_lookups(hits[:50] + misses[:50] + crowd[:50])  # warm the connection, the statement and index pages
    print(f"\n{total:,} records in PostgreSQL {connection.pg_version // 10000}, {args.crowd:,} of them sharing one "
          f"hash; {args.queries} lookups each, one connection, as a verification makes them\n")
    print(f"Load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores\n")
    print("| lookup | found | mean ms | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    kinds = (("hit (a stored record's hash)", hits), ("miss (no record has it)", misses),
             (f"crowd ({args.crowd:,} records, one hash)", crowd))
    for label, hashes in kinds:
        for round_number in range(1, args.rounds + 1):
            timings, cpu, found = time_lookups(hashes)
            print(row(f"{label}, round {round_number}: wall", timings, f"{found}/{len(hashes)}"))
            print(row(f"{label}, round {round_number}: client CPU", cpu, "-"))
        print(row(f"{label}: PostgreSQL execution", server_ms(hashes), "-"))
    print(row("hashing a 1 MP JPEG (for scale)", hashing_ms(200), "-"))
    print(f"\nLoad average after: {os.getloadavg()[0]:.1f}")
    print("\nPlans:")
    for label, content_hash in (("hit", hits[0]), ("miss", misses[0]), ("crowd", CROWD_HASH)):
        print(f"- {label}: {plan(content_hash)}")


if __name__ == "__main__":
    main()
