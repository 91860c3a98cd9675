"""Normal requests beside slow clients, and the normal path's cost of reading whole requests first.

1. Slow clients. For gunicorn with production's worker (whole requests only, core/gunicorn_worker.py),
   gunicorn with the worker before it (balanced gthread: a thread per connection from its first byte)
   and the development server (`make run`: deploy/run_dev.py), time `--requests` normal requests (each
   on a new connection), first alone, then beside `--slow` clients dripping a head or a body one byte
   a second. A request not answered within `--give-up` seconds counts as unanswered.
2. The normal path. wrk with 32 keep-alive connections on an authenticated GET and on a POST with a
   2 KB JSON body, for both gunicorn workers, alternating, median of `--repeats` server starts.

    nice -n 10 .venv/bin/python bench/slow_clients.py [--slow 8] [--requests 50] [--repeats 3] [--duration 10]
"""

import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.auth import KEY_ROUTE
from tests.proc_sockets import child_pids
from tests.waiting import cpu_seconds

HEAD_DRIP = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Drip: "
BODY_DRIP = (b"POST /v1/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
             b"Content-Length: 1000\r\n\r\n{")
NORMAL = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


class Drippers:
    """`count` connections, half dripping a head and half a body, one byte a second each."""

    def __init__(self, port: int, count: int):
        self.socks = []
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(HEAD_DRIP if index % 2 == 0 else BODY_DRIP)
            self.socks.append(sock)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drip, daemon=True)
        self.thread.start()

    def _drip(self) -> None:
        while not self.stop.wait(1.0):
            for sock in self.socks:
                with contextlib.suppress(OSError):
                    sock.send(b"a")

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for sock in self.socks:
            sock.close()


def normal_requests(port: int, count: int, give_up: float) -> dict:
    """Seconds each of `count` normal requests took; stops after three go unanswered."""
    took, unanswered = [], 0
    for _ in range(count):
        started = time.monotonic()
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=give_up) as sock:
                sock.sendall(NORMAL)
                while sock.recv(65536):
                    pass
            took.append(time.monotonic() - started)
        except OSError:
            unanswered += 1
            if unanswered == 3:
                break
    took.sort()
    return {"answered": len(took), "unanswered": unanswered,
            "p50_ms": 1000 * took[len(took) // 2] if took else None,
            "max_ms": 1000 * took[-1] if took else None}


def both_workers_up(port: int) -> None:
    """Wait until both workers have answered: on a loaded machine loading Django takes seconds."""
    def ask(_):
        with socket.create_connection(("127.0.0.1", port), timeout=300) as sock:
            sock.sendall(NORMAL)
            while sock.recv(65536):
                pass

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(ask, range(8)))


