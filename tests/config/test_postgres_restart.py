"""PostgreSQL restarted under a load of POST /v1/records, through gunicorn (gunicorn.conf.py, DEBUG off).

A PostgreSQL cluster of our own (never the shared one): 4 clients post distinct client-signed
records; the cluster is stopped (`pg_ctl stop -m fast`, every session ended) and started again.
While it is down the answers are 503 `service_unavailable` with Retry-After, never a 500 or a hang;
afterwards every 201 has its record, every record its usage count and audit event, and the Free
organization's quota is exact. The longer run with its figures: `bench/faults.py postgres`.

Three clients retry a 503 with the same `Idempotency-Key` until the answer is final, as a careful client
does: each of their bodies then ends with exactly one record or none, whenever the stop fell. The fourth
sends no key and never retries: its records are at least its 201s, and any other one belongs to a body
answered 503 (a commit the stop cut off before its answer). The test moves from one phase to the next
on what the clients got back (counts), never on the clock: a busy machine only makes it longer. The
Free organization's client posts until it is refused with 402, so its quota is used up exactly.
"""

import http.client
import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from tests.own_services import OwnPostgres, free_port, postgres_bin, wait_for_port
from tests.production_env import production_env
from tests.waiting import process_tree, wait_until

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
SETUP = """
import json, django
django.setup()
from billing.services import usage_consume
from tests import factories
out = {}
for label, plan in (("ent", "enterprise"), ("free", "free")):
    org = factories.make_org(plan=plan, name=label)
    generator, seed = factories.make_client_generator(org=org)
    if plan == "free":
        usage_consume(org=org, count=490)  # 10 signatures left of 500
    count = 3000 if plan == "enterprise" else 40
    bodies = [json.dumps(factories.record_body(generator=generator, seed=seed, content=f"{label}-{i}".encode()))
              for i in range(count)]
    out[label] = {"org": str(org.pk), "key": factories.make_api_key(org=org), "bodies": bodies}
print(json.dumps(out))
"""


@pytest.fixture
def cluster():
    if postgres_bin() is None or not GUNICORN.exists():
        pytest.skip("needs the PostgreSQL server binaries and gunicorn")
    pg = OwnPostgres()
    pg.start()
    pg.create_database("restart")
    yield pg
    pg.close()


def _env(pg: OwnPostgres) -> dict[str, str]:
    env = production_env("restart", pg.url("restart"), LOG_LEVEL="ERROR")
    return env


# Phases of the run; each answer keeps the phase it was sent in and the one it came back in.
UP, DOWN, RESTARTED = 0, 1, 2
FINAL = {201, 402}  # a retrying client stops at these; 503 and 429 it retries with the same key


class Lane(threading.Thread):
    """One client on one kept-alive connection: posts its bodies in order until told to stop."""

    def __init__(self, port: int, label: str, key: str, bodies: list[str], *, retry: bool, phase: list[int],
                 stop: threading.Event):
        super().__init__(daemon=True)
        self.port, self.label, self.key, self.bodies, self.retry = port, label, key, bodies, retry
        self.phase, self.stop = phase, stop
        self.answers: list[tuple] = []  # (body index, phase sent, phase received, status, Retry-After, body)
        self.refused = threading.Event()  # a 402: the organization's quota is used up

    def run(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)  # a guard against a hang only
        index = 0
        idempotency_key = str(uuid.uuid4())
        while index < len(self.bodies) and not self.stop.is_set():
            headers = {"Authorization": f"Bearer {self.key}", "Content-Type": "application/json"}
            if self.retry:
                headers["Idempotency-Key"] = idempotency_key
            sent = self.phase[0]
            try:
                conn.request("POST", "/v1/records", body=self.bodies[index], headers=headers)
                response = conn.getresponse()
                answer = (response.status, response.getheader("Retry-After"), response.read())
            except (OSError, http.client.HTTPException) as exc:
                answer = (None, None, repr(exc).encode())
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
            self.answers.append((index, sent, self.phase[0], *answer))
            if answer[0] == 402:
                self.refused.set()
                return
            if not self.retry or answer[0] in FINAL:
                index, idempotency_key = index + 1, str(uuid.uuid4())
            # Paced, so the bodies last past the restart. The Free plan allows 100 requests a minute; a real
            # client would wait the Retry-After of a 503 (5 s), this one has no time for that.
            time.sleep(0.3 if self.label == "free" else 0.1 if answer[0] == 503 else 0.02)

    def count(self, status: int, sent_in: int | None = None) -> int:
        return sum(1 for _, sent, _, code, *_ in list(self.answers) if code == status and sent_in in (None, sent))


