"""GET /v1/records at scale: one page's time and query count with an organization of N records (PostgreSQL).

Fills the database once (reused on later runs) with N records of one organization across 10 generators,
where one generator, one model and one format are rare (0.1% each), and 1,000 records of another
organization. Then times `record_list` (what the route runs: count, page, log tiles) for the first page,
a deep page, each filter alone (common and rare values) and a one-day range, and prints the plan's
index for each filter.

    .venv/bin/python bench/record_list.py [--records 1000000] [--rounds 30] [--limit 20]
        [--database-url postgres://postgres@127.0.0.1:5432/bench_records_list]
"""

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

FILL_SQL = """
INSERT INTO provenance_record (id, org_id, generator_id, key_id, model, watermark_id, content_hash, signature,
                               format, signed_at)
SELECT gen_random_uuid(), %(org)s, (%(generators)s::uuid[])[1 + CASE WHEN i %% 1000 = 0 THEN 0 ELSE 1 + i %% 9 END],
       (%(keys)s::uuid[])[1 + CASE WHEN i %% 1000 = 0 THEN 0 ELSE 1 + i %% 9 END],
       CASE WHEN i %% 1000 = 1 THEN 'rare-model' ELSE 'model-' || (i %% 5) END, 'none',
       'sha3-256:' || md5(i::text) || md5((i + 1)::text), '\\x00'::bytea,
       CASE WHEN i %% 1000 = 2 THEN 'video' WHEN i %% 2 = 0 THEN 'image' ELSE NULL END,
       TIMESTAMPTZ '2026-01-01 00:00:00+00' + (i || ' seconds')::interval
FROM generate_series(%(start)s::bigint, %(stop)s::bigint) AS i
"""


def fill(target: int):
    """The bench organization with `target` records (made once), its generators, and the other organization."""
    from django.db import connection

    from accounts.models import Organization
    from generators.models import GeneratorKey
    from provenance.models import Record
    from tests import factories

    org = Organization.objects.filter(name="bench-list").first() or factories.make_org(name="bench-list")
    generators = list(org.generators.order_by("name"))
    while len(generators) < 10:
        generators.append(factories.make_client_generator(org=org, name=f"bench-list-{len(generators)}")[0])
    keys = [str(GeneratorKey.objects.get(generator=generator).pk) for generator in generators]
    existing = Record.objects.filter(org=org).count()
    with connection.cursor() as cursor:
        for start in range(existing, target, 200_000):
            stop = min(start + 200_000, target) - 1
            cursor.execute(FILL_SQL, {"org": org.pk, "generators": [str(g.pk) for g in generators], "keys": keys,
                                      "start": start, "stop": stop})
            print(f"  filled {stop + 1:,} records", flush=True)
        other = Organization.objects.filter(name="bench-list-other").first()
        if other is None:
            other = factories.make_org(name="bench-list-other")
            generator = factories.make_client_generator(org=other, name="other")[0]
            cursor.execute(FILL_SQL, {"org": other.pk, "generators": [str(generator.pk)] * 10,
                                      "keys": [str(GeneratorKey.objects.get(generator=generator).pk)] * 10,
                                      "start": 0, "stop": 999})
        cursor.execute("VACUUM ANALYZE provenance_record")
    return org, generators


def timed(call, rounds: int) -> tuple[list[float], int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    timings = []
    for _ in range(rounds):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            _records, total = call()
            timings.append((time.perf_counter() - started) * 1000)
    return timings, len(captured.captured_queries), total


def plan_index(org, filters) -> str:
    """The index PostgreSQL's plan reads the page through."""
    from django.db import connection

    from provenance.models import Record
    from provenance.selectors import _filtered

    queryset = _filtered(Record.objects.for_org(org), filters).order_by("-signed_at", "-id")[:20]
    sql, params = queryset.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    names = [word for word in plan.replace('"', " ").split() if word.startswith("record_")]
    return names[0] if names else "(no index: " + plan.splitlines()[0].strip() + ")"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_records_list")
    args = parser.parse_args()
    serve.django_in_process(serve.prepared_database(args.database_url))
    from provenance.selectors import RecordFilters, record_list

    org, generators = fill(args.records)
    day = datetime(2026, 1, 5, tzinfo=UTC)
    cases = {
        "first page, no filter": (RecordFilters(), 1),
        "page 500, no filter": (RecordFilters(), 500),
        "common generator": (RecordFilters(generator_id=generators[1].pk), 1),
        "rare generator (0.1%)": (RecordFilters(generator_id=generators[0].pk), 1),
        "common model": (RecordFilters(model="model-3"), 1),
        "rare model (0.1%)": (RecordFilters(model="rare-model"), 1),
        "format image (50%)": (RecordFilters(format="image"), 1),
        "rare format video (0.1%)": (RecordFilters(format="video"), 1),
        "one day": (RecordFilters(signed_from=day, signed_to=day + timedelta(days=1)), 1),
    }
    print(f"GET /v1/records selector, {args.records:,} records in one organization, limit {args.limit}, "
          f"{args.rounds} rounds each")
    print("| case | total | queries | index | mean ms | p50 ms | p99 ms |")
    print("|---|---|---|---|---|---|---|")
    for name, (filters, page) in cases.items():
        timings, queries, total = timed(lambda f=filters, p=page: record_list(org=org, filters=f, page=p,
                                                                            limit=args.limit), args.rounds)
        timings.sort()
        p99 = timings[min(len(timings) - 1, int(len(timings) * 0.99))]
        print(f"| {name} | {total:,} | {queries} | {plan_index(org, filters)} | {statistics.mean(timings):.1f} "
              f"| {statistics.median(timings):.1f} | {p99:.1f} |", flush=True)


if __name__ == "__main__":
    main()
