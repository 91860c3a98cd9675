"""Mixed load against the production setup: 70% verify, 20% records, 5% sign, 5% reads.

Self-contained: it starts its own redis-server (no persistence, a free port), creates and migrates
its PostgreSQL database, an Enterprise organization (no plan rate limit, no quota), a server-managed
and a client-managed generator, an API key, a 1-megapixel JPEG (signed once for verification) and
client-signed record bodies; then serves with gunicorn and the repo's gunicorn.conf.py (DEBUG off,
workers from the CPU count) and sends N keep-alive connections' worth of requests, no think time: with
wrk and bench/load.lua (default; its client costs little CPU of the cores the server runs on) or locust
and bench/locustfile.py. Each --fronts entry is served and loaded in turn, in one run:

    direct  the client talks to gunicorn itself
    nginx   deploy/nginx.conf in front (a real nginx on loopback, no TLS), one gunicorn pool
    split   the same nginx, POST /v1/verify to a second gunicorn pool (deploy/serve.sh's VERIFY_BIND);
            split:N runs the app's pool (everything else) at nice N above the verification pool

With --ceiling (the team's stack-ceiling run.sh) the bare-stack ceiling runs before the first load and
after each, at the same nice, and each load is printed beside it.

Prints throughput, p50/p99 and non-2xx per route, the client's CPU, the load average, and each
worker's RSS (from /proc) at minute 1 and in the last 30 s (medians of samples every 5 s).

    nice -n 10 .venv/bin/python bench/load.py [--duration 300] [--connections 32] [--fronts nginx,split]
        [--verify reshared] [--ceiling RUN_SH]
"""

import argparse
import contextlib
import csv
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.sign_verify import photo
from tests.nginx_site import loopback_site, start_nginx
from tests.own_services import OwnRedis, free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
# The environment as started: the ceiling's Django must not see ours (prepare() sets DJANGO_SETTINGS_MODULE).
STARTING_ENV = dict(os.environ)
RECORD_BODIES = 300
READ_RECORDS = 20


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=300, help="seconds of load")
    parser.add_argument("--connections", type=int, default=32, help="locust users, one keep-alive connection each")
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_load")
    parser.add_argument("--redis-url", default=None, help="an existing Redis (default: start our own)")
    parser.add_argument("--workers", type=int, default=None, help="default: gunicorn.conf.py's (CPU count)")
    parser.add_argument("--verify", choices=["signed", "reshared"], default="signed",
                        help="what verification uploads: the signed JPEG as signing returned it (default), or a "
                             "re-shared copy (re-encoded at quality 85, no metadata: the mark is read and finds "
                             "the record)")
    parser.add_argument("--client", choices=["wrk", "locust"], default="wrk",
                        help="wrk with bench/load.lua (C, about a twentieth of locust's CPU a request) or locust")
    parser.add_argument("--fronts", default="split",
                        help="comma-separated, each served and loaded in turn: direct, nginx, split, split:N")
    parser.add_argument("--verify-workers", type=int, default=None,
                        help="the verification pool's workers (split); default: as many as the app's")
    parser.add_argument("--ceiling", metavar="RUN_SH", default=None,
                        help="the stack-ceiling bench's run.sh: run before the first load and after each")
    parser.add_argument("--ceiling-items", default="gthread-w2t1:records:baseline:32:1 "
                                                   "gthread-w2t1:me-apikey:baseline:32:1")
    args = parser.parse_args()
    args.fronts = args.fronts.split(",")
    if unknown := {kind for kind in args.fronts if not re.fullmatch(r"direct|nginx|split(:\d+)?", kind)}:
        parser.error(f"unknown --fronts {sorted(unknown)}")
    return args


def prepare(env: dict[str, str], folder: Path) -> dict:
    """Rows and files of the workload (in this process, through the project's services)."""
    serve.django_in_process(env)
    from tests import factories

    org = factories.make_org(plan="enterprise", name=f"load-{time.time_ns()}")
    server_generator = factories.make_generator(org=org, name="load-server", formats=["image"])
    client_generator, seed = factories.make_client_generator(org=org, name="load-client")
    bodies = [json.dumps(factories.record_body(generator=client_generator, seed=seed, content=f"load-{i}".encode(),
                                               watermark_id=f"wm-{i}")) for i in range(RECORD_BODIES)]
    plain = folder / "plain.jpg"
    plain.write_bytes(photo(1.0))
    return {"api_key": factories.make_api_key(org=org), "generator_id": str(server_generator.pk),
            "record_bodies": bodies, "plain_jpeg": str(plain), "org_id": str(org.pk)}