def test_a_restart_under_load_answers_503_and_loses_nothing(cluster):
    env = _env(cluster)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=600)
    made = json.loads(subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, text=True,
                                     capture_output=True, timeout=600).stdout.strip().splitlines()[-1])
    port = free_port()
    server = subprocess.Popen([str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2", "--no-control-socket"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    phase = [UP]
    stop = threading.Event()
    ent, free = made["ent"], made["free"]
    lanes = [Lane(port, "ent", ent["key"], ent["bodies"][lane::3], retry=lane < 2, phase=phase, stop=stop)
             for lane in range(3)]
    lanes.append(Lane(port, "free", free["key"], free["bodies"], retry=True, phase=phase, stop=stop))
    free_lane = lanes[-1]

    def wait(condition, what: str, cpu_budget: float) -> None:
        # Bounded by the CPU gunicorn spends serving, not by the clock (tests/waiting.py).
        wait_until(condition, pids=lambda: process_tree(server.pid), cpu_budget=cpu_budget, what=what,
                   alive=lambda: server.poll() is None and any(lane.is_alive() for lane in lanes),
                   details=lambda: repr([(lane.label, len(lane.answers), lane.answers[-1:]) for lane in lanes]))

    try:
        wait_for_port(port, process=server)
        for lane in lanes:
            lane.start()
        # Both workers serve and have their database connections (each lane's connection sits on one).
        wait(lambda: all(lane.count(201) >= 3 for lane in lanes[:3]), "first records stored", 120)
        phase[0] = DOWN
        cluster.stop("fast")
        # Down until every client has met it: each kept-alive connection, so each worker, answered a 503.
        wait(lambda: all(lane.count(503) for lane in lanes), "a 503 on every connection", 120)
        cluster.start()
        phase[0] = RESTARTED
        # Up until every client stored a record sent after the start and the Free organization is refused.
        wait(lambda: free_lane.refused.is_set() and all(lane.count(201, RESTARTED) for lane in lanes[:3]),
             "recovery after the start", 300)
    finally:
        stop.set()
        for lane in lanes:
            lane.join(timeout=300)
        server.send_signal(signal.SIGINT)
        server.wait(timeout=60)

    answers = [(lane, *answer) for lane in lanes for answer in lane.answers]
    statuses = {answer[4] for answer in answers}
    assert statuses <= {201, 402, 429, 503}, statuses  # no 500, no dropped connection
    unavailable = [answer for answer in answers if answer[4] == 503]
    # Only requests in progress while the database was away fail: sent before the start, answered after the stop.
    assert all(received >= DOWN and sent <= DOWN for _, _, sent, received, *_ in unavailable), unavailable
    assert all(json.loads(body)["error"] == "service_unavailable" and int(retry) > 0
               for *_, retry, body in unavailable)

    with psycopg.connect(cluster.url("restart")) as conn:
        for label, base in (("ent", 0), ("free", 490)):
            stored = {str(row[0]) for row in conn.execute("SELECT id FROM provenance_record WHERE org_id = %s",
                                                          [made[label]["org"]])}
            counted = conn.execute("SELECT COALESCE(SUM(signatures_used), 0) FROM billing_usagecounter "
                                   "WHERE org_id = %s", [made[label]["org"]]).fetchone()[0]
            audited = conn.execute("SELECT COUNT(*) FROM audit_auditevent WHERE org_id = %s AND type = 'sign'",
                                   [made[label]["org"]]).fetchone()[0]
            assert counted == base + len(stored) and audited == len(stored)  # none without its count and event
            own = [lane for lane in lanes if lane.label == label]
            retried = {json.loads(body)["record_id"] for lane in own if lane.retry
                       for *_, status, _, body in lane.answers if status == 201}
            plain = {json.loads(body)["record_id"] for lane in own if not lane.retry
                     for *_, status, _, body in lane.answers if status == 201}
            assert retried and retried | plain <= stored  # every 201 has its record
            # Each retried body has at most one record: as many records as 201s (a replay repeats its record id).
            assert sum(lane.count(201) for lane in own if lane.retry) == len(retried)
            # A record beyond the 201s comes only from the keyless client's bodies answered 503.
            keyless_503 = sum(lane.count(503) for lane in own if not lane.retry)
            assert len(stored - retried - plain) <= keyless_503
        assert counted == 500  # the Free organization's quota, exactly: it was refused with 402 at 500
