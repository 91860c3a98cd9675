"""Hostile input for every family against a live gunicorn worker: status, time and the worker's memory.

One sync worker (production settings, a throwaway SQLite database) serves every case in turn; the
client measures each request's time, and the worker's resident memory is read from /proc before and
after it (VmRSS), with the peak of the request itself (VmHWM, restarted through clear_refs). After each
case the same worker must answer a plain request (no crash, no restart).

Cases: every file of tests.hostile_media.FAMILY_CASES sent to POST /v1/sign and POST /v1/verify; JSON
nested 10,000 deep and a 1 MB string in each field of every JSON operation of /v1/openapi.json;
multipart uploads of 1,000 parts.

    .venv/bin/python bench/hostile.py --families      (prints the table)
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from tests.proc_sockets import free_port
from tests.waiting import process_tree, wait_until

ROOT = Path(__file__).resolve().parent.parent
MB = 1024 * 1024
ONE_MB_STRING = "a" * 1_000_000  # a 1 MB string: with the rest of a body it still fits the 1 MiB JSON limit
DEEP_JSON = b"[" * 10_000 + b"]" * 10_000
SAMPLE_ID = "00000000-0000-4000-8000-000000000001"


@dataclass
class Row:
    case: str
    route: str
    bytes: int
    status: int
    code: str | None
    seconds: float
    cpu_seconds: float  # the worker's user and system CPU over the request: what a busy machine does not stretch
    rss_growth_mb: float  # VmRSS after the request minus before
    peak_growth_mb: float  # the request's VmHWM minus VmRSS before it
    envelope: bool  # a 4xx/5xx body is {"error", "message"}
    next_ok: bool  # the same worker then answered GET /v1/billing/plans with 200


class LiveServer:
    """gunicorn (one sync worker) on a migrated SQLite file, with an enterprise organization's credentials."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL")}
        self.env.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="false", ALLOWED_HOSTS="127.0.0.1",
                        SECRET_KEY="hostile-live-test-secret-key-0123456789-abcdefghijklmnop",
                        KEY_ENCRYPTION_KEY="hostile-live-kek", TOKEN_SIGNING_KEY="hostile-live-tsk",
                        LOG_SIGNING_KEY="hostile-live-lsk", DATABASE_URL=f"sqlite:///{workdir / 'db.sqlite3'}",
                        VERIFY_RATE_PER_MINUTE="1000000", AUTH_RATE_PER_MINUTE="1000000", LOG_LEVEL="ERROR",
                        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend", WEBHOOK_TIMEOUT_SECONDS="1")
        self.process: subprocess.Popen | None = None
        self.base = ""
        self.credentials: dict = {}
        self.http = requests.Session()

    def start(self) -> LiveServer:
        setup = subprocess.run([sys.executable, "-m", "tests.config.schema_run_setup"], cwd=ROOT, env=self.env,
                               capture_output=True, text=True, timeout=180, check=True)
        self.credentials = json.loads(setup.stdout.strip().splitlines()[-1])
        port = free_port()
        self.log = self.workdir / "gunicorn.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application", "-c", "gunicorn.conf.py",
                 "--bind", f"127.0.0.1:{port}", "--workers", "1", "--worker-class", "sync", "--timeout", "60",
                 "--graceful-timeout", "2", "--no-control-socket"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.base = f"http://127.0.0.1:{port}"
        # The probe, not a log line: LOG_LEVEL=ERROR keeps "Worker ready" out of the log. Bounded by the CPU
        # gunicorn spends starting, not by the clock (a busy machine only makes the start longer).
        wait_until(self._healthy, pids=lambda: process_tree(self.process.pid), cpu_budget=60, what="gunicorn start",
                   alive=lambda: self.process.poll() is None,
                   details=lambda: self.log.read_text(errors="replace")[-3000:])
        self.generator_id = self._generator_id()
        return self

    def _healthy(self) -> bool:
        try:
            return self.http.get(f"{self.base}/healthz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None

    # --- the worker -------------------------------------------------------------------------------

    def worker_pid(self) -> int:
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        if len(children) != 1:
            raise RuntimeError(f"expected one gunicorn worker, found {children}")
        return int(children[0])

    def _status_kb(self, pid: int, field: str) -> int:
        status = Path(f"/proc/{pid}/status").read_text()
        return int(next(line for line in status.splitlines() if line.startswith(field)).split()[1])

    # --- requests ---------------------------------------------------------------------------------

    def headers(self, credential: str = "key") -> dict:
        return {"Authorization": f"Bearer {self.credentials[credential]}"}

    def _generator_id(self) -> str:
        listed = self.http.get(f"{self.base}/v1/generators", headers=self.headers(), timeout=30).json()
        items = listed["generators"] if isinstance(listed, dict) else listed
        return next(item["generator_id"] for item in items if item["mode"] == "server")

    def measure(self, case: str, route: str, size: int, send) -> Row:
        """Run `send()` (returns a requests.Response) and measure it on the worker."""
        pid = self.worker_pid()
        before = self._status_kb(pid, "VmRSS:")
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # restart VmHWM here
        cpu_before = _cpu_seconds(pid)
        started = time.perf_counter()
        response = send()
        seconds = time.perf_counter() - started
        cpu = _cpu_seconds(pid) - cpu_before
        after, peak = self._status_kb(pid, "VmRSS:"), self._status_kb(pid, "VmHWM:")
        body = _json_or_none(response)
        code = None
        if isinstance(body, dict):
            code = body.get("error") or body.get("reason")
        elif isinstance(body, list) and body and isinstance(body[0], dict):
            code = body[0].get("reason")
        envelope = response.status_code < 400 or (isinstance(body, dict) and isinstance(body.get("error"), str)
                                                   and isinstance(body.get("message"), str))
        following = self.http.get(f"{self.base}/v1/billing/plans", timeout=30)
        next_ok = following.status_code == 200 and self.worker_pid() == pid
        return Row(case, route, size, response.status_code, code, seconds, cpu, (after - before) / 1024,
                   (peak - before) / 1024, envelope, next_ok)

    def upload(self, case: str, route: str, fmt: str, content: bytes) -> Row:
        from tests.hostile_media import FILE_NAMES

        name, content_type = FILE_NAMES[fmt]
        fields, headers = {}, {}
        if route == "sign":
            fields = {"model": "hostile", "generator_id": self.generator_id}
            headers = self.headers()
        return self.measure(case, route, len(content), lambda: self.http.post(
            f"{self.base}/v1/{route}", data=fields, files={"content": (name, content, content_type)},
            headers=headers, timeout=60))

    def post_raw(self, case: str, method: str, path: str, body: bytes, content_type: str,
                 credential: str = "token") -> Row:
        return self.measure(case, f"{method.upper()} {path}", len(body), lambda: self.http.request(
            method, f"{self.base}{path}", data=body, headers={**self.headers(credential), "Content-Type": content_type},
            timeout=60))

    def warm_up(self) -> None:
        """Sign and verify one valid file of every format: every codec and library is imported before measuring."""
        from tests.hostile_media import FORMATS, sample

        for fmt in FORMATS:
            for route in ("sign", "verify"):
                row = self.upload(f"{fmt}-valid", route, fmt, sample(fmt))
                if row.status not in (200, 201):
                    raise RuntimeError(f"warm-up {fmt} {route}: {row}")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of `pid` (every thread, and the children it has waited for), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _json_or_none(response):
    try:
        return response.json()
    except ValueError:
        return None



# --- the cases ---------------------------------------------------------------------------------------


def file_rows(server: LiveServer, names: list[str] | None = None) -> list[Row]:
    from tests.hostile_media import FAMILY_CASES

    rows = []
    for name, (fmt, build) in FAMILY_CASES.items():
        if names and name not in names:
            continue
        content = build()
        for route in ("sign", "verify"):
            rows.append(server.upload(name, route, fmt, content))
    return rows


def json_operations(schema: dict) -> list[tuple[str, str, dict]]:
    """(method, path with sample arguments, resolved request schema) of every operation taking a JSON body."""
    found = []
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            content = operation.get("requestBody", {}).get("content", {})
            if "application/json" not in content:
                continue
            concrete = path
            for parameter in operation.get("parameters", []):
                if parameter.get("in") == "path":
                    concrete = concrete.replace("{" + parameter["name"] + "}", SAMPLE_ID)
            found.append((method, concrete, content["application/json"].get("schema", {})))
    return found


def _ref(schema: dict, node: dict) -> dict:
    seen = 0
    while isinstance(node, dict) and "$ref" in node and seen < 10:
        target = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node, seen = target, seen + 1
    return node


def string_fields(schema: dict, body_schema: dict) -> list[tuple[str, ...]]:
    """Paths of the fields of a request body, one level into arrays of objects: ("records", 0, "model")."""
    body_schema = _ref(schema, body_schema)
    paths: list[tuple] = []
    for name, prop in (body_schema.get("properties") or {}).items():
        prop = _ref(schema, prop)
        items = _ref(schema, prop.get("items", {})) if prop.get("type") == "array" else {}
        if items.get("properties"):
            paths += [(name, 0, inner) for inner in items["properties"]]
        else:
            paths.append((name,))
    return paths


def body_with(schema: dict, body_schema: dict, target: tuple, value) -> dict:
    """A body whose every field is a short string, and the field at `target` is `value`."""
    body: dict = {}
    for path in string_fields(schema, body_schema):
        filler = value if path == target else "x"
        if len(path) == 1:
            body[path[0]] = filler
        else:
            body.setdefault(path[0], [{}])[0][path[2]] = filler
    return body


def json_rows(server: LiveServer, schema: dict) -> list[Row]:
    rows = []
    for method, path, body_schema in json_operations(schema):
        rows.append(server.post_raw("json-nested-10000-deep", method, path, DEEP_JSON, "application/json"))
        for target in string_fields(schema, body_schema):
            body = json.dumps(body_with(schema, body_schema, target, ONE_MB_STRING)).encode()
            label = ".".join(str(part) if part != 0 else "[0]" for part in target).replace(".[0].", "[0].")
            rows.append(server.post_raw(f"json-1MB-string-in-{label}", method, path, body, "application/json"))
    return rows


def multipart_rows(server: LiveServer) -> list[Row]:
    from tests.hostile_media import sample

    photo = sample("jpeg")
    rows = []
    for route in ("sign", "verify"):
        url = f"{server.base}/v1/{route}"
        fields = {"model": "hostile", "generator_id": server.generator_id} if route == "sign" else {}
        headers = server.headers() if route == "sign" else {}
        many_files = [("content", (f"photo{n}.jpg", photo, "image/jpeg")) for n in range(1000)]
        many_fields = {**fields, **{f"field{n}": "x" for n in range(1000)}}
        one_file = {"content": ("p.jpg", photo, "image/jpeg")}
        rows.append(server.measure("multipart-1000-file-parts", route, len(photo) * 1000, functools.partial(
            server.http.post, url, data=fields, files=many_files, headers=headers, timeout=60)))
        rows.append(server.measure("multipart-1000-fields-and-a-file", route, len(photo) + 12_000, functools.partial(
            server.http.post, url, data=many_fields, files=one_file, headers=headers, timeout=60)))
    return rows


def all_rows(workdir: Path) -> list[Row]:
    server = LiveServer(workdir).start()
    try:
        server.warm_up()
        schema = server.http.get(f"{server.base}/v1/openapi.json", timeout=30).json()
        return file_rows(server) + json_rows(server, schema) + multipart_rows(server)
    finally:
        server.stop()


def print_rows(rows: list[Row]) -> None:
    print(f"{'case':52} {'route':34} {'bytes':>10} {'status':>6} {'code':>22} {'seconds':>8} {'CPU s':>6} "
          f"{'RSS +MB':>8} {'peak +MB':>8} next")
    for row in rows:
        print(f"{row.case:52} {row.route:34} {row.bytes:>10} {row.status:>6} {row.code!s:>22} {row.seconds:>8.3f} "
              f"{row.cpu_seconds:>6.2f} {row.rss_growth_mb:>8.1f} {row.peak_growth_mb:>8.1f} "
              f"{'ok' if row.next_ok else 'FAILED'}")


def print_markdown(rows: list[Row]) -> None:
    """The table of docs/reliability.md: one line per case, sign and verify side by side for files."""
    by_case: dict[str, list[Row]] = {}
    for row in rows:
        by_case.setdefault(row.case, []).append(row)
    print("| case | bytes | answers | slowest | RSS growth | peak growth |")
    print("|---|---|---|---|---|---|")
    for case, group in by_case.items():
        answers = ", ".join(f"{_short(row.route)} {row.status} `{row.code}`" if row.code else f"{_short(row.route)} "
                            f"{row.status}" for row in group)
        if len(answers) > 160:  # a JSON case over many operations: count the answers instead
            counts: dict[str, int] = {}
            for row in group:
                key = f"{row.status} `{row.code}`"
                counts[key] = counts.get(key, 0) + 1
            answers = f"{len(group)} operations: " + ", ".join(f"{n} x {key}" for key, n in counts.items())
        print(f"| {case} | {max(row.bytes for row in group):,} | {answers} | {max(r.seconds for r in group):.2f} s | "
              f"{max(r.rss_growth_mb for r in group):.1f} MB | {max(r.peak_growth_mb for r in group):.1f} MB |")


def _short(route: str) -> str:
    return route if " " not in route else route.split(" ", 1)[1]
