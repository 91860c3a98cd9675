"""How keep-alive connections spread over gunicorn's workers, server start after server start.

For each worker class in turn (production's balanced gthread worker and gunicorn's stock gthread, in
the same run), start the server `--starts` times; each time, put 32 keep-alive connections of load on
a key route with wrk, count which worker holds each established connection (from /proc), and note
the requests a second. A start where one worker holds most connections measures half the machine.

    .venv/bin/python bench/connection_spread.py [--starts 10] [--duration 5] [--connections 32]
"""

import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.auth import KEY_ROUTE
from tests.proc_sockets import child_pids, connections_per_process

CLASSES = ("balanced", "gthread")


def one_start(env, lua, args, worker_class: str) -> dict:
    found = {}

    def note_server(process, port):
        found.update(master=process.pid, port=port)

    with serve.gunicorn(env, workers=args.workers, worker_class=worker_class, on_start=note_server) as url:
        time.sleep(1)  # both workers booted (the port answers once the first is up)
        serve.wrk(url, lua=lua, duration=2, connections=args.connections)  # warm both workers' code paths
        pids = child_pids(found["master"])
        counts = []
        sampler = threading.Timer(args.duration / 2, lambda: counts.extend(
            connections_per_process(pids, found["port"])))
        sampler.start()
        stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
        sampler.join()
    return {"counts": counts, "rps": stats["requests_per_second"], "non_2xx": stats["non_2xx"]}


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.add_argument("--starts", type=int, default=10)
    parser.set_defaults(duration=5)
    args = parser.parse_args()
    env = serve.prepared_env(args)
    from bench.auth import create_credentials

    keys, _ = create_credentials(env)
    lua = serve.rotating_lua("GET", KEY_ROUTE, [(f"Bearer {key}", None) for key in keys])

    results = {name: [] for name in CLASSES}
    for _ in range(args.starts):  # alternate, so both classes see the same drift of a shared machine
        for name in CLASSES:
            results[name].append(one_start(env, lua, args, name))

    print(f"gunicorn {args.workers} workers x 1 thread, wrk {args.connections} keep-alive connections on "
          f"`GET {KEY_ROUTE}`, {args.starts} server starts per class (alternating), {args.duration} s each\n")
    print("| worker class | connections per worker, each start | starts with one worker holding > 2/3 "
          "| req/s min / median / max | non-2xx |")
    print("|---|---|---|---|---|")
    for name in CLASSES:
        runs = results[name]
        lopsided = sum(1 for run in runs if max(run["counts"], default=0) > 2 * args.connections / 3)
        rates = sorted(run["rps"] for run in runs)
        splits = " ".join("/".join(str(c) for c in run["counts"]) for run in runs)
        print(f"| {name} | {splits} | {lopsided} of {len(runs)} | {rates[0]:.0f} / {statistics.median(rates):.0f} "
              f"/ {rates[-1]:.0f} | {sum(run['non_2xx'] for run in runs)} |")


if __name__ == "__main__":
    main()
