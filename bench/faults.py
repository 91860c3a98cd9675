"""Faults injected into a production-shaped server, and what was lost (docs/reliability.md, "Faults").

Each subcommand starts its own PostgreSQL cluster and redis-server (temporary folders, free ports;
tests/own_services.py), migrates, makes its organizations and keys through the project's services,
serves with gunicorn and the repo's gunicorn.conf.py (DEBUG off), injects the fault and checks the
database afterwards. The shared PostgreSQL and Redis are never touched.

    .venv/bin/python bench/faults.py postgres [--clients 8] [--before 5] [--down 3] [--after 10]
    .venv/bin/python bench/faults.py redis
    .venv/bin/python bench/faults.py webhook
    .venv/bin/python bench/faults.py disconnect
    .venv/bin/python bench/faults.py signer [--clients 6] [--before 5] [--down 3] [--after 8]
"""

import argparse
import collections
import contextlib
import http.client
import json
import queue
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from tests.own_services import OwnPostgres, OwnRedis, free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def stack(**extra_env: str):
    """Own PostgreSQL + own Redis, migrated, Django set up in this process; yields (env, pg, redis)."""
    pg, redis_server = OwnPostgres(), OwnRedis()
    try:
        pg.start()
        redis_server.start()
        pg.create_database("faults")
        env = {**serve.server_env(pg.url("faults"), redis_server.url()), **extra_env}
        started = time.monotonic()
        serve.manage(env, "migrate", "--noinput")
        print(f"(own PostgreSQL on :{pg.port}, own Redis on :{redis_server.port}, migrated in "
              f"{time.monotonic() - started:.0f} s)")
        serve.django_in_process(env)
        yield env, pg, redis_server
    finally:
        from django.db import connections

        connections.close_all()
        redis_server.close()
        pg.close()


@contextlib.contextmanager
def gunicorn(env: dict[str, str], *flags: str):
    """gunicorn -c gunicorn.conf.py on a free port; yields the port."""
    with gunicorn_process(env, *flags) as (port, _):
        yield port


@contextlib.contextmanager
def gunicorn_process(env: dict[str, str], *flags: str):
    """gunicorn -c gunicorn.conf.py on a free port; yields (the port, the master's Popen)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind",
         f"127.0.0.1:{port}", "--no-control-socket", "--log-level", "warning", *flags], cwd=ROOT, env=env)
    try:
        wait_for_port(port)
        yield port, process
    finally:
        process.terminate()
        process.wait(timeout=60)


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
            timeout: float = 30) -> tuple[int, dict, bytes, float]:
    """One request on a fresh connection: (status, headers, body, seconds)."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read(), time.monotonic() - started
    finally:
        conn.close()


def _json_headers(key: str) -> dict:
    return {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}


# --- postgres: restarted under a load of POST /v1/records ------------------------------------------

class RecordsLoad:
    """Client threads POSTing pre-signed, distinct record bodies over keep-alive; every answer is kept."""

    def __init__(self, port: int, jobs: "queue.Queue[tuple[str, str, bytes]]", clients: int):
        self.port, self.jobs = port, jobs
        self.answers: list[dict] = []
        self._lock, self._stop = threading.Lock(), threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(clients)]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self.threads:
            thread.join(timeout=60)

    def _run(self) -> None:
        conn = None
        while not self._stop.is_set():
            try:
                org, key, payload = self.jobs.get_nowait()
            except queue.Empty:
                return
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            answer = {"org": org, "at": time.monotonic()}
            try:
                answer.update(self._send(conn, key, payload))
            except (OSError, http.client.HTTPException) as exc:
                answer.update(status=None, error=type(exc).__name__)
                conn.close()
                conn = None
            answer["done"] = time.monotonic()
            with self._lock:
                self.answers.append(answer)
            if answer.get("status") == 429:
                time.sleep(0.2)

    def _send(self, conn: http.client.HTTPConnection, key: str, body: bytes) -> dict:
        conn.request("POST", "/v1/records", body=body, headers=_json_headers(key))
        response = conn.getresponse()
        return {"status": response.status, "body": response.read(), "retry_after": response.getheader("Retry-After")}


