"""A production-shaped cluster on this machine, faults injected under a mixed load, and what clients saw.

nginx (deploy/nginx.conf with an upstream of both app instances) in front of two app instances (gunicorn
with gunicorn.conf.py), the signer service, two log sequencers (one leads: transparency/leadership.py),
two Celery workers when the project has them (config/celery.py), one PostgreSQL and one Redis of their own
(tests/own_services.py; the shared servers are never touched). Every process is one entry in
`process_specs`: adding a kind of process is adding an entry.

Under a mixed load through nginx (POST /v1/sign with an Idempotency-Key, retried with the same key on a
503 or a lost connection; POST /v1/verify; GET /v1/records/:id with an API key; a Free organization
signing past its quota; signing jobs when there are workers), each fault in turn:

  1. no fault (the baseline);
  2. one app instance killed (SIGKILL, master and workers), started again;
  3. one Celery worker killed mid-job, started again (only with config/celery.py);
  4. Redis killed and started again, empty;
  5. the leading log sequencer killed (SIGKILL), started again.

After each, with the load drained, it checks: every status a client saw was 2xx, 4xx or a 503 with
Retry-After (a 500, 502, 504 or a dropped connection from nginx fails the fault); every Idempotency-Key
answered 201 names one record and every record one key (none lost, none stored twice); each
organization's usage counter equals its records (the Free one stopped exactly at its quota); every
accepted job succeeded; and the log integrated every record once (indices 0..n-1, the root of the stored
leaves, a checkpoint that verifies with the published keys, consistent with the tree before the fault).

    .venv/bin/python bench/cluster.py --short    # CI: a few seconds of load around each fault
    .venv/bin/python bench/cluster.py            # the figures in docs/reliability.md, "A cluster on one machine"

Exit status 1 when a fault's outcome is not OK.
"""

import argparse
import collections
import contextlib
import ctypes
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.faults import sign_body, signer_envs
from tests.nginx_site import NGINX, cluster_site, start_nginx
from tests.own_services import OwnPostgres, OwnRedis, free_port, wait_for_port
from tests.waiting import process_tree, wait_until

ROOT = Path(__file__).resolve().parent.parent
JOBS = (ROOT / "config" / "celery.py").exists()  # the Celery jobs (`worker` processes, /v1/jobs/:id)
FREE_QUOTA, FREE_USED_BEFORE = 500, 490  # the Free organization starts 10 signatures short of its quota
RETRIED = frozenset({408, 409, 429})  # and every 5xx and lost connection: a signing call tries again, same key


# --- processes ----------------------------------------------------------------------------------

@dataclass
class ProcessSpec:
    """One process of the cluster: how to start it, how to know it is up, how to stop it."""

    name: str
    argv: list[str]
    env: dict[str, str]
    port: int | None = None  # up once it accepts connections here
    socket_path: str | None = None  # or once this Unix socket accepts them
    stop_signal: int = signal.SIGTERM


@dataclass
class Running:
    spec: ProcessSpec
    process: subprocess.Popen
    log: Path


class Processes:
    """Start, kill and restart the cluster's processes by name; each in its own session, its output in a file."""

    def __init__(self, folder: Path):
        self.folder, self.running = folder, {}

    def start(self, spec: ProcessSpec) -> None:
        log = self.folder / f"{spec.name}.log"
        if spec.socket_path:
            with contextlib.suppress(FileNotFoundError):
                Path(spec.socket_path).unlink()  # a killed signer leaves its socket file behind
        with log.open("a") as out:
            process = subprocess.Popen(spec.argv, cwd=ROOT, env=spec.env, stdout=out, stderr=subprocess.STDOUT,
                                       start_new_session=True, preexec_fn=_die_with_parent)
        self.running[spec.name] = Running(spec, process, log)
        if spec.port:
            wait_for_port(spec.port, process=process)
        elif spec.socket_path:
            wait_until(lambda: _unix_socket_open(spec.socket_path), pids=lambda: process_tree(process.pid),
                       cpu_budget=60, what=f"{spec.name} listening", alive=lambda: process.poll() is None,
                       details=log.read_text)

    def kill(self, name: str) -> None:
        """SIGKILL to the process and every process of its session (a gunicorn master and its workers)."""
        process = self.running[name].process
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def restart(self, name: str) -> None:
        self.start(self.running[name].spec)

    def stop_all(self) -> None:
        for running in reversed(list(self.running.values())):
            if running.process.poll() is None:
                running.process.send_signal(running.spec.stop_signal)
        for running in self.running.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                running.process.wait(timeout=20)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(running.process.pid, signal.SIGKILL)
            running.process.wait(timeout=10)

    def pids(self, prefix: str) -> list[int]:
        return [pid for name, running in self.running.items() if name.startswith(prefix)
                for pid in process_tree(running.process.pid)]


