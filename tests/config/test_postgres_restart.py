"""PostgreSQL restarted under a load of POST /v1/records, through gunicorn (gunicorn.conf.py, DEBUG off).

A PostgreSQL cluster of our own (never the shared one): 4 clients post distinct client-signed
records; the cluster is stopped (`pg_ctl stop -m fast`, every session ended) and started again.
While it is down the answers are 503 `service_unavailable` with Retry-After, never a 500 or a hang;
afterwards every 201 has its record, every record its usage count and audit event, and the Free
organization's quota is exact. The longer run with its figures: `bench/faults.py postgres`.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.own_services import OwnPostgres, free_port, postgres_bin, wait_for_port

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
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "REDIS_URL")}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", DEBUG="false", ALLOWED_HOSTS="127.0.0.1",
               SECRET_KEY="restart-test-secret-key-0123456789-abcdefghijklmnop", KEY_ENCRYPTION_KEY="restart-kek",
               TOKEN_SIGNING_KEY="restart-tsk", LOG_SIGNING_KEY="restart-lsk", DATABASE_URL=pg.url("restart"),
               LOG_LEVEL="ERROR")
    return env


def _post_all(port: int, jobs: list[tuple[str, str, str]], answers: list, stop: threading.Event) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for label, key, body in jobs:
        if stop.is_set():
            return
        sent = time.monotonic()
        try:
            conn.request("POST", "/v1/records", body=body,
                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            response = conn.getresponse()
            body = response.read()
            answers.append((label, sent, time.monotonic(), response.status, response.getheader("Retry-After"), body))
        except (OSError, http.client.HTTPException) as exc:
            answers.append((label, sent, time.monotonic(), None, None, repr(exc).encode()))
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        if label == "free":
            time.sleep(0.3)  # the Free plan allows 100 requests a minute
        elif answers[-1][3] == 503:
            time.sleep(0.1)  # a client backing off (Retry-After says 5 s; the test has no time for that)
        else:
            time.sleep(0.02)  # paced, so the bodies last past the restart however fast the machine is


def test_a_restart_under_load_answers_503_and_loses_nothing(cluster):
    env = _env(cluster)
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=300)
    made = json.loads(subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, text=True,
                                     capture_output=True, timeout=300).stdout.strip().splitlines()[-1])
    port = free_port()
    server = subprocess.Popen([str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind",
                               f"127.0.0.1:{port}", "--workers", "2", "--no-control-socket"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    answers: list = []
    stop = threading.Event()
    try:
        wait_for_port(port)
        ent = made["ent"]
        lanes = [[("ent", ent["key"], body) for body in ent["bodies"][lane::3]] for lane in range(3)]
        lanes.append([("free", made["free"]["key"], body) for body in made["free"]["bodies"]])
        threads = [threading.Thread(target=_post_all, args=(port, lane, answers, stop)) for lane in lanes]
        for thread in threads:
            thread.start()
        time.sleep(4)  # a fresh worker's first requests are slow (imports, first connections)
        down_at = time.monotonic()
        cluster.stop("fast")
        time.sleep(2)
        cluster.start()
        up_at = time.monotonic()
        # Keep the load on until a request sent after the start is stored (a loaded CI host can take seconds
        # to reconnect both workers), at most 30 s; the assertion below says whether it happened.
        deadline = up_at + 30
        while time.monotonic() < deadline and not any(
                sent > up_at and status == 201 for _, sent, _, status, _, _ in list(answers)):
            time.sleep(0.2)
        time.sleep(1)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)

    statuses = {answer[3] for answer in answers}
    assert statuses <= {201, 402, 429, 503}, statuses  # no 500, no dropped connection
    unavailable = [answer for answer in answers if answer[3] == 503]
    assert unavailable, "no request met the stopped database"
    # Only requests in progress while the database was away (answered after the stop, sent before the
    # start) may fail; a worker's first request can wait seconds here, so the send time alone says little.
    assert all(received >= down_at and sent <= up_at for _, sent, received, _, _, _ in unavailable)
    assert all(json.loads(body)["error"] == "service_unavailable" and int(retry) > 0
               for *_, retry, body in unavailable)
    assert any(sent > up_at and status == 201 for _, sent, _, status, _, _ in answers), "no recovery after the start"

    with psycopg.connect(cluster.url("restart")) as conn:
        for label, base in (("ent", 0), ("free", 490)):
            acknowledged = {json.loads(body)["record_id"] for lab, _, _, status, _, body in answers
                            if lab == label and status == 201}
            stored = {str(row[0]) for row in conn.execute("SELECT id FROM provenance_record WHERE org_id = %s",
                                                          [made[label]["org"]])}
            counted = conn.execute("SELECT COALESCE(SUM(signatures_used), 0) FROM billing_usagecounter "
                                   "WHERE org_id = %s", [made[label]["org"]]).fetchone()[0]
            audited = conn.execute("SELECT COUNT(*) FROM audit_auditevent WHERE org_id = %s AND type = 'sign'",
                                   [made[label]["org"]]).fetchone()[0]
            assert acknowledged, f"{label}: no record acknowledged"
            assert acknowledged <= stored  # every 201 has its record
            assert counted == base + len(stored) and audited == len(stored)  # none without its count
        assert counted == 500  # the Free organization's quota, exactly