def _postgres_orgs(count_bodies: int):
    from billing.services import usage_consume
    from tests import factories

    orgs = {}
    for label, plan in (("enterprise-1", "enterprise"), ("enterprise-2", "enterprise"), ("free-at-470", "free")):
        org = factories.make_org(plan=plan, name=f"faults-{label}")
        generator, seed = factories.make_client_generator(org=org)
        if plan == "free":
            usage_consume(org=org, count=470)  # 30 signatures left of 500
        orgs[label] = (org, factories.make_api_key(org=org), generator, seed)
    jobs: queue.Queue = queue.Queue()
    # The free organization gets a slow trickle (its plan allows 100 requests a minute).
    for index in range(count_bodies):
        label = "free-at-470" if index % 40 == 0 else f"enterprise-{1 + index % 2}"
        org, key, generator, seed = orgs[label]
        body = factories.record_body(generator=generator, seed=seed, content=f"{label}-{index}".encode(),
                                     watermark_id=f"wm-{index}")
        jobs.put((label, key, json.dumps(body).encode()))
    return orgs, jobs


def run_postgres(args: argparse.Namespace) -> None:
    with stack() as (env, pg, _):
        orgs, jobs = _postgres_orgs(args.bodies)
        with gunicorn(env) as port:
            load = RecordsLoad(port, jobs, args.clients)
            started = time.monotonic()
            load.start()
            time.sleep(args.before)
            down_at = time.monotonic()
            pg.stop("fast")  # what `systemctl restart postgresql` does first: every session ended
            time.sleep(args.down)
            pg.start()
            up_at = time.monotonic()
            time.sleep(args.after)
            load.stop()
        _report_postgres(load.answers, orgs, started, down_at, up_at)