_LIBC = ctypes.CDLL("libc.so.6", use_errno=True)  # loaded here: a forked child of a threaded parent only calls it


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the bench dies, even by SIGKILL, so no cluster outlives it
    (its processes are in sessions of their own, out of reach of a signal to the bench's group)."""
    _LIBC.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _stop_on_sigterm(signum, frame) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the clean-up short
    raise SystemExit(f"stopped by signal {signum}")  # unwinds the cluster's context: everything is stopped


def _unix_socket_open(path: str) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True


def process_specs(env: dict[str, str], *, app_ports: list[int], app_workers: int, folder: Path) -> list[ProcessSpec]:
    """Every process of the cluster but nginx and the data stores, in start order."""
    signer_env, web_env = signer_envs(env, str(folder / "signer.sock"))
    # A job whose worker is killed goes back to the queue once Redis's visibility timeout has passed: seconds
    # here, where jobs take a second, rather than production's half hour for long videos.
    # Likewise a job accepted while Redis was down (its message never sent) is sent again by the cleanup
    # (`celery beat`) within seconds, not production's ten minutes.
    web_env = {**web_env, "JOBS_VISIBILITY_TIMEOUT": "5", "JOBS_STALLED_AFTER": "3", "JOBS_CLEANUP_INTERVAL": "2"}
    manage = [sys.executable, "manage.py"]
    specs = [ProcessSpec("signer", [*manage, "signer"], signer_env, socket_path=signer_env["SIGNER_SOCKET"])]
    specs += [ProcessSpec(f"app-{number}", [sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c",
                                            "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}", "--no-control-socket"],
                          {**web_env, "WEB_CONCURRENCY": str(app_workers)}, port=port, stop_signal=signal.SIGINT)
              for number, port in enumerate(app_ports, 1)]
    specs += [ProcessSpec(f"sequencer-{number}", [*manage, "log_sequencer"], {**web_env, "LOG_LEVEL": "INFO"},
                          stop_signal=signal.SIGINT) for number in (1, 2)]
    if JOBS:
        specs += [ProcessSpec(f"worker-{number}", [sys.executable, "-m", "celery", "-A", "config", "worker",
                                                   "--concurrency", "1", "--loglevel", "WARNING",
                                                   "--hostname", f"cluster-worker-{number}@%h"], web_env)
                  for number in (1, 2)]
        specs += [ProcessSpec("beat", [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "WARNING",
                                       "--schedule", str(folder / "celerybeat-schedule")], web_env)]
    return specs


# --- the load -----------------------------------------------------------------------------------

@dataclass
class Org:
    label: str
    org: object
    key: str
    generator_id: str
    record_ids: list[str] = field(default_factory=list)  # signed by the load: what reads and verifies use
    texts: list[bytes] = field(default_factory=list)


@dataclass
class Signing:
    """One Idempotency-Key: every answer its tries got."""

    org: str
    statuses: list = field(default_factory=list)
    record_ids: set = field(default_factory=set)
    job_id: str | None = None


class Load:
    """Client threads through nginx: signing (with retries under one key), verifying, reading; one thread
    signs for the Free organization past its quota. Every answer is kept with the phase it was sent in."""

    def __init__(self, port: int, orgs: dict[str, Org], clients: int):
        self.port, self.orgs, self.clients = port, orgs, clients
        self.phase = ""
        self.answers: list[dict] = []
        self.signings: dict[str, Signing] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self, phase: str) -> None:
        self.phase = phase
        self._stop.clear()
        self._threads = [threading.Thread(target=self._client, args=(seed,), daemon=True)
                         for seed in range(self.clients)]
        self._threads.append(threading.Thread(target=self._free_client, daemon=True))
        for thread in self._threads:
            thread.start()

    def drain(self) -> None:
        """Stop sending new calls; each thread finishes (retries) the call it is in."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=300)

    def _client(self, seed: int) -> None:
        rng, connection = random.Random(seed * 7919 + len(self.answers)), None
        paid = [org for org in self.orgs.values() if org.label != "free"]
        while not self._stop.is_set():
            org, roll = rng.choice(paid), rng.random()
            if roll < 0.35 or not org.record_ids:
                connection = self._sign(connection, org)
            elif JOBS and roll < 0.45:
                connection = self._sign(connection, org, asynchronous=True)
            elif roll < 0.65:
                connection, _ = self._send(connection, "verify", "POST", "/v1/verify",
                                           *self._upload(org, rng.choice(org.texts[-50:])))
            else:
                record_id = rng.choice(org.record_ids[-200:])
                connection, _ = self._send(connection, "read", "GET", f"/v1/records/{record_id}", None,
                                           {"Authorization": f"Bearer {org.key}"})

    def _free_client(self) -> None:
        connection = None
        while not self._stop.is_set():
            connection = self._sign(connection, self.orgs["free"])
            time.sleep(0.7)  # its plan allows 100 requests a minute

    def _upload(self, org: Org, text: bytes) -> tuple[bytes, dict]:
        boundary = uuid.uuid4().hex
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.txt"\r\n'
                f'Content-Type: text/plain\r\n\r\n').encode() + text + f"\r\n--{boundary}--\r\n".encode()
        return body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}

    def _sign(self, connection, org: Org, *, asynchronous: bool = False):
        key = str(uuid.uuid4())
        body, content_type = sign_body(org.generator_id, f"cluster text {key}")
        headers = {"Authorization": f"Bearer {org.key}", "Content-Type": content_type, "Idempotency-Key": key}
        if asynchronous:
            headers["Prefer"] = "respond-async"
        signing = Signing(org.label)
        with self._lock:
            self.signings[key] = signing
        for _ in range(200):  # retried until the call has a final answer (bounded, for a broken cluster)
            connection, answer = self._send(connection, "sign job" if asynchronous else "sign", "POST", "/v1/sign",
                                            body, headers)
            signing.statuses.append(answer["status"])
            if answer["status"] is not None and answer["status"] < 500 and answer["status"] not in RETRIED:
                self._signed(org, signing, answer)
                return connection
            time.sleep(min(float(answer.get("retry_after") or 0.2), 0.5))  # Retry-After, capped for a short run
        return connection

    def _signed(self, org: Org, signing: Signing, answer: dict) -> None:
        if answer["status"] == 201:
            signing.record_ids.add(answer["record_id"])
            with self._lock:
                org.record_ids.append(answer["record_id"])
                org.texts.append(answer["body"])
        elif answer["status"] == 202:
            signing.job_id = json.loads(answer["body"])["job_id"]

    def _send(self, connection, op: str, method: str, path: str, body: bytes | None, headers: dict):
        """One request on the thread's keep-alive connection to nginx; the answer kept. Returns the connection
        (None after an error) and the answer."""
        answer = {"phase": self.phase, "op": op, "status": None}
        try:
            if connection is None:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            content = response.read()
            answer.update(status=response.status, retry_after=response.getheader("Retry-After"), body=content,
                          record_id=response.getheader("X-Service-Record-Id"),
                          replayed=response.getheader("Idempotent-Replayed") == "true")
            if response.status >= 400:
                with contextlib.suppress(ValueError, AttributeError):
                    answer["error"] = json.loads(content).get("error")
        except (OSError, http.client.HTTPException) as error:
            answer["error"] = type(error).__name__
            connection.close()
            connection = None
        with self._lock:
            self.answers.append({name: value for name, value in answer.items() if name != "body"})
        return connection, answer


# --- checks -------------------------------------------------------------------------------------

def status_check(answers: list[dict]) -> tuple[collections.Counter, list[str]]:
    """(answers by (operation, status), problems): any 5xx but a 503 with Retry-After, or no answer at all."""
    seen, problems = collections.Counter(), []
    for answer in answers:
        status = answer["status"]
        seen[(answer["op"], _label(answer))] += 1
        if status is None:
            problems.append(f"{answer['op']}: no answer ({answer.get('error')})")
        elif status == 503 and not (answer.get("retry_after") and answer.get("error") == "service_unavailable"):
            problems.append(f"{answer['op']}: 503 without Retry-After or the envelope")
        elif status >= 500 and status != 503:
            problems.append(f"{answer['op']}: {status} {answer.get('error') or ''}".strip())
    return seen, problems


def _label(answer: dict) -> str:
    """A status as the tables show it: 503s with their Retry-After (1: nginx, no instance answered; 5: the
    app, a backing service down), 201s replayed from an Idempotency-Key's stored response apart."""
    if answer["status"] is None:
        return f"no answer ({answer.get('error')})"
    if answer["status"] == 503:
        return f"503, Retry-After {answer.get('retry_after')}"
    return f"{answer['status']} replayed" if answer.get("replayed") else str(answer["status"])