def sign_once(url: str, setup: dict) -> tuple[bytes, str]:
    """POST /v1/sign the plain JPEG; returns the signed file and its record id."""
    boundary = "loadsetup"
    fields = {"generator_id": setup["generator_id"], "model": "load-model"}
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
                    for k, v in fields.items())
    body += (f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="p.jpg"\r\n\r\n'.encode()
             + Path(setup["plain_jpeg"]).read_bytes() + f"\r\n--{boundary}--\r\n".encode())
    request = urllib.request.Request(f"{url}/v1/sign", data=body, method="POST", headers={
        "Authorization": f"Bearer {setup['api_key']}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), response.headers["X-Service-Record-Id"]


def reshared(signed: bytes) -> bytes:
    """The signed JPEG as a platform re-shares it: decoded and saved again at quality 85, metadata gone."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.open(io.BytesIO(signed)).convert("RGB").save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def multipart_body(fields: dict[str, str], content: bytes) -> tuple[bytes, dict[str, str]]:
    """A multipart/form-data body with `fields` and the file `content`; returns (body, headers)."""
    boundary = f"load{time.time_ns():x}"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="photo.jpg"\r\n'
                 f"Content-Type: image/jpeg\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), {
        "Content-Type": f"multipart/form-data; boundary={boundary}"}


def baseline(port: int, setup: dict, runs: int = 15) -> dict[str, float]:
    """Median time of each route alone (one connection, one request at a time): its service time."""
    import http.client

    auth = {"Authorization": f"Bearer {setup['api_key']}"}
    signed, plain = Path(setup["signed_jpeg"]).read_bytes(), Path(setup["plain_jpeg"]).read_bytes()
    sign_fields = {"generator_id": setup["generator_id"], "model": "load-model"}
    routes = {
        "POST /v1/verify": lambda: ("POST", "/v1/verify", *multipart_body({}, signed)),
        "POST /v1/records": lambda: ("POST", "/v1/records", setup["record_bodies"][0].encode(),
                                     {"Content-Type": "application/json"}),
        "POST /v1/sign": lambda: ("POST", "/v1/sign", *multipart_body(sign_fields, plain)),
        "GET /v1/records/:id": lambda: ("GET", f"/v1/records/{setup['record_ids'][0]}", None, {}),
    }
    medians = {}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for name, make in routes.items():
        times = []
        for _ in range(runs):
            method, path, body, headers = make()
            started = time.perf_counter()
            conn.request(method, path, body=body, headers={**auth, **headers})
            response = conn.getresponse()
            response.read()
            times.append(time.perf_counter() - started)
            assert response.status < 300, (name, response.status)
        medians[name] = statistics.median(times) * 1000
    conn.close()
    return medians


def worker_pids(master: int) -> list[int]:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return sorted(int(pid) for pid in children)


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except FileNotFoundError:
        return None
    return None


def worker_pids_of(masters: list[int]) -> list[int]:
    pids = []
    for master in masters:
        with contextlib.suppress(FileNotFoundError):
            pids += worker_pids(master)
    return sorted(pids)


def run_client(url: str, setup_path: Path, args: argparse.Namespace, folder: Path, masters: list[int]) -> tuple:
    """Load for args.duration with wrk or locust; sample each worker's RSS every 5 s.

    Returns (samples, per-route stats, the client's CPU in cores)."""
    if args.client == "wrk":
        output = folder / "requests.txt"
        command = ["wrk", "-t", str(args.connections), "-c", str(args.connections), "-d", f"{args.duration}s",
                   "--timeout", "30s", "-s", str(ROOT / "bench" / "load.lua"), url, "--", str(folder), str(output)]
    else:
        command = [sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
                   "-u", str(args.connections), "-r", str(args.connections), "-t", f"{args.duration}s",
                   "--host", url, "--csv", str(folder / "load"), "--only-summary", "--loglevel", "WARNING",
                   "--stop-timeout", "30"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command, env={**os.environ, "LOAD_SETUP": str(setup_path)}, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    samples = []  # (seconds into the run, {worker pid: RSS MB}) every 5 s
    while process.poll() is None and time.monotonic() - started < args.duration - 1:
        time.sleep(5)
        samples.append((time.monotonic() - started, {pid: rss_mb(pid) for pid in worker_pids_of(masters)}))
    _, errors = process.communicate(timeout=args.duration + 120)
    elapsed = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cores = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) / elapsed
    if process.returncode not in (0, 1):  # 1: locust saw failures; they are reported below
        raise SystemExit(f"{args.client} failed ({process.returncode}):\n{errors}")
    if args.client == "wrk":
        return samples, _wrk_stats(folder / "requests.txt", args.duration), client_cores
    return samples, _read_stats(folder / "load_stats.csv"), client_cores


WRK_ROUTES = {"read": "GET /v1/records/:id", "records": "POST /v1/records", "sign": "POST /v1/sign",
              "verify": "POST /v1/verify"}


def _wrk_stats(path: Path, duration: float) -> list[dict]:
    """bench/load.lua's lines ("route status ms ok") as locust's CSV rows, with an "Aggregated" row."""
    by_route: dict[str, list[tuple[float, bool]]] = {}
    for line in path.read_text().splitlines():
        route, _status, ms, ok = line.split()
        by_route.setdefault(WRK_ROUTES[route], []).append((float(ms), ok == "1"))
    by_route["Aggregated"] = [entry for name in sorted(by_route) for entry in by_route[name]]
    rows = []
    for name in sorted(by_route, key=lambda name: (name == "Aggregated", name)):
        times = sorted(ms for ms, _ in by_route[name])
        rows.append({"Name": name, "Request Count": str(len(times)), "Requests/s": str(len(times) / duration),
                     "50%": f"{_percentile(times, 50):.0f}", "99%": f"{_percentile(times, 99):.0f}",
                     "Max Response Time": str(times[-1]),
                     "Failure Count": str(sum(1 for _, ok in by_route[name] if not ok))})
    return rows


def _percentile(ordered: list[float], percent: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))]


def _read_stats(path: Path) -> list[dict]:
    with path.open() as stats_file:
        return list(csv.DictReader(stats_file))


def write_wrk_setup(folder: Path, setup: dict) -> None:
    """The files bench/load.lua reads (its folder argument)."""
    for name, fields, content in (("verify", {}, setup["signed_jpeg"]),
                                  ("sign", {"generator_id": setup["generator_id"], "model": "load-model"},
                                   setup["plain_jpeg"])):
        body, headers = multipart_body(fields, Path(content).read_bytes())
        (folder / f"{name}.bin").write_bytes(body)
        (folder / f"{name}_type.txt").write_text(headers["Content-Type"])
    (folder / "records.txt").write_text("\n".join(setup["record_bodies"]) + "\n")
    (folder / "ids.txt").write_text("\n".join(setup["record_ids"]) + "\n")
    (folder / "api_key.txt").write_text(setup["api_key"])
    # Lua patterns every verification answer must match: its record, and how it was found.
    expect = setup["verify_expect"]
    patterns = [f'"{key}"%s*:%s*"{_lua_escaped(value)}"' for key, value in expect.items()]
    (folder / "expect.txt").write_text("\n".join(patterns) + "\n")


def _lua_escaped(text: str) -> str:
    return re.sub(r"(\W)", r"%\1", text)


def report(stats: list[dict], samples: list, alone: dict[str, float], describe: str) -> None:
    print(describe)
    print("\n| route | requests | req/s | p50 ms | p99 ms | max ms | failed | alone, median ms |")
    print("|---|---|---|---|---|---|---|---|")
    for row in stats:
        single = f"{alone[row['Name']]:.1f}" if row["Name"] in alone else ""
        print(f"| {row['Name']} | {row['Request Count']} | {float(row['Requests/s']):.1f} | {row['50%']} | "
              f"{row['99%']} | {float(row['Max Response Time']):.0f} | {row['Failure Count']} | {single} |")
    print("\n'failed': non-2xx, and verifications that did not find what they should.")
    print("'alone': the route's median over 15 requests on one connection before the load (its service time).")
    # A worker's RSS swings by tens of MB within a request (a 1 MP image decoded, transformed, freed),
    # so one sample says little: each window is the median of its samples, taken every 5 s.
    end = samples[-1][0]
    first_window, last_window = (lambda t: 30 <= t <= 60), (lambda t: t >= end - 30)
    if end < 120:  # a short trial run: the second fifth against the last fifth
        first_window, last_window = (lambda t: end / 5 <= t <= 2 * end / 5), (lambda t: t >= 0.8 * end)
    print("\n| worker pid | RSS minute 1, MB (median; min-max) | RSS last 30 s, MB (median; min-max) | growth |")
    print("|---|---|---|---|")
    for pid in sorted({pid for _, sample in samples for pid in sample}):
        windows = []
        for window in (first_window, last_window):
            values = [sample[pid] for at, sample in samples if window(at) and sample.get(pid)]
            windows.append(values)
        if not all(windows):
            print(f"| {pid} | worker replaced or missing in a window | | |")
            continue
        (first, last) = (statistics.median(values) for values in windows)
        print(f"| {pid} | {first:.1f}; {min(windows[0]):.1f}-{max(windows[0]):.1f} | "
              f"{last:.1f}; {min(windows[1]):.1f}-{max(windows[1]):.1f} | {last / first:.3f} |")
    print("\nEvery 5 s, MB: " + "; ".join(f"{pid}: " + " ".join(_mb(sample.get(pid)) for _, sample in samples)
                                         for pid in sorted(samples[-1][1])))


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


CEILING_LINE = re.compile(r"^(\S+)\s+(\S+)\s+\S+\s+c=(\d+)\s+rps=\s*([\d.]+) p50=\s*([\d.]+)ms p99=\s*([\d.]+)ms")


def ceiling(args: argparse.Namespace, label: str) -> list[dict]:
    """The stack-ceiling bench's rows (it serves on port 8000: wait for it to be free)."""
    if not args.ceiling:
        return []
    for _ in range(120):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", 8000)) != 0:
                break
        time.sleep(1)
    else:
        print(f"ceiling {label}: port 8000 stayed busy, not run", flush=True)
        return []
    result = subprocess.run(["bash", args.ceiling, *args.ceiling_items.split()], capture_output=True, text=True,
                            env=STARTING_ENV)
    rows = []
    for line in result.stdout.splitlines():
        if match := CEILING_LINE.match(line):
            config, endpoint, connections, rps, p50, p99 = match.groups()
            rows.append({"endpoint": endpoint, "config": config, "connections": int(connections), "rps": float(rps),
                         "p50": float(p50), "p99": float(p99)})
    if not rows:
        print(f"ceiling {label}: no result\n{result.stdout[-2000:]}{result.stderr[-2000:]}", flush=True)
    for row in rows:
        print(f"ceiling {label}: {row['endpoint']} {row['config']} c={row['connections']} {row['rps']:.0f} req/s, "
              f"p50 {row['p50']:.0f} ms, p99 {row['p99']:.0f} ms; load average {os.getloadavg()[0]:.1f}", flush=True)
    return rows


class Front:
    """One way of serving: gunicorn alone, nginx and one pool, or nginx and a pool for POST /v1/verify."""

    def __init__(self, kind: str, env: dict[str, str], args: argparse.Namespace, folder: Path):
        self.kind, _, nice = kind.partition(":")
        self.app_nice = int(nice or 0)
        self.env, self.args, self.folder = env, args, folder
        self.processes: list[subprocess.Popen] = []
        self.masters: list[int] = []

    def _gunicorn(self, port: int, workers: int | None, nice: int = 0) -> None:
        command = ["nice", "-n", str(nice)] * bool(nice) + [
            sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py",
            "--bind", f"127.0.0.1:{port}", "--no-control-socket", "--log-level", "warning"]
        if workers:
            command += ["--workers", str(workers)]
        process = subprocess.Popen(command, cwd=ROOT, env=self.env)
        self.processes.append(process)
        self.masters.append(process.pid)
        wait_for_port(port)

    def __enter__(self) -> int:
        app_port = free_port()
        self._gunicorn(app_port, self.args.workers, self.app_nice)
        if self.kind == "direct":
            return app_port
        verify_port = app_port
        if self.kind == "split":
            verify_port = free_port()
            self._gunicorn(verify_port, self.args.verify_workers or self.args.workers)
        port = free_port()
        nginx_folder = self.folder / "nginx"
        nginx_folder.mkdir()
        site = loopback_site(port=port, app_port=app_port, verify_port=verify_port)
        self.processes.append(start_nginx(nginx_folder, site, port))
        return port

    def __exit__(self, *exc) -> None:
        for process in reversed(self.processes):
            process.terminate()
            process.wait(timeout=60)

    def describe(self, workers: list[int]) -> str:
        pools = {"direct": "client to gunicorn", "nginx": "nginx (deploy/nginx.conf), one gunicorn pool",
                 "split": "nginx (deploy/nginx.conf), POST /v1/verify to its own gunicorn pool"}[self.kind]
        nicer = f", the app's pool at nice +{self.app_nice}" if self.app_nice else ""
        return f"{self.kind}: {pools}{nicer}; workers per pool {workers}"


def main() -> None:
    args = arguments()
    own_redis = None if args.redis_url else OwnRedis()
    folder = Path(tempfile.mkdtemp(prefix="load-"))
    try:
        if own_redis:
            own_redis.start()
        # Every request comes from 127.0.0.1: the per-IP verification limit would throttle the load.
        env = serve.prepared_database(args.database_url, args.redis_url or own_redis.url(),
                                      VERIFY_RATE_PER_MINUTE="100000000")
        setup = prepare(env, folder)
        setup_path = folder / "setup.json"
        ceilings = [ceiling(args, "before")]
        for kind in args.fronts:
            run_folder = folder / f"{len(ceilings)}-{kind.replace(':', '-')}"
            run_folder.mkdir()
            front = Front(kind, env, args, run_folder)
            with front as port:
                url = f"http://127.0.0.1:{port}"
                if "signed_jpeg" not in setup:
                    signed, record_id = sign_once(url, setup)
                    (folder / "signed.jpg").write_bytes(signed if args.verify == "signed" else reshared(signed))
                    setup["signed_jpeg"] = str(folder / "signed.jpg")
                    setup["signed_size"] = len(signed)
                    setup["verify_expect"] = ({"confidence": "high", "record_id": record_id}
                                              if args.verify == "signed"
                                              else {"token_source": "watermark", "record_id": record_id})
                    setup["record_ids"] = [record_id] + [sign_once(url, setup)[1] for _ in range(READ_RECORDS - 1)]
                    setup_path.write_text(json.dumps(setup))
                write_wrk_setup(run_folder, setup)
                alone = baseline(port, setup)
                load_before = os.getloadavg()
                samples, stats, client_cores = run_client(url, setup_path, args, run_folder, front.masters)
                load_after = os.getloadavg()
                workers = [len(worker_pids(master)) for master in front.masters]
            report(stats, samples, alone,
                   f"{front.describe(workers)}; gunicorn -c gunicorn.conf.py, PostgreSQL, Redis, DEBUG off; "
                   f"{args.client} {args.connections} connections, no think time, {args.duration} s; 1 MP JPEG "
                   f"({Path(setup['plain_jpeg']).stat().st_size // 1024} KB, signed {setup['signed_size'] // 1024} "
                   f"KB); verification of the {'signed file' if args.verify == 'signed' else 're-shared copy'} "
                   f"({Path(setup['signed_jpeg']).stat().st_size // 1024} KB)")
            print(f"\nClient ({args.client}) CPU: {client_cores:.2f} cores. Load average (1 min) at start "
                  f"{load_before[0]:.1f}, at end {load_after[0]:.1f}.")
            ceilings.append(ceiling(args, f"after {kind}"))
            summary(kind, stats, ceilings[-2] + ceilings[-1])
    finally:
        if own_redis:
            own_redis.close()


def summary(kind: str, stats: list[dict], around: list[dict]) -> None:
    """One line: verify p99 and total throughput beside the ceiling measured before and after this load."""
    rows = {row["Name"]: row for row in stats}
    verify, total = rows["POST /v1/verify"], rows["Aggregated"]
    line = (f"SUMMARY {kind}: verify p99 {verify['99%']} ms, p50 {verify['50%']} ms; "
            f"all routes {float(total['Requests/s']):.1f} req/s, p99 {total['99%']} ms")
    records = [row for row in around if row["endpoint"] == "records"]
    if records:
        rps = statistics.mean(row["rps"] for row in records)
        line += (f" | ceiling records (same run, before and after) {rps:.0f} req/s, p99 "
                 f"{statistics.mean(row['p99'] for row in records):.0f} ms; ours / ceiling req/s "
                 f"{float(total['Requests/s']) / rps:.2f}")
    print(line + "\n", flush=True)


if __name__ == "__main__":
    main()