def _report_postgres(answers: list[dict], orgs: dict, started: float, down_at: float, up_at: float) -> None:
    from django.db import connections

    from audit.models import AuditEvent
    from billing.models import UsageCounter
    from provenance.models import Record

    connections.close_all()  # this process's connection died with the restart
    print(f"\nPostgreSQL stopped at {down_at - started:.1f} s, running again at {up_at - started:.1f} s "
          f"(pg_ctl stop -m fast, start).")
    phases = collections.Counter()
    envelopes_ok = True
    for answer in answers:
        phase = "before" if answer["at"] < down_at else "down" if answer["at"] < up_at else "after"
        status = answer.get("status")
        phases[(phase, status if status else answer.get("error"))] += 1
        if status == 503:
            body = json.loads(answer["body"])
            envelopes_ok &= body.get("error") == "service_unavailable" and bool(answer["retry_after"])
    print("\n| phase (request sent) | answer | count |\n|---|---|---|")
    for (phase, status), count in sorted(phases.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        print(f"| {phase} | {status} | {count} |")
    print(f"\nEvery 503 had the envelope `service_unavailable` and Retry-After: {envelopes_ok}")
    print("\n| organization | 201 answers | records stored | 201 ids missing | records without a 201 | "
          "usage counter | sign audit events | 402 answers |")
    print("|---|---|---|---|---|---|---|---|")
    lost = 0
    for label, (org, *_rest) in orgs.items():
        created = {json.loads(a["body"])["record_id"] for a in answers if a["org"] == label and a.get("status") == 201}
        stored = set(str(pk) for pk in Record.objects.filter(org=org).values_list("pk", flat=True))
        counter = UsageCounter.objects.filter(org=org).values_list("signatures_used", flat=True).first() or 0
        audits = AuditEvent.objects.filter(org=org, type="sign").count()
        refused = sum(1 for a in answers if a["org"] == label and a.get("status") == 402)
        base = 470 if label.startswith("free") else 0
        lost += len(created - stored)
        print(f"| {label} | {len(created)} | {len(stored)} | {len(created - stored)} | {len(stored - created)} | "
              f"{counter}{f' (470 + {counter - base})' if base else ''} | {audits} | {refused} |")
    print(f"\nAcknowledged records lost: {lost}. Usage counter = records stored (+ the 470 set up) and sign "
          "audit events = records stored, per organization, is the check that nothing is counted without "
          "its record or stored without its count.")


# --- redis: stopped, hung, restarted empty ---------------------------------------------------------

def run_redis(args: argparse.Namespace) -> None:
    with stack() as (env, _, redis_server):
        from tests import factories

        owner = factories.make_user(org=factories.make_org(plan="scale", name="faults-redis-sessions"))
        key = factories.make_api_key(org=factories.make_org(plan="free", name="faults-redis-limits"))
        with gunicorn(env) as port:
            def me(token: str) -> tuple[int, float]:
                status, _, _, seconds = request(port, "GET", "/v1/auth/me",
                                                headers={"Authorization": f"Bearer {token}"})
                return status, seconds

            def logout(token: str) -> tuple[int, dict, bytes]:
                status, headers, body, _ = request(port, "POST", "/v1/auth/logout",
                                                   headers={"Authorization": f"Bearer {token}"})
                return status, headers, body

            revoked, live, late = (factories.session_token(owner) for _ in range(3))
            rows = [("Redis up", "logged-out token", me(revoked)[0] if logout(revoked)[0] == 200 else "logout failed")]
            rows.append(("Redis up", "live token", me(live)[0]))
            redis_server.kill()
            rows.append(("Redis killed", "logged-out token", me(revoked)[0]))
            rows.append(("Redis killed", "live token", me(live)[0]))
            status, headers, body = logout(late)
            rows.append(("Redis killed", "logout", f"{status} {json.loads(body)['error']}, "
                                                   f"Retry-After {headers.get('Retry-After')}"))
            rows.append(("Redis killed", "token whose logout failed", me(late)[0]))
            limited = [request(port, "GET", "/v1/generators", headers={"Authorization": f"Bearer {key}"})[0]
                       for _ in range(110)]
            counted = sorted(collections.Counter(limited).items())
            rows.append(("Redis killed", "110 key requests, free plan (100 a minute)",
                         ", ".join(f"{count} x {code}" for code, count in counted)))
            redis_server.start()  # empty: no persistence
            time.sleep(5.5)  # the workers' pause on Redis runs out
            rows.append(("Redis restarted empty", "logged-out token", me(revoked)[0]))
            rows.append(("Redis restarted empty", "live token", me(live)[0]))
            rows.append(("Redis restarted empty", "logout of the token", logout(late)[0]))
            rows.append(("Redis restarted empty", "that token after logout", me(late)[0]))
            redis_server.freeze()
            timed = [me(live) for _ in range(20)]
            rows.append(("Redis hung (SIGSTOP)", "20 live-token requests",
                         f"{collections.Counter(s for s, _ in timed)}; slowest {max(t for _, t in timed):.2f} s, "
                         f"median {sorted(t for _, t in timed)[10] * 1000:.0f} ms"))
            rows.append(("Redis hung (SIGSTOP)", "logged-out token", me(revoked)[0]))
            redis_server.thaw()
    print("\n| Redis | request | answer |\n|---|---|---|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} |")


# --- webhook: a target that hangs, one that resets ------------------------------------------------

def _bad_receiver(mode: str) -> tuple[socket.socket, int]:
    """A TCP listener that reads each request and then hangs (`hang`) or resets (`reset`)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.recv(65536)
            if mode == "hang":
                time.sleep(60)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close = RST
        conn.close()

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener, listener.getsockname()[1]


def run_webhook(args: argparse.Namespace) -> None:
    with stack(WEBHOOK_ALLOW_PRIVATE_TARGETS="true") as (env, _, _):
        from provenance.models import Record
        from tests import factories
        from webhooks.models import WebhookDelivery, WebhookEndpoint

        rows = []
        with gunicorn(env) as port:
            for mode, requests in (("reset", 7), ("hang", 3)):
                listener, target_port = _bad_receiver(mode)
                org = factories.make_org(plan="growth", name=f"faults-webhook-{mode}")
                generator, seed = factories.make_client_generator(org=org)
                key = factories.make_api_key(org=org)
                endpoint, _ = factories.make_webhook(org=org, url=f"http://127.0.0.1:{target_port}/hook",
                                                  events=["record.created"])
                answers = []
                for index in range(requests):
                    body = factories.record_body(generator=generator, seed=seed, content=f"{mode}-{index}".encode())
                    status, _, _, seconds = request(port, "POST", "/v1/records", json.dumps(body).encode(),
                                                    _json_headers(key), timeout=60)
                    answers.append((status, seconds))
                listener.close()
                endpoint = WebhookEndpoint.objects.get(pk=endpoint.pk)
                deliveries = WebhookDelivery.objects.filter(endpoint=endpoint)
                print(mode, "seconds in order:", " ".join(f"{t:.2f}" for _, t in answers))
                times = sorted(t for _, t in answers)
                rows.append((mode, requests, dict(collections.Counter(s for s, _ in answers)), times[len(times) // 2],
                             times[-1],
                             Record.objects.filter(org=org).count(), deliveries.count(),
                             deliveries.filter(status="failed").count(),
                             sorted(set(deliveries.values_list("error", flat=True))), endpoint.status,
                             endpoint.consecutive_failures))
    print("\n| target | POST /v1/records | answers | median s | slowest s | records stored | deliveries logged | "
          "failed | errors logged | endpoint status | consecutive failures |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(cell) if not isinstance(cell, float) else f"{cell:.2f}" for cell in row) + " |")


# --- disconnect: a signing upload cut off halfway ---------------------------------------------------

def half_upload(port: int, key: str, generator_id: str, content: bytes) -> None:
    """Send POST /v1/sign's head and half its multipart body, then close the socket."""
    boundary = "cutoff"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="generator_id"\r\n\r\n{generator_id}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.jpg"\r\n\r\n').encode()
    body += content + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST /v1/sign HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head + body[: len(body) // 2])
        time.sleep(0.3)


def run_disconnect(args: argparse.Namespace) -> None:
    with stack() as (env, _, _):
        from audit.models import AuditEvent
        from bench.sign_verify import photo
        from billing.selectors import signatures_used_this_month
        from provenance.models import Record
        from tests import factories

        org = factories.make_org(plan="scale", name="faults-disconnect")
        generator = factories.make_generator(org=org, formats=["image"])
        key = factories.make_api_key(org=org)
        content = photo(1.0)
        with gunicorn(env) as port:
            for _ in range(args.cuts):
                half_upload(port, key, str(generator.pk), content)
            time.sleep(1)
            after_cuts = (Record.objects.filter(org=org).count(), signatures_used_this_month(org),
                          AuditEvent.objects.filter(org=org, type="sign").count())
            boundary = "whole"
            body = (f'--{boundary}\r\nContent-Disposition: form-data; name="generator_id"\r\n\r\n{generator.pk}\r\n'
                    f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n'
                    f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.jpg"\r\n\r\n'
                    ).encode() + content + f"\r\n--{boundary}--\r\n".encode()
            status, _, _, seconds = request(port, "POST", "/v1/sign", body, {
                "Authorization": f"Bearer {key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        after_whole = (Record.objects.filter(org=org).count(), signatures_used_this_month(org),
                       AuditEvent.objects.filter(org=org, type="sign").count())
    print(f"\n{args.cuts} uploads of a 1 MP JPEG ({len(content) // 1024} KB) cut off after half the body: "
          f"records {after_cuts[0]}, signatures counted {after_cuts[1]}, sign audit events {after_cuts[2]}.")
    print(f"Then one whole upload: {status} in {seconds * 1000:.0f} ms; records {after_whole[0]}, counted "
          f"{after_whole[1]}, audit {after_whole[2]}.")


# --- signer: the signer service killed (SIGKILL) and restarted under a load of POST /v1/sign -------------

SIGNER_SECRET = "faults-signer-secret-0123456789abcdef0123456789"


def signer_envs(env: dict[str, str], socket_path: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the signer's environment, the web processes') from one production environment: only the signer keeps
    KEY_ENCRYPTION_KEY and LOG_SIGNING_KEY."""
    shared = {"SIGNER_SOCKET": socket_path, "SIGNER_SECRET": SIGNER_SECRET}
    web = {key: value for key, value in env.items() if key not in ("KEY_ENCRYPTION_KEY", "LOG_SIGNING_KEY")}
    return ({**env, **shared, "SIGNER_SERVICE": "true"},
            {**web, **shared, "SECRET_ENCRYPTION_KEY": env["KEY_ENCRYPTION_KEY"]})


def start_signer(env: dict[str, str]) -> subprocess.Popen:
    socket_path = env["SIGNER_SOCKET"]
    with contextlib.suppress(FileNotFoundError):
        Path(socket_path).unlink()  # a killed signer leaves its socket file behind
    process = subprocess.Popen([sys.executable, "manage.py", "signer"], cwd=ROOT, env=env,
                               stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as probe:
            probe.connect(socket_path)
            return process
        if process.poll() is not None:
            raise RuntimeError("the signer exited at start")
        time.sleep(0.02)
    raise RuntimeError("the signer did not listen within 60 s")


def sign_body(generator_id: str, text: str) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="generator_id"\r\n\r\n{generator_id}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nfaults\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.txt"\r\n'
            f'Content-Type: text/plain\r\n\r\n{text}\r\n--{boundary}--\r\n').encode()
    return body, f"multipart/form-data; boundary={boundary}"


class SignLoad(RecordsLoad):
    """Client threads POSTing distinct texts to /v1/sign (server-managed) over keep-alive; every answer kept."""

    def _send(self, conn: http.client.HTTPConnection, key: str, payload: tuple[bytes, str]) -> dict:
        body, content_type = payload
        conn.request("POST", "/v1/sign", body=body, headers={"Authorization": f"Bearer {key}",
                                                             "Content-Type": content_type})
        response = conn.getresponse()
        return {"status": response.status, "body": response.read(), "record": response.getheader(
            "X-Service-Record-Id"), "retry_after": response.getheader("Retry-After")}


def run_signer(args: argparse.Namespace) -> None:
    with stack() as (env, _, _):
        from tests import factories

        signer_env, web_env = signer_envs(env, str(Path(tempfile.mkdtemp(prefix="faults-signer-")) / "signer.sock"))
        orgs, jobs = {}, queue.Queue()
        for label in ("scale-1", "scale-2"):
            org = factories.make_org(plan="scale", name=f"faults-{label}")
            generator = factories.make_generator(org=org, formats=["text"])
            orgs[label] = (org, factories.make_api_key(org=org), generator)
        for index in range(args.requests):
            label = f"scale-{1 + index % 2}"
            jobs.put((label, orgs[label][1], sign_body(str(orgs[label][2].pk), f"faults text {index} {uuid.uuid4()}")))
        signer = start_signer(signer_env)
        try:
            with gunicorn(web_env) as port:
                load = SignLoad(port, jobs, args.clients)
                started = time.monotonic()
                load.start()
                time.sleep(args.before)
                down_at = time.monotonic()
                signer.kill()  # SIGKILL: requests in its hands die with it
                signer.wait(timeout=60)
                time.sleep(args.down)
                restart_at = time.monotonic()
                signer = start_signer(signer_env)
                up_at = time.monotonic()
                time.sleep(args.after)
                load.stop()
        finally:
            signer.terminate()
            signer.wait(timeout=60)
        _report_signer(load.answers, orgs, started, down_at, restart_at, up_at)


def _report_signer(answers: list[dict], orgs: dict, started: float, down_at: float, restart_at: float,
                   up_at: float) -> None:
    from billing.selectors import signatures_used_this_month
    from provenance.models import Record
    from record_format import crypto
    from record_format.payload import signed_payload_bytes

    print(f"\nSigner killed (SIGKILL) at {down_at - started:.1f} s, started again at {restart_at - started:.1f} s, "
          f"listening at {up_at - started:.1f} s ({(up_at - restart_at) * 1000:.0f} ms to start).")
    phases = collections.Counter()
    envelopes_ok, server_errors = True, 0
    for answer in answers:
        phase = "before" if answer["at"] < down_at else "down" if answer["at"] < up_at else "after"
        status = answer.get("status")
        phases[(phase, status if status else answer.get("error"))] += 1
        server_errors += status is not None and status >= 500 and status != 503
        if status == 503:
            body = json.loads(answer["body"])
            envelopes_ok &= body.get("error") == "service_unavailable" and bool(answer["retry_after"])
    print("\n| phase (request sent) | answer | count |\n|---|---|---|")
    for (phase, status), count in sorted(phases.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        print(f"| {phase} | {status} | {count} |")
    first_after = min((a["done"] for a in answers if a.get("status") == 201 and a["at"] >= up_at), default=None)
    if first_after is not None:
        print(f"\nFirst 201 after the restart: {(first_after - up_at) * 1000:.0f} ms after the signer listened.")
    print(f"Every 503 had the envelope `service_unavailable` and Retry-After: {envelopes_ok}; "
          f"other 5xx answers: {server_errors}")
    print("\n| organization | 201 answers | records stored | 201 ids missing | records without a 201 | "
          "signatures counted | records whose signature does not verify |")
    print("|---|---|---|---|---|---|---|")
    for label, (org, _, generator) in orgs.items():
        created = {a["record"] for a in answers if a["org"] == label and a.get("status") == 201}
        records = list(Record.objects.filter(org=org))
        stored = {str(record.pk) for record in records}
        public_key = bytes(generator.keys.get().public_key)
        unverified = sum(not crypto.verify(public_key, signed_payload_bytes(**record.signed_payload),
                                           bytes(record.signature)) for record in records)
        print(f"| {label} | {len(created)} | {len(stored)} | {len(created - stored)} | {len(stored - created)} | "
              f"{signatures_used_this_month(org)} | {unverified} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="fault", required=True)
    postgres = commands.add_parser("postgres", help="restart PostgreSQL under a load of POST /v1/records")
    postgres.add_argument("--clients", type=int, default=8)
    postgres.add_argument("--before", type=float, default=5.0, help="seconds of load before the stop")
    postgres.add_argument("--down", type=float, default=3.0, help="seconds PostgreSQL stays down")
    postgres.add_argument("--after", type=float, default=10.0, help="seconds of load after the start")
    postgres.add_argument("--bodies", type=int, default=6000, help="pre-signed record bodies (the most sent)")
    commands.add_parser("redis", help="kill, restart empty and hang Redis; sessions, logout, rate limits")
    commands.add_parser("webhook", help="a webhook target that resets connections, one that hangs")
    disconnect = commands.add_parser("disconnect", help="signing uploads cut off halfway")
    disconnect.add_argument("--cuts", type=int, default=20)
    signer = commands.add_parser("signer", help="kill the signer service and start it again under POST /v1/sign")
    signer.add_argument("--clients", type=int, default=6)
    signer.add_argument("--before", type=float, default=5.0, help="seconds of load before the kill")
    signer.add_argument("--down", type=float, default=3.0, help="seconds the signer stays down")
    signer.add_argument("--after", type=float, default=8.0, help="seconds of load after the restart")
    signer.add_argument("--requests", type=int, default=20000, help="prepared requests (the most sent)")
    args = parser.parse_args()
    runs = {"postgres": run_postgres, "redis": run_redis, "webhook": run_webhook, "disconnect": run_disconnect,
            "signer": run_signer}
    runs[args.fault](args)


if __name__ == "__main__":
    main()