@contextlib.contextmanager
def dev_server(env: dict[str, str]):
    port = serve.free_port()
    process = subprocess.Popen([sys.executable, "deploy/run_dev.py", f"127.0.0.1:{port}"], cwd=serve.ROOT,
                               env={**env, "DEBUG": "true"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        serve._wait_for_port(port)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)


@contextlib.contextmanager
def gunicorn_port(env: dict[str, str], worker_class: str):
    with contextlib.suppress(subprocess.TimeoutExpired), serve.gunicorn(
            env, workers=2, worker_class=worker_class) as url:
        both_workers_up(int(url.rsplit(":", 1)[1]))
        yield int(url.rsplit(":", 1)[1])


def slow_rows(env: dict[str, str], args) -> list[tuple[str, dict, dict]]:
    servers = [("gunicorn, whole requests (production)", lambda: gunicorn_port(env, "whole")),
               ("gunicorn, balanced gthread (before)", lambda: gunicorn_port(env, "balanced")),
               ("development server (make run)", lambda: dev_server(env))]
    rows = []
    for name, start in servers:
        with start() as port:
            normal_requests(port, 5, args.give_up)  # warm up
            alone = normal_requests(port, args.requests, args.give_up)
            drippers = Drippers(port, args.slow)
            try:
                time.sleep(2)
                beside = normal_requests(port, args.requests, args.give_up)
            finally:
                drippers.close()
        rows.append((name, alone, beside))
    return rows


def wrk_rows(env: dict[str, str], args) -> dict:
    from bench.auth import create_credentials

    keys, _ = create_credentials(env)
    scripts = {"GET " + KEY_ROUTE: serve.rotating_lua("GET", KEY_ROUTE, [(f"Bearer {key}", None) for key in keys]),
               "POST 2 KB JSON (404)": serve.rotating_lua(
                   "POST", "/v1/no-such-route", [(f"Bearer {key}", '{"pad": "' + "x" * 2048 + '"}') for key in keys])}
    results = {(route, cls): [] for route in scripts for cls in ("whole", "balanced")}
    for _ in range(args.repeats):
        for route, lua in scripts.items():
            for worker_class in ("whole", "balanced"):
                found: dict = {}

                def note(process, port, found=found):
                    found.update(master=process.pid)

                with contextlib.suppress(subprocess.TimeoutExpired), serve.gunicorn(
                        env, workers=2, worker_class=worker_class, on_start=note) as url:
                    both_workers_up(int(url.rsplit(":", 1)[1]))
                    serve.wrk(url, lua=lua, duration=2, connections=32)
                    workers = child_pids(found["master"])
                    before = sum(cpu_seconds(pid) or 0 for pid in workers)
                    stats = serve.wrk(url, lua=lua, duration=args.duration, connections=32)
                    # The workers' CPU per request: what the machine's load does not stretch.
                    spent = sum(cpu_seconds(pid) or 0 for pid in workers) - before
                    stats["cpu_us"] = 1e6 * spent / stats["requests"] if stats["requests"] else float("nan")
                    results[(route, worker_class)].append(stats)
    return results


def _ms(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.add_argument("--slow", type=int, default=8, help="slow clients")
    parser.add_argument("--requests", type=int, default=50, help="normal requests per measurement")
    parser.add_argument("--give-up", type=float, default=10.0, help="seconds before a request counts unanswered")
    parser.add_argument("--skip-wrk", action="store_true")
    parser.add_argument("--skip-slow", action="store_true")
    args = parser.parse_args()
    env = serve.prepared_env(args)
    print(f"load average at start: {os.getloadavg()[0]:.2f}")

    if not args.skip_slow:
        print_slow_rows(env, args)
    if not args.skip_wrk:
        print_wrk_rows(env, args)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def print_slow_rows(env, args) -> None:
    print(f"\n{args.requests} normal requests (GET /healthz, a new connection each), alone and beside "
          f"{args.slow} slow clients (half dripping a head, half a body, a byte a second):")
    print(f"{'server':42} {'alone p50/max ms':>20} {'beside p50/max ms':>20} {'unanswered':>11}")
    for name, alone, beside in slow_rows(env, args):
        print(f"{name:42} {_ms(alone['p50_ms']) + ' / ' + _ms(alone['max_ms']):>20} "
              f"{_ms(beside['p50_ms']) + ' / ' + _ms(beside['max_ms']):>20} "
              f"{beside['unanswered']:>4} of {beside['answered'] + beside['unanswered']}")


def print_wrk_rows(env, args) -> None:
    print(f"\nNormal path: wrk 32 keep-alive connections, {args.duration} s, median of {args.repeats} server starts")
    print(f"{'route':28} {'worker':9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'worker CPU us/req':>18}  "
          "runs req/s; runs CPU us/req")
    for (route, worker_class), runs in wrk_rows(env, args).items():
        rps = [run["requests_per_second"] for run in runs]
        cpu = [run["cpu_us"] for run in runs]
        median = sorted(runs, key=lambda run: run["requests_per_second"])[len(runs) // 2]
        print(f"{route:28} {worker_class:9} {statistics.median(rps):8.0f} {_ms(median['p50_ms']):>8} "
              f"{_ms(median['p99_ms']):>8} {statistics.median(cpu):18.0f}  {'/'.join(f'{r:.0f}' for r in rps)}; "
              f"{'/'.join(f'{c:.0f}' for c in cpu)}")


if __name__ == "__main__":
    main()
