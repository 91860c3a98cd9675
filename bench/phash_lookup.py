"""Perceptual-hash lookup time with many records in PostgreSQL (multi-index hashing over 4 bands).

Fills the benchmark database with N records of random 64-bit image pHashes plus a skewed cluster of
records that share their first three 16-bit bands and take 50 values in the fourth, like the
records bench/records.py leaves behind (`{i:016x}` for i < 50; flat images crowd bands the same way),
once, reused on later runs. Then times `record_for_fingerprint` for near hashes (stored
ones with 0-7 bits flipped), misses (random hashes), exact hashes of cluster records, and near
hashes of cluster records (1-7 bits flipped). A query is found when the record returned is at most
as far as the hash it was made from (the nearest within 7 bits, whichever record that is).

    .venv/bin/python bench/phash_lookup.py [--records 1000000] [--cluster 87000] [--queries 300]
        [--database-url postgres://postgres@127.0.0.1:5432/bench]
"""

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

CLUSTER_BANDS = (0, 0, 0)  # the bands the cluster shares: bench/records.py's hashes are all 000000000000xxxx
CLUSTER_VALUES = 50  # values of the cluster's fourth band (bench/records.py: its batch size)

FILL_SQL = """
INSERT INTO provenance_record (id, org_id, generator_id, key_id, model, watermark_id, content_hash, phash,
                               fingerprint_kind, phash_value, signature, format, signed_at)
SELECT gen_random_uuid(), %(org)s, %(generator)s, %(key)s, %(model)s, lpad(to_hex(i), 16, '0'),
       'sha3-256:' || md5(i::text) || md5((i + 1)::text),
       lpad(to_hex(b0), 4, '0') || lpad(to_hex(b1), 4, '0') || lpad(to_hex(b2), 4, '0') || lpad(to_hex(b3), 4, '0'),
       'image-phash', (b0::bigint << 48) | (b1::bigint << 32) | (b2::bigint << 16) | b3::bigint,
       '\\x00'::bytea, 'image', now() - (i || ' seconds')::interval
FROM (SELECT i, coalesce(%(b0)s, (random() * 65535)::int) AS b0, coalesce(%(b1)s, (random() * 65535)::int) AS b1,
             coalesce(%(b2)s, (random() * 65535)::int) AS b2, (random() * %(b3_top)s)::int AS b3
      FROM generate_series(%(start)s, %(stop)s) AS i) AS rows
"""


def fill(model: str, target: int, bands: tuple[int | None, int | None, int | None], b3_values: int) -> int:
    """Make `target` records of `model`; bands left None are random, the fourth takes `b3_values` values."""
    from django.db import connection

    from accounts.models import Organization
    from generators.models import GeneratorKey
    from provenance.models import Record
    from tests import factories

    existing = Record.objects.filter(model=model).count()
    if existing >= target:
        return existing
    org = Organization.objects.filter(name="bench-phash").first() or factories.make_org(name="bench-phash")
    generator = factories.make_generator(org=org, name="bench-phash")
    key = GeneratorKey.objects.get(generator=generator)
    chunk = 200_000
    offset = 10_000_000 if model != "bench" else 0  # distinct watermark ids and signing times per set
    with connection.cursor() as cursor:
        for start in range(existing, target, chunk):
            stop = min(start + chunk, target) - 1
            cursor.execute(FILL_SQL, {"org": org.pk, "generator": generator.pk, "key": key.pk, "model": model,
                                      "start": offset + start, "stop": offset + stop, "b0": bands[0],
                                      "b1": bands[1], "b2": bands[2], "b3_top": b3_values - 1})
            print(f"  {model}: filled {stop + 1:,} records", flush=True)
        cursor.execute("VACUUM ANALYZE provenance_record")
        cursor.execute("VACUUM ANALYZE provenance_fingerprint")  # filled by the insert trigger
    return Record.objects.filter(model=model).count()


def flip_bits(phash: str, bits: int, rng: random.Random) -> str:
    value = int(phash, 16)
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return f"{value:016x}"


def time_queries(queries: list[tuple[str, int]]) -> tuple[list[float], int]:
    """Timings in ms and how many queries found a record at most as far as the hash they came from."""
    from provenance.phash_bands import hamming
    from verification.selectors import record_for_fingerprint

    timings, found = [], 0
    for phash, flipped in queries:
        started = time.perf_counter()
        record = record_for_fingerprint(kind="image-phash", value=phash)
        timings.append((time.perf_counter() - started) * 1000)
        found += record is not None and hamming(record.phash, phash) <= flipped
    return timings, found


def sample(model: str, count: int) -> list[str]:
    from provenance.models import Record

    return list(Record.objects.filter(model=model).order_by("?").values_list("phash", flat=True)[:count])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--cluster", type=int, default=87_000, help="records sharing their first three bands")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()

    serve.django_in_process(serve.prepared_database(args.database_url))
    from django.db import connection

    from verification.selectors import PHASH_MAX_DISTANCE

    count = (fill("bench", args.records, (None, None, None), 1 << 16)
             + fill("bench-cluster", args.cluster, CLUSTER_BANDS, CLUSTER_VALUES))
    rng = random.Random(7)
    near = [(phash, bits) for phash in sample("bench", args.queries)
            for bits in [rng.randint(0, PHASH_MAX_DISTANCE)]]
    near = [(flip_bits(phash, bits, rng), bits) for phash, bits in near]
    misses = [(f"{rng.getrandbits(64):016x}", PHASH_MAX_DISTANCE) for _ in range(args.queries)]
    cluster = sample("bench-cluster", args.queries)
    cluster_exact = [(phash, 0) for phash in cluster]
    cluster_near = [(phash, bits) for phash in cluster for bits in [rng.randint(1, PHASH_MAX_DISTANCE)]]
    cluster_near = [(flip_bits(phash, bits, rng), bits) for phash, bits in cluster_near]
    time_queries(near[:20] + cluster_exact[:20])  # warm the connection and the index pages
    print(f"\n{count:,} records in PostgreSQL {connection.pg_version // 10000}, {args.cluster:,} of them sharing "
          f"their first three bands; {args.queries} queries each; match within {PHASH_MAX_DISTANCE} bits\n")
    print("| query | found | mean ms | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|---|")
    for label, queries, expect_found in (("near (0-7 bits flipped)", near, True),
                                         ("miss (random hash)", misses, False),
                                         ("cluster, exact", cluster_exact, True),
                                         ("cluster, near (1-7 bits flipped)", cluster_near, True)):
        timings, found = time_queries(queries)
        timings.sort()
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        shown = f"{found}/{len(queries)}" if expect_found else f"{found} found"
        print(f"| {label} | {shown} | {statistics.mean(timings):.2f} | {statistics.median(timings):.2f} "
              f"| {p99:.2f} | {timings[-1]:.2f} |")


if __name__ == "__main__":
    main()
