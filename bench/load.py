"""Mixed load against the production setup: 70% verify, 20% records, 5% sign, 5% reads, with locust.

Self-contained: it starts its own redis-server (no persistence, a free port), creates and migrates
its PostgreSQL database, an Enterprise organization (no plan rate limit, no quota), a server-managed
and a client-managed generator, an API key, a 1-megapixel JPEG (signed once for verification) and
client-signed record bodies; then serves with gunicorn and the repo's gunicorn.conf.py (DEBUG off,
workers from the CPU count) and runs bench/locustfile.py with N keep-alive connections, no think time.

Prints throughput, p50/p99 and non-2xx per route, and each worker's RSS (from /proc) at minute 1
and in the last 30 s (medians of samples every 5 s), with the growth ratio.

    nice -n 10 .venv/bin/python bench/load.py [--duration 300] [--connections 32]
"""

import argparse
import csv
import json
import os
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
from tests.own_services import OwnRedis, free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
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
    return parser.parse_args()


def prepare(env: dict[str, str], folder: Path) -> dict:
    """Rows and files of the workload (in this process, through the project's services)."""
    os.environ.update(env)
    import django

    django.setup()
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


def run_locust(url: str, setup_path: Path, args: argparse.Namespace, folder: Path, master: int) -> tuple:
    """Run locust for args.duration; sample each worker's RSS at minute 1 (or a fifth of a short run) and the end."""
    env = {**os.environ, "LOAD_SETUP": str(setup_path)}
    command = [sys.executable, "-m", "locust", "-f", str(ROOT / "bench" / "locustfile.py"), "--headless",
               "-u", str(args.connections), "-r", str(args.connections), "-t", f"{args.duration}s",
               "--host", url, "--csv", str(folder / "load"), "--only-summary", "--loglevel", "WARNING",
               "--stop-timeout", "30"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    started = time.monotonic()
    samples = []  # (seconds into the run, {worker pid: RSS MB}) every 5 s
    while process.poll() is None and time.monotonic() - started < args.duration - 1:
        time.sleep(5)
        samples.append((time.monotonic() - started, {pid: rss_mb(pid) for pid in worker_pids(master)}))
    _, errors = process.communicate(timeout=args.duration + 120)
    if process.returncode not in (0, 1):  # 1: locust saw failures; they are reported below
        raise SystemExit(f"locust failed ({process.returncode}):\n{errors}")
    return samples, _read_stats(folder / "load_stats.csv")


def _read_stats(path: Path) -> list[dict]:
    with path.open() as stats_file:
        return list(csv.DictReader(stats_file))


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


def main() -> None:
    args = arguments()
    own_redis = None if args.redis_url else OwnRedis()
    folder = Path(tempfile.mkdtemp(prefix="load-"))
    try:
        if own_redis:
            own_redis.start()
        env = serve.server_env(args.database_url, args.redis_url or own_redis.url())
        # Every request comes from 127.0.0.1: the per-IP verification limit would throttle the load.
        env["VERIFY_RATE_PER_MINUTE"] = "100000000"
        serve.ensure_database(args.database_url)
        serve.manage(env, "migrate", "--noinput")
        setup = prepare(env, folder)
        port = free_port()
        command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py",
                   "--bind", f"127.0.0.1:{port}", "--no-control-socket", "--log-level", "warning"]
        if args.workers:
            command += ["--workers", str(args.workers)]
        server = subprocess.Popen(command, cwd=ROOT, env=env)
        try:
            wait_for_port(port)
            url = f"http://127.0.0.1:{port}"
            signed, record_id = sign_once(url, setup)
            (folder / "signed.jpg").write_bytes(signed if args.verify == "signed" else reshared(signed))
            setup["signed_jpeg"] = str(folder / "signed.jpg")
            setup["verify_expect"] = ({"confidence": "high", "record_id": record_id} if args.verify == "signed"
                                      else {"token_source": "watermark", "record_id": record_id})
            setup["record_ids"] = [record_id] + [sign_once(url, setup)[1] for _ in range(READ_RECORDS - 1)]
            setup_path = folder / "setup.json"
            setup_path.write_text(json.dumps(setup))
            alone = baseline(port, setup)
            samples, stats = run_locust(url, setup_path, args, folder, server.pid)
        finally:
            server.terminate()
            server.wait(timeout=60)
        workers = len(samples[0][1])
        report(stats, samples, alone,
               f"gunicorn -c gunicorn.conf.py ({workers} workers), PostgreSQL, Redis, DEBUG off; locust "
               f"{args.connections} connections, no think time, {args.duration} s; 1 MP JPEG "
               f"({Path(setup['plain_jpeg']).stat().st_size // 1024} KB, signed {len(signed) // 1024} KB); "
               f"verification of the {'signed file' if args.verify == 'signed' else 're-shared copy'} "
               f"({Path(setup['signed_jpeg']).stat().st_size // 1024} KB)")
        print(f"\nFailures, if any: {folder / 'load_failures.csv'}")
    finally:
        if own_redis:
            own_redis.close()


if __name__ == "__main__":
    main()