def stored_check(load: Load, jobs: dict[str, dict]) -> dict:
    """Exactly once, per Idempotency-Key and per organization; usage counters; the Free quota."""
    from billing.selectors import signatures_used_this_month
    from provenance.models import Record

    answered = {}  # record id -> key
    problems, unresolved, split = [], 0, 0
    for key, signing in list(load.signings.items()):
        ids = signing.record_ids | set(jobs.get(key, {}).get("record_ids", ()))
        split += len(ids) > 1
        unresolved += not ids and not (set(signing.statuses) & {400, 402, 404, 413})
        answered.update((record_id, key) for record_id in ids)
    stored = {str(pk): org_id for pk, org_id in Record.objects.values_list("pk", "org_id")}
    lost, unanswered = set(answered) - set(stored), set(stored) - set(answered)
    for label, org in load.orgs.items():
        records = sum(1 for org_id in stored.values() if org_id == org.org.pk)
        counted = signatures_used_this_month(org.org) - (FREE_USED_BEFORE if label == "free" else 0)
        if counted != records:
            problems.append(f"{label}: usage counts {counted} signatures for {records} records")
        if label == "free" and FREE_USED_BEFORE + records > FREE_QUOTA:
            problems.append(f"free: {records} records past a quota of {FREE_QUOTA - FREE_USED_BEFORE}")
    problems += [f"{len(lost)} records answered 201 but not stored"] if lost else []
    problems += [f"{len(unanswered)} records stored without a 201 to any key"] if unanswered else []
    problems += [f"{split} keys answered with two different records"] if split else []
    problems += [f"{unresolved} signing calls never got a final answer"] if unresolved else []
    return {"keys": len(load.signings), "records": len(stored), "problems": problems}


