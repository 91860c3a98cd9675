"""What the proxy and a second app instance cost: authenticated reads through nginx to two instances of one
worker each, against one instance of two workers served directly, in one run (docs/performance.md).

Three servers run side by side on one PostgreSQL and one Redis of their own (tests/own_services.py):

  - `nginx -> 2 x 1`: deploy/nginx.conf in front of two gunicorn instances of one worker each;
  - `nginx -> 1 x 2`: the same nginx site in front of one instance of two workers (the proxy's cost alone);
  - `1 x 2 direct`: one instance of two workers, no proxy (what a single instance serves).

Every instance is gunicorn with gunicorn.conf.py (the production worker). wrk sends GET /v1/records/:id with
an API key, rotating over the records of several organizations, in rounds that alternate the three servers
(each round in a new order), a short warm-up before each measurement; the median of the rounds is reported,
with the ratios to `1 x 2 direct`. On a machine other jobs share, throughput swings from round to round with
their load; the CPU the server's processes (nginx, gunicorn, PostgreSQL) spend a request does not, and is
what a machine of the cluster's own would be bound by, so it is reported beside it as a capacity ratio.

    .venv/bin/python bench/instances.py [--duration 8] [--rounds 5] [--connections 32] [--nginx-workers 1]
                                        [--keepalive N]
"""

import argparse
import contextlib
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from tests.nginx_site import cluster_site, start_nginx
from tests.own_services import OwnPostgres, OwnRedis, free_port, wait_for_port
from tests.waiting import cpu_seconds, process_tree, serving, wait_for_process

ORGS, RECORDS_PER_ORG = 10, 50


def reads_lua(requests: list[tuple[str, str]]) -> str:
    """A wrk script cycling through (Authorization value, path) pairs with GET."""
    entries = ",\n".join(f'{{"{auth}", "{path}"}}' for auth, path in requests)
    return f"""local entries = {{
{entries}
}}
local counter = 0
request = function()
  counter = counter + 1
  local entry = entries[(counter % #entries) + 1]
  return wrk.format("GET", entry[2], {{["Authorization"] = entry[1]}})
end
"""


def prepare(env: dict[str, str]) -> list[tuple[str, str]]:
    """Organizations with an API key and records each: (Authorization, /v1/records/:id) pairs."""
    serve.django_in_process(env)
    from tests import factories
    from tests.transparency.logs import make_key, make_records

    requests = []
    for _ in range(ORGS):
        org = factories.make_org(plan="enterprise")  # no rate limit: every answer is a 200
        auth = f"Bearer {factories.make_api_key(org=org)}"
        requests += [(auth, f"/v1/records/{record.pk}") for record in make_records(make_key(org), RECORDS_PER_ORG)]
    return requests


@contextlib.contextmanager
def gunicorn(env: dict[str, str], workers: int, folder: Path):
    """gunicorn -c gunicorn.conf.py with `workers` workers on a free port; yields the port."""
    port = free_port()
    with (folder / f"gunicorn-{port}.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind",
             f"127.0.0.1:{port}", "--no-control-socket"], cwd=serve.ROOT, env={**env, "WEB_CONCURRENCY": str(workers)},
            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port, process=process)
        wait_for_process(lambda: serving(f"http://127.0.0.1:{port}/healthz"), process, what="gunicorn serving")
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=60)


