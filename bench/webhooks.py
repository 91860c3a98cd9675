"""What webhooks cost POST /v1/records: throughput with 0, 1 and 10 subscribed healthy endpoints, and the
latency one hanging endpoint adds (bounded by WEBHOOK_TIMEOUT_SECONDS, 10 s).

Production shape as in bench/records.py (gunicorn, PostgreSQL, Redis, DEBUG off), with
WEBHOOK_ALLOW_PRIVATE_TARGETS on so deliveries can reach the local receiver: a separate process
(asyncio, one 204 per request, so its own cost stays small on a shared machine) or, for the hang
row, one that accepts and never answers. Every row uses its own fresh Scale-plan organizations,
each endpoint subscribed to record.created.

    .venv/bin/python bench/webhooks.py [--duration 10] [--connections 32] [--repeats 3] [--hang-requests 4]
"""

import asyncio
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

ORGS = 20


def receiver_main(port: int, mode: str) -> None:
    """The receiver process: `healthy` answers 204 to every POST, `hang` reads and never answers."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            if mode == "hang":
                await asyncio.sleep(3600)
            writer.write(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def start_receiver(mode: str) -> tuple[subprocess.Popen, int]:
    port = serve.free_port()
    process = subprocess.Popen([sys.executable, __file__, "--receiver", str(port), mode])
    serve._wait_for_port(port)
    return process, port


def organizations(env: dict[str, str], label: str, endpoints: int, port: int) -> list[tuple[str, str]]:
    """Fresh Scale organizations with `endpoints` record.created endpoints each: (Authorization, body) pairs."""
    pairs = serve.scale_organizations(env, f"bench-webhooks-{label}", ORGS)  # sets Django up
    from tests import factories
    from webhooks.services import webhook_create

    requests = []
    for index, (org, _) in enumerate(pairs):
        for n in range(endpoints):
            webhook_create(org=org, url=f"http://127.0.0.1:{port}/hook/{n}", events=["record.created"])
        generator, seed = factories.make_client_generator(org=org)
        body = factories.record_body(generator=generator, seed=seed, content=f"{label}-{index}".encode())
        requests.append((f"Bearer {factories.make_api_key(org=org)}", json.dumps(body)))
    return requests


def deliveries_of(requests_orgs: list[tuple[str, str]]) -> dict[str, int]:
    from webhooks.models import WebhookDelivery

    bodies = [json.loads(body) for _, body in requests_orgs]
    generator_ids = {body["generator_id"] for body in bodies}
    logged = WebhookDelivery.objects.filter(payload__contains='"record.created"')
    counts = {"success": 0, "failed": 0}
    for status, payload in logged.values_list("status", "payload").iterator():
        if json.loads(payload)["data"]["generator_id"] in generator_ids:
            counts[status] += 1
    return counts


def queries_per_request(requests: list[tuple[str, str]]) -> float:
    """SQL statements one POST /v1/records makes in process (test client), deliveries included."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client, (auth, body) = Client(), requests[0]
    client.post("/v1/records", body, content_type="application/json", HTTP_AUTHORIZATION=auth)  # warm
    runs = 20
    with CaptureQueriesContext(connection) as captured:
        for _ in range(runs):
            assert client.post("/v1/records", body, content_type="application/json",
                               HTTP_AUTHORIZATION=auth).status_code == 201
    return len(captured.captured_queries) / runs


def sequential_latencies(env: dict[str, str], args, requests: list[tuple[str, str]],
                         count: int) -> list[tuple[float, int]]:
    """(seconds, status) of `count` sequential POST /v1/records, after warming every worker up."""
    import requests as http

    def post(url: str, auth: str, body: str) -> tuple[float, int]:
        started = time.monotonic()
        response = http.post(f"{url}/v1/records", data=body, timeout=60,
                             headers={"Authorization": auth, "Content-Type": "application/json"})
        return time.monotonic() - started, response.status_code

    with serve.gunicorn(env, workers=args.workers, worker_class=args.worker_class, threads=args.threads) as url:
        warm = requests[-1]
        for _ in range(4 * args.workers):  # new connections each: every worker serves a few
            post(url, *warm)
        return [post(url, *requests[index % (len(requests) - 1)]) for index in range(count)]


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.add_argument("--hang-requests", type=int, default=4, help="sequential requests with a hanging endpoint")
    args = parser.parse_args()
    env = {**serve.prepared_env(args), "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true"}
    healthy, healthy_port = start_receiver("healthy")
    hanging, hanging_port = start_receiver("hang")
    try:
        rows = {endpoints: organizations(env, f"{endpoints}ep", endpoints, healthy_port) for endpoints in (0, 1, 10)}
        hang_requests = organizations(env, "hang", 1, hanging_port)
        from django.conf import settings

        print(f"{serve.describe(args, env)}; {ORGS} Scale organizations a row; receiver: asyncio process, 204\n")
        print("| endpoints a record | requests/s | vs none | p50 ms | p99 ms | non-2xx | deliveries ok/failed "
              "| SQL a request | every run, req/s |")
        print("|---|---|---|---|---|---|---|---|---|")
        baseline = None
        for endpoints, requests in rows.items():
            stats = serve.measure(env, serve.rotating_lua("POST", "/v1/records", requests), args)
            baseline = baseline or stats["requests_per_second"]
            logged = deliveries_of(requests)
            print(f"| {endpoints} | {stats['requests_per_second']:.0f} "
                  f"| {stats['requests_per_second'] / baseline:.0%} | {stats['p50_ms']:.2f} | {stats['p99_ms']:.2f} "
                  f"| {stats['non_2xx']} | {logged['success']}/{logged['failed']} "
                  f"| {queries_per_request(requests):.1f} | {stats['all_runs']} |")

        # The last organization of each list only warms the server up: it has no hanging endpoint.
        healthy_timed = sequential_latencies(env, args, rows[0], args.hang_requests)
        timed = sequential_latencies(env, args, hang_requests + rows[0][-1:], args.hang_requests)
        seconds = [s for s, _ in timed]
        baseline_ms = statistics.median(s for s, _ in healthy_timed) * 1000
        print(f"\nOne hanging endpoint (WEBHOOK_TIMEOUT_SECONDS={settings.WEBHOOK_TIMEOUT_SECONDS:g}), "
              f"{len(timed)} sequential requests: statuses {sorted({status for _, status in timed})}, "
              f"median {statistics.median(seconds):.3f} s, max {max(seconds):.3f} s; without webhooks the "
              f"same request takes {baseline_ms:.1f} ms (median), so the hang adds at most "
              f"{max(seconds) - baseline_ms / 1000:.3f} s")
    finally:
        for process in (healthy, hanging):
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--receiver":
        receiver_main(int(sys.argv[2]), sys.argv[3])
    else:
        main()