def log_check(sequencer_pids, before: tuple[int, bytes]) -> tuple[tuple[int, bytes], list[str]]:
    """Wait (bounded by the sequencers' CPU) until every record is in the log, then check the log whole."""
    from provenance.models import Record
    from tests.transparency import rfc9162
    from tests.transparency.logs import decode, leaves_from_records
    from transparency import note, selectors
    from transparency.models import LogState

    total = Record.objects.count()
    wait_until(lambda: LogState.objects.filter(tree_size=total).exists()
               and not Record.objects.filter(log_index__isnull=True).exists(),
               pids=sequencer_pids, cpu_budget=60, what="the sequencer catches up")
    state, problems = LogState.objects.get(pk=LogState.SINGLETON), []
    if sorted(Record.objects.values_list("log_index", flat=True)) != list(range(total)):
        problems.append("log indices are not 0..n-1, each once")
    if bytes(state.root_hash) != rfc9162.mth(leaves_from_records()):
        problems.append("the log's root is not the root of the stored records")
    checkpoint = selectors.latest_checkpoint()
    for published in selectors.log_public_keys()["keys"]:
        note.verify_note(checkpoint, published["vkey"])  # raises on a bad signature
    if note.parse_checkpoint(note.split_note(checkpoint)[0]).tree_size != total:
        problems.append("the checkpoint is not of the whole log")
    if before[0]:
        proof = decode(selectors.consistency_between(first=before[0], second=total)["consistency_proof"])
        if not rfc9162.verify_consistency(before[0], total, before[1], bytes(state.root_hash), proof):
            problems.append("the log before the fault is not a prefix of the log after it")
    return (total, bytes(state.root_hash)), problems