@contextlib.contextmanager
def nginx(app_ports: list[int], folder: Path, workers: int, keepalive: int | None):
    port = free_port()
    prefix = folder / f"nginx-{port}"
    prefix.mkdir()
    site = cluster_site(port=port, app_ports=app_ports)
    if keepalive is not None:
        site = re.sub(r"keepalive \d+;", f"keepalive {keepalive};", site)
    process = start_nginx(prefix, site, port, workers=workers)
    try:
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=8, help="seconds of each measurement")
    parser.add_argument("--rounds", type=int, default=5, help="measurements of each server, alternating")
    parser.add_argument("--connections", type=int, default=32, help="wrk keep-alive connections")
    parser.add_argument("--nginx-workers", type=int, default=1, help="nginx worker_processes")
    parser.add_argument("--keepalive", type=int, default=None,
                        help="idle upstream connections an nginx worker keeps (default: deploy/nginx.conf's)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="instances-"))
    pg, redis_server = OwnPostgres(), OwnRedis()
    try:
        pg.start()
        redis_server.start()
        pg.create_database("instances")
        env = {**serve.server_env(pg.url("instances"), redis_server.url()), "TRUSTED_PROXY_COUNT": "1",
               "VERIFY_RATE_PER_MINUTE": "100000000"}  # record fetches count against the per-IP limit
        serve.manage(env, "migrate", "--noinput")
        lua = reads_lua(prepare(env))
        from django.db import connections

        connections.close_all()
        with contextlib.ExitStack() as stack:
            one_a, one_b, two = (stack.enter_context(gunicorn(env, workers, folder)) for workers in (1, 1, 2))
            database = _postmaster_pid(pg)
            proxied_pair = stack.enter_context(nginx([one_a[0], one_b[0]], folder, args.nginx_workers, args.keepalive))
            proxied_one = stack.enter_context(nginx([two[0]], folder, args.nginx_workers, args.keepalive))
            # Each server: its port, and the processes whose CPU it costs (PostgreSQL's serves every one).
            servers = {"nginx -> 2 x 1": (proxied_pair[0], [proxied_pair[1], one_a[1], one_b[1], database]),
                       "nginx -> 1 x 2": (proxied_one[0], [proxied_one[1], two[1], database]),
                       "1 x 2 direct": (two[0], [two[1], database])}
            results = measure(servers, lua, args)
    finally:
        redis_server.close()
        pg.close()
    report(results, args)


def _postmaster_pid(pg: OwnPostgres) -> int:
    return int((pg.data / "postmaster.pid").read_text().split()[0])


def _cpu(roots: list[int]) -> float:
    """CPU seconds (user and system) of every process in these process trees."""
    return sum(cpu_seconds(pid) or 0.0 for root in roots for pid in process_tree(root))


def measure(servers: dict[str, tuple[int, list[int]]], lua: str, args: argparse.Namespace) -> dict[str, list[dict]]:
    """wrk against each server in turn, round after round (each round in a new order). Each measurement also
    gives the CPU its server's processes spent a request: what a machine of its own would be bound by."""
    names, results = list(servers), {name: [] for name in servers}
    for name in names:  # every worker's first requests (imports, connections) before any measurement
        serve.wrk(f"http://127.0.0.1:{servers[name][0]}", lua=lua, duration=3, connections=args.connections)
    for round_number in range(args.rounds):
        order = names[round_number % len(names):] + names[:round_number % len(names)]
        for name in order:
            url, roots = f"http://127.0.0.1:{servers[name][0]}", servers[name][1]
            serve.wrk(url, lua=lua, duration=1, connections=args.connections)  # warm-up
            before = _cpu(roots)
            stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
            stats["cpu_ms"] = (_cpu(roots) - before) * 1000 / max(1, stats["requests"])
            results[name].append(stats)
            print(f"round {round_number + 1}: {name}: {stats['requests_per_second']:.0f} requests/s, "
                  f"{stats['cpu_ms']:.2f} ms CPU a request, p50 {stats['p50_ms']:.1f} ms, non-2xx {stats['non_2xx']}, "
                  f"socket errors {stats['socket_errors']}")
            sys.stdout.flush()
    return results


def report(results: dict[str, list[dict]], args: argparse.Namespace) -> None:
    def median(name: str, field: str) -> float:
        return statistics.median(s[field] for s in results[name])

    baseline, baseline_cpu = median("1 x 2 direct", "requests_per_second"), median("1 x 2 direct", "cpu_ms")
    print(f"\nGET /v1/records/:id with an API key; wrk {args.connections} keep-alive connections, {args.rounds} "
          f"alternating rounds of {args.duration} s, nginx {args.nginx_workers} worker(s), upstream keepalive "
          f"{args.keepalive or 'as deploy/nginx.conf'}; medians of the rounds. CPU a request: the server's processes "
          "(nginx, gunicorn, PostgreSQL), not wrk's.\n")
    print("| server | requests/s | rounds | of `1 x 2 direct`: medians, median of rounds | CPU ms a request | "
          "capacity of `1 x 2 direct` by CPU: medians, median of rounds | p50 ms | p99 ms |\n"
          "|---|---|---|---|---|---|---|---|")
    direct = results["1 x 2 direct"]
    for name, runs in results.items():
        rounds = "/".join(f"{s['requests_per_second']:.0f}" for s in runs)
        # The ratio within each round (measured minutes apart at most) is less swayed by the machine's other
        # jobs than the ratio of medians taken over the whole run.
        pairs = list(zip(runs, direct, strict=True))
        by_round = statistics.median(r["requests_per_second"] / d["requests_per_second"] for r, d in pairs)
        cpu_by_round = statistics.median(d["cpu_ms"] / r["cpu_ms"] for r, d in pairs)
        print(f"| {name} | {median(name, 'requests_per_second'):.0f} | {rounds} | "
              f"{median(name, 'requests_per_second') / baseline:.1%}, {by_round:.1%} | {median(name, 'cpu_ms'):.2f} | "
              f"{baseline_cpu / median(name, 'cpu_ms'):.1%}, {cpu_by_round:.1%} | {median(name, 'p50_ms'):.1f} | "
              f"{median(name, 'p99_ms'):.1f} |")
    errors = sum(s["non_2xx"] + s["socket_errors"] for runs in results.values() for s in runs)
    print(f"\nNon-2xx answers and socket errors, all rounds: {errors}")


if __name__ == "__main__":
    main()
