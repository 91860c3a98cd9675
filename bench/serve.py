"""Shared benchmark plumbing: a production-like server (gunicorn, PostgreSQL, Redis) and wrk against it.

Nothing here runs in the test suite. The server runs with DEBUG off, real secrets and the
benchmark's own PostgreSQL database (created if missing), so it never touches development data.
"""

import argparse
import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"


def server_env(database_url: str, redis_url: str | None) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database_url, "DEBUG": "false",
           "SECRET_KEY": "bench-secret-key-not-for-production-0123456789abcdef",
           "KEY_ENCRYPTION_KEY": "bench-key-encryption-key-0123456789abcdef",
           "TOKEN_SIGNING_KEY": "bench-token-signing-key-0123456789abcdef",
           "LOG_SIGNING_KEY": "bench-log-signing-key-0123456789abcdef",
           "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING"}
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def ensure_database(database_url: str) -> None:
    """Create the benchmark database if it does not exist (connecting to the server's `postgres` db)."""
    admin_url = database_url.rsplit("/", 1)[0] + "/postgres"
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def redis_reachable(url: str) -> bool:
    try:
        import redis

        redis.Redis.from_url(url, socket_connect_timeout=0.5).ping()
        return True
    except Exception:
        return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --worker-class names: production's (gunicorn.conf.py: whole), the balanced gthread it extends, and
# gunicorn's own two.
WORKER_CLASSES = {"whole": "core.gunicorn_worker.WholeRequestWorker",
                  "balanced": "core.gunicorn_worker.BalancedThreadWorker", "gthread": "gthread", "sync": "sync"}


@contextlib.contextmanager
def gunicorn(env: dict[str, str], *, workers: int = 2, worker_class: str = "balanced", threads: int = 1,
             on_start=None):
    """Serve config.wsgi on a free loopback port; yields the base URL; stops the server afterwards.

    `on_start(process, port)`, if given, is called once the port answers (to find the workers, say).
    """
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
               "--workers", str(workers), "--worker-class", WORKER_CLASSES[worker_class],
               "--threads", str(threads), "--log-level", "warning", "--keep-alive", "5"]
    process = subprocess.Popen(command, cwd=ROOT, env=env)
    try:
        _wait_for_port(port)
        if on_start:
            on_start(process, port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


def _wait_for_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not start on port {port}")


def wrk(url: str, *, lua: str, duration: int, connections: int, threads: int = 1) -> dict:
    """Run wrk with a Lua request script; returns requests/s, latency percentiles and error counts."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(lua)
    try:
        result = subprocess.run(["wrk", "-t", str(threads), "-c", str(connections), "-d", f"{duration}s",
                                 "--latency", "-s", script.name, url], capture_output=True, text=True, check=True)
    finally:
        os.unlink(script.name)
    return parse_wrk(result.stdout)


def _latency_ms(text: str) -> float:
    value, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def parse_wrk(output: str) -> dict:
    stats = {"requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
             "non_2xx": 0, "socket_errors": 0}
    for label in ("50", "99"):
        match = re.search(rf"^\s+{label}%\s+(\S+)", output, re.MULTILINE)
        stats[f"p{label}_ms"] = _latency_ms(match.group(1)) if match else None
    if match := re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output):
        stats["non_2xx"] = int(match.group(1))
    if match := re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output):
        stats["socket_errors"] = sum(int(n) for n in match.groups())
    stats["requests"] = int(re.search(r"(\d+) requests in", output).group(1))
    return stats


def _lua_string(text: str) -> str:
    return "[==[" + text + "]==]"


def rotating_lua(method: str, path: str, requests: list[tuple[str, str | None]]) -> str:
    """A wrk script sending `method path`, cycling through (Authorization value, JSON body or None) pairs."""
    entries = ",\n".join(f"{{{_lua_string(auth)}, {_lua_string(body) if body else 'nil'}}}"
                         for auth, body in requests)
    return f"""local entries = {{
{entries}
}}
local counter = 0
request = function()
  counter = counter + 1
  local entry = entries[(counter % #entries) + 1]
  local headers = {{["Authorization"] = entry[1]}}
  if entry[2] then headers["Content-Type"] = "application/json" end
  return wrk.format("{method}", "{path}", headers, entry[2])
end
"""


def server_arguments(doc: str) -> argparse.ArgumentParser:
    """The command-line options every load benchmark shares."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=int, default=10, help="seconds of load per measurement")
    # Enough connections that keep-alive ones spread over both workers (each sticks to the one that accepted it).
    parser.add_argument("--connections", type=int, default=32, help="wrk keep-alive connections")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--worker-class", default="balanced", choices=sorted(WORKER_CLASSES),
                        help="balanced: production's gthread worker that takes its share of connections")
    parser.add_argument("--threads", type=int, default=1, help="threads per gthread worker")
    parser.add_argument("--repeats", type=int, default=3, help="measurements per row; the median is shown")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    return parser


def prepared_database(database_url: str, redis_url: str | None = None, **settings: str) -> dict[str, str]:
    """The server environment (with `settings` as further variables), its database created and migrated."""
    env = {**server_env(database_url, redis_url), **settings}
    ensure_database(database_url)
    manage(env, "migrate", "--noinput")
    manage(env, "createcachetable")
    return env


def prepared_env(args: argparse.Namespace) -> dict[str, str]:
    """The server environment for `args`, its database created and migrated."""
    return prepared_database(args.database_url, args.redis_url if redis_reachable(args.redis_url) else None)


def django_in_process(env: dict[str, str]) -> None:
    """Set Django up in this process on `env`, for a benchmark that calls the code or the test client."""
    os.environ.update(env)
    import django

    django.setup()


def describe(args: argparse.Namespace, env: dict[str, str]) -> str:
    cache = "Redis" if env.get("REDIS_URL") else "database cache (Redis unreachable)"
    return (f"gunicorn {args.workers} x {args.worker_class} workers ({args.threads} thread each), PostgreSQL, "
            f"{cache}; wrk {args.connections} keep-alive connections, median of {args.repeats} server starts, "
            f"{args.duration} s each")


def scale_organizations(env: dict[str, str], prefix: str, count: int) -> list:
    """Set Django up in this process and make `count` fresh Scale-plan organizations, each with an owner.

    Returns (organization, owner) pairs. Names carry a run id: earlier runs' rows stay (a throwaway database).
    """
    django_in_process(env)
    from accounts.models import Organization
    from tests.factories import make_user

    run = uuid.uuid4().hex[:8]
    pairs = []
    for index in range(count):
        org = Organization.objects.create(name=f"{prefix}-{run}-{index}", plan="scale")
        pairs.append((org, make_user(org=org, email=f"{prefix}-{run}-{index}@example.com")))
    return pairs


def measure(env: dict[str, str], lua: str, args: argparse.Namespace) -> dict:
    """Run wrk `args.repeats` times, each against a freshly started server after a warm-up; the median run.

    Fresh servers matter: with keep-alive a connection stays with the worker that accepted it, and
    some server starts settle with most connections on one worker, measuring half the machine.
    """
    runs = []
    for _ in range(args.repeats):
        with gunicorn(env, workers=args.workers, worker_class=args.worker_class, threads=args.threads) as url:
            wrk(url, lua=lua, duration=2, connections=args.connections)
            runs.append(wrk(url, lua=lua, duration=args.duration, connections=args.connections))
    runs.sort(key=lambda stats: stats["requests_per_second"])
    median = dict(runs[len(runs) // 2])
    median["all_runs"] = "/".join(f"{stats['requests_per_second']:.0f}" for stats in runs)
    return median
