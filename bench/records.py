"""POST /v1/records throughput (single items over keep-alive, and batches of 50) and where one request's time goes.

Production shape: gunicorn with 2 workers (gthread, so connections are kept alive), PostgreSQL,
Redis, DEBUG off. Requests rotate over Scale-plan organizations (each with its own client-managed
generator and key), so rate limits run on every request without answering 429.

    .venv/bin/python bench/records.py [--duration 10] [--connections 8]
"""

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

ORGS = 20
BATCH = 50


def prepare(env: dict[str, str]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Per organization: (Authorization, single-record body) and (Authorization, 50-record batch body)."""
    pairs = serve.scale_organizations(env, "bench-records", ORGS)
    from tests import factories

    singles, batches = [], []
    for index, (org, _) in enumerate(pairs):
        generator, seed = factories.make_client_generator(org=org)
        auth = f"Bearer {factories.make_api_key(org=org)}"
        items = [factories.record_body(generator=generator, seed=seed, content=f"{index}-{i}".encode(),
                                       watermark_id=f"wm-{i}", phash=f"{i:016x}") for i in range(BATCH)]
        singles.append((auth, json.dumps(items[0])))
        batches.append((auth, json.dumps({"records": items})))
    return singles, batches


def time_split(singles: list[tuple[str, str]]) -> dict[str, float]:
    """One request in process, many times: total, ML-DSA verify, database, and the rest (framework)."""
    from django.db import connection
    from django.test import Client

    from record_format import crypto

    client, (auth, body) = Client(), singles[0]
    database = {"seconds": 0.0, "queries": 0}

    def timed_query(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            database["seconds"] += time.perf_counter() - started
            database["queries"] += 1

    original_verify, verify_seconds = crypto.verify, [0.0]

    def timed_verify(*args):
        started = time.perf_counter()
        try:
            return original_verify(*args)
        finally:
            verify_seconds[0] += time.perf_counter() - started

    crypto.verify = timed_verify
    runs = 300
    for _ in range(30):  # warm caches and connections
        client.post("/v1/records", body, content_type="application/json", HTTP_AUTHORIZATION=auth)
    database.update(seconds=0.0, queries=0)
    verify_seconds[0] = 0.0
    with connection.execute_wrapper(timed_query):
        started = time.perf_counter()
        for _ in range(runs):
            response = client.post("/v1/records", body, content_type="application/json", HTTP_AUTHORIZATION=auth)
            assert response.status_code == 201, response.content
        total = time.perf_counter() - started
    crypto.verify = original_verify
    per = {"total": total / runs, "verify": verify_seconds[0] / runs, "database": database["seconds"] / runs}
    per["framework"] = per["total"] - per["verify"] - per["database"]
    per["queries"] = database["queries"] / runs
    return per


def main() -> None:
    args = serve.server_arguments(__doc__).parse_args()
    env = serve.prepared_env(args)
    singles, batches = prepare(env)

    print(f"{serve.describe(args, env)}; {ORGS} Scale-plan organizations\n")
    print("| request | requests/s | records/s | p50 ms | p99 ms | non-2xx | every run, req/s |")
    print("|---|---|---|---|---|---|---|")
    for label, path, requests, per_request in (("single", "/v1/records", singles, 1),
                                              (f"batch of {BATCH}", "/v1/records/batch", batches, BATCH)):
        lua = serve.rotating_lua("POST", path, requests)
        stats = serve.measure(env, lua, args)
        print(f"| {label} | {stats['requests_per_second']:.0f} | {stats['requests_per_second'] * per_request:.0f} "
              f"| {stats['p50_ms']:.2f} | {stats['p99_ms']:.2f} | {stats['non_2xx']} | {stats['all_runs']} |")

    split = time_split(singles)
    print("\nOne POST /v1/records in process (Django test client, same database and cache):\n")
    print("| part | ms | share |")
    print("|---|---|---|")
    for part in ("verify", "database", "framework", "total"):
        print(f"| {part} | {split[part] * 1000:.3f} | {split[part] / split['total']:.0%} |")
    print(f"\n{split['queries']:.1f} SQL statements a request (BEGIN/COMMIT included when the driver reports them).")


if __name__ == "__main__":
    main()
