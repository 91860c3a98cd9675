"""Perceptual-hash lookup time with many records in PostgreSQL (multi-index hashing over 4 bands).

Fills the benchmark database with N records of random 64-bit pHashes (once; reused on later runs),
then times `record_for_phash` for near hashes (stored ones with up to 7 bits flipped) and for misses.

    .venv/bin/python bench/phash_lookup.py [--records 1000000] [--queries 300]
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

FILL_SQL = """
INSERT INTO provenance_record (id, org_id, generator_id, key_id, model, watermark_id, content_hash, phash,
                               phash_band0, phash_band1, phash_band2, phash_band3, signature, format, signed_at)
SELECT gen_random_uuid(), %(org)s, %(generator)s, %(key)s, 'bench', lpad(to_hex(i), 16, '0'),
       'sha3-256:' || md5(i::text) || md5((i + 1)::text),
       lpad(to_hex(b0), 4, '0') || lpad(to_hex(b1), 4, '0') || lpad(to_hex(b2), 4, '0') || lpad(to_hex(b3), 4, '0'),
       b0, b1, b2, b3, '\\x00'::bytea, 'image', now() - (i || ' seconds')::interval
FROM (SELECT i, (random() * 65535)::int AS b0, (random() * 65535)::int AS b1, (random() * 65535)::int AS b2,
             (random() * 65535)::int AS b3 FROM generate_series(%(start)s, %(stop)s) AS i) AS rows
"""


def fill(target: int) -> int:
    from django.db import connection

    from accounts.models import Organization
    from generators.models import GeneratorKey
    from provenance.models import Record
    from tests import factories

    existing = Record.objects.filter(model="bench").count()
    if existing >= target:
        return existing
    org = Organization.objects.filter(name="bench-phash").first() or factories.make_org(name="bench-phash")
    generator = factories.make_generator(org=org, name="bench-phash")
    key = GeneratorKey.objects.get(generator=generator)
    chunk = 200_000
    with connection.cursor() as cursor:
        for start in range(existing, target, chunk):
            stop = min(start + chunk, target) - 1
            cursor.execute(FILL_SQL, {"org": org.pk, "generator": generator.pk, "key": key.pk,
                                      "start": start, "stop": stop})
            print(f"  filled {stop + 1:,} records", flush=True)
        cursor.execute("ANALYZE provenance_record")
    return Record.objects.filter(model="bench").count()


def flip_bits(phash: str, bits: int, rng: random.Random) -> str:
    value = int(phash, 16)
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return f"{value:016x}"


def time_queries(hashes: list[str]) -> list[float]:
    from verification.selectors import record_for_phash

    timings = []
    for phash in hashes:
        started = time.perf_counter()
        record_for_phash(phash)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()

    env = serve.server_env(args.database_url, None)
    serve.ensure_database(args.database_url)
    serve.manage(env, "migrate", "--noinput")
    os.environ.update(env)
    import django

    django.setup()
    from provenance.models import Record
    from verification.selectors import PHASH_MAX_DISTANCE, record_for_phash

    count = fill(args.records)
    rng = random.Random(7)
    stored = list(Record.objects.filter(model="bench").order_by("?").values_list("phash", flat=True)[:args.queries])
    near = [flip_bits(phash, rng.randint(0, PHASH_MAX_DISTANCE), rng) for phash in stored]
    misses = [f"{rng.getrandbits(64):016x}" for _ in range(args.queries)]
    time_queries(near[:20])  # warm the connection and the index pages
    found = sum(record_for_phash(phash) is not None for phash in near)
    print(f"\n{count:,} records in PostgreSQL; {args.queries} queries each; match within {PHASH_MAX_DISTANCE} bits\n")
    print("| query | found | mean ms | p50 ms | p99 ms |")
    print("|---|---|---|---|---|")
    for label, hashes, hits in (("near (0-7 bits flipped)", near, found), ("miss (random hash)", misses, None)):
        timings = sorted(time_queries(hashes))
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        print(f"| {label} | {'' if hits is None else f'{hits}/{len(hashes)}'} | {statistics.mean(timings):.2f} "
              f"| {statistics.median(timings):.2f} | {p99:.2f} |")


if __name__ == "__main__":
    main()