def jobs_check(load: Load, jobs: dict[str, dict], worker_pids) -> list[str]:
    """Every accepted job (a 202) reaches `succeeded`, its items naming their records (with workers only)."""
    if not JOBS:
        return []
    accepted = {key: signing for key, signing in list(load.signings.items()) if signing.job_id and key not in jobs}
    org_keys = {org.label: org.key for org in load.orgs.values()}

    def finished() -> bool:
        for key, signing in accepted.items():
            if key in jobs:
                continue
            status, _, body = _get(load.port, f"/v1/jobs/{signing.job_id}", org_keys[signing.org])
            job = json.loads(body) if status == 200 else {}
            if job.get("status") in ("succeeded", "failed"):
                jobs[key] = {"status": job["status"],
                             "record_ids": [item["record_id"] for item in job["items"] if item.get("record_id")]}
        return all(key in jobs for key in accepted)

    wait_until(finished, pids=worker_pids, cpu_budget=120, what="every accepted job finishes")
    failed = [key for key in accepted if jobs[key]["status"] != "succeeded"]
    return [f"{len(failed)} of {len(accepted)} accepted jobs failed"] if failed else []


def _get(port: int, path: str, key: str) -> tuple[int, dict, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request("GET", path, headers={"Authorization": f"Bearer {key}"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


# --- the run ------------------------------------------------------------------------------------

@dataclass
class Outcome:
    fault: str
    seen: collections.Counter
    stored: dict
    problems: list[str]
    detail: str

    @property
    def ok(self) -> bool:
        return not self.problems


def make_orgs(port: int) -> dict[str, Org]:
    from billing.services import usage_consume
    from tests import factories

    orgs = {}
    for label, plan in (("enterprise-1", "enterprise"), ("enterprise-2", "enterprise"), ("free", "free")):
        org = factories.make_org(plan=plan, name=f"cluster-{label}")
        generator = factories.make_generator(org=org, formats=["text"])
        if plan == "free":
            usage_consume(org=org, count=FREE_USED_BEFORE)
        orgs[label] = Org(label, org, factories.make_api_key(org=org), str(generator.pk))
    return orgs


def _restartable_port() -> int:
    """A free port below the ephemeral range (net.ipv4.ip_local_port_range) that nothing listens on."""
    import socket

    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.Random()
    while True:
        port = rng.randrange(max(1024, low - 12000), low)
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port


class Cluster:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.folder = Path(tempfile.mkdtemp(prefix="cluster-"))
        # Redis with its append-only file, as compose.yaml runs it: the jobs' queued messages outlive a restart.
        self.pg, self.redis = OwnPostgres(), OwnRedis(persistent=JOBS)
        self.processes = Processes(self.folder)
        self.nginx = None
        self.port = free_port()
        # Ports a killed process listens on again: out of the kernel's range for outgoing connections, or one
        # of the machine's many connections could take the port while its process is down.
        self.app_ports = [_restartable_port() for _ in range(2)]
        self.redis.port = _restartable_port()

    def __enter__(self) -> "Cluster":
        with (self.pg.data / "postgresql.conf").open("a") as conf:  # what a stalled fault is explained by
            conf.write("log_lock_waits = on\nlog_min_duration_statement = 2000\nlog_line_prefix = '%m [%p] %a '\n")
        self.pg.start()
        self.redis.start()
        self.pg.create_database("cluster")
        # PYTHONFAULTHANDLER: a worker gunicorn aborts as silent (its `timeout`) writes every thread's stack.
        env = {**serve.server_env(self.pg.url("cluster"), self.redis.url()), "TRUSTED_PROXY_COUNT": "1",
               "VERIFY_RATE_PER_MINUTE": "1000000", "PYTHONFAULTHANDLER": "1"}
        serve.manage(env, "migrate", "--noinput")
        serve.django_in_process(env)
        for spec in process_specs(env, app_ports=self.app_ports, app_workers=self.args.app_workers,
                                  folder=self.folder):
            self.processes.start(spec)
        (self.folder / "nginx").mkdir()
        self.nginx = start_nginx(self.folder / "nginx", cluster_site(port=self.port, app_ports=self.app_ports),
                                 self.port)
        return self

    def __exit__(self, *exc_info) -> None:
        from django.db import connections

        # Each step whatever the one before did: a cluster is never left half running.
        with contextlib.suppress(Exception):
            if self.nginx is not None:
                self.nginx.terminate()
                self.nginx.wait(timeout=30)
        with contextlib.suppress(Exception):
            self.processes.stop_all()
        with contextlib.suppress(Exception):
            connections.close_all()
        with contextlib.suppress(Exception):
            self.redis.close()
        with contextlib.suppress(OSError):  # kept with the processes' logs in the cluster's folder
            shutil.copy(self.pg.folder / "server.log", self.folder / "postgresql.log")
        self.pg.close()

    def leading_sequencer(self) -> str:
        """The name of the sequencer whose session holds the lock (its pid is in its application_name)."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT application_name FROM pg_stat_activity WHERE application_name LIKE "
                           "'log_sequencer leader %'")
            row = cursor.fetchone()
        pid = int(row[0].rsplit(":", 1)[1]) if row else None
        return next(name for name, running in self.processes.running.items()
                    if name.startswith("sequencer") and running.process.pid == pid)


def faults(cluster: Cluster) -> list[tuple[str, callable]]:
    """(name, injection) in order; each injection kills something and brings it back."""
    down = cluster.args.down

    def kill_and_restart(name: str):
        def inject() -> str:
            cluster.processes.kill(name)
            time.sleep(down)
            started = time.monotonic()
            cluster.processes.restart(name)
            spec = cluster.processes.running[name].spec
            listening = (f", listening {time.monotonic() - started:.1f} s later" if spec.port or spec.socket_path
                         else "")
            return f"{name} killed (SIGKILL), started again {down:g} s later{listening}"
        return inject

    def redis_restart() -> str:
        cluster.redis.kill()
        time.sleep(down)
        cluster.redis.start()  # from its append-only file when the cluster runs jobs, else empty
        return f"Redis killed, down {down:g} s, started again {'from its append-only file' if JOBS else 'empty'}"

    def sequencer_leader() -> str:
        leader = cluster.leading_sequencer()
        cluster.processes.kill(leader)
        killed = time.monotonic()
        successor = wait_until(lambda: _other_leader(cluster, leader), pids=lambda: cluster.processes.pids("sequencer"),
                               cpu_budget=30, what="another sequencer leads")
        took_over = time.monotonic() - killed
        time.sleep(max(0.0, down - took_over))
        cluster.processes.restart(leader)
        return (f"{leader} killed (SIGKILL) while it led; {successor} led {took_over:.2f} s later; {leader} started "
                f"again {down:g} s after the kill, as the standby")

    steps = [("no fault", lambda: "baseline"), ("an app instance killed", kill_and_restart("app-1"))]
    if JOBS:
        steps.append(("a Celery worker killed mid-job", kill_and_restart("worker-1")))
    steps += [("Redis restarted", redis_restart), ("the leading sequencer killed", sequencer_leader)]
    return steps


def _other_leader(cluster: Cluster, dead: str) -> str | None:
    with contextlib.suppress(StopIteration):
        leader = cluster.leading_sequencer()
        return leader if leader != dead else None
    return None


def run(args: argparse.Namespace) -> list[Outcome]:
    outcomes = []
    with Cluster(args) as cluster:
        orgs = make_orgs(cluster.port)
        load, jobs, log_before = Load(cluster.port, orgs, args.clients), {}, (0, b"")
        print(f"(cluster in {cluster.folder}, the processes' logs there: nginx :{cluster.port}, app instances "
              f":{cluster.app_ports[0]} and "
              f":{cluster.app_ports[1]}, {args.app_workers} worker(s) each, two sequencers, the signer"
              f"{', two Celery workers' if JOBS else ''}; PostgreSQL :{cluster.pg.port}, Redis :{cluster.redis.port})")
        for name, inject in faults(cluster):
            load.start(name)
            time.sleep(args.before)
            detail = inject()
            time.sleep(args.after)
            load.drain()
            seen, problems = status_check([a for a in load.answers if a["phase"] == name])
            problems += jobs_check(load, jobs, lambda: cluster.processes.pids("worker"))
            stored = stored_check(load, jobs)
            log_before, log_problems = log_check(lambda: cluster.processes.pids("sequencer"), log_before)
            outcome = Outcome(name, seen, stored, problems + stored["problems"] + log_problems, detail)
            outcomes.append(outcome)
            report(outcome)
    return outcomes


def report(outcome: Outcome) -> None:
    print(f"\n### {outcome.fault}: {'OK' if outcome.ok else 'FAILED'}\n\n{outcome.detail}.\n")
    print("| operation | answer | count |\n|---|---|---|")
    for (op, status), count in sorted(outcome.seen.items(), key=lambda item: (item[0][0], str(item[0][1]))):
        print(f"| {op} | {status} | {count} |")
    print(f"\nSo far: {outcome.stored['keys']} Idempotency-Keys, {outcome.stored['records']} records; "
          f"exactly once, usage = records, Free quota, log whole: {'yes' if outcome.ok else 'no'}")
    for problem in outcome.problems:
        print(f"- PROBLEM: {problem}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--short", action="store_true", help="CI: 2 s of load before each fault, 3 s after")
    parser.add_argument("--clients", type=int, default=None, help="client threads (default 4 short, 8 long)")
    parser.add_argument("--before", type=float, default=None, help="seconds of load before each fault")
    parser.add_argument("--after", type=float, default=None, help="seconds of load after each fault")
    parser.add_argument("--down", type=float, default=None, help="seconds a killed process stays down")
    parser.add_argument("--app-workers", type=int, default=1, help="gunicorn workers per app instance")
    args = parser.parse_args()
    short = {"clients": 4, "before": 2.0, "after": 3.0, "down": 1.0}
    long = {"clients": 8, "before": 10.0, "after": 20.0, "down": 3.0}
    for name, value in (short if args.short else long).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if NGINX is None:
        raise SystemExit("nginx is not installed")
    signal.signal(signal.SIGTERM, _stop_on_sigterm)  # `timeout`, a CI runner's stop: clean up, then exit
    outcomes = run(args)
    print("\n| fault | answers | outcome |\n|---|---|---|")
    for outcome in outcomes:
        print(f"| {outcome.fault} | {sum(outcome.seen.values())} | {'OK' if outcome.ok else 'FAILED'} |")
    sys.exit(0 if all(outcome.ok for outcome in outcomes) else 1)


if __name__ == "__main__":
    main()
