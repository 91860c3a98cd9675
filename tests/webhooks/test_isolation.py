"""One organization's hanging endpoint beside another organization's traffic, on a real gunicorn
(gunicorn.conf.py: 2 workers of 1 thread, DEBUG off) and real receivers in this process.

Organization A subscribes `verify.attempted` at a receiver path that accepts and never answers, and
at a good one. Three anonymous verifications of A's content hand their deliveries off; while the
hanging receiver still holds all three connections open, every one of organization B's verifications
is answered (by ordering and counts, never by the clock). After the timeout the three hanging
deliveries are logged failed and counted once each; the good endpoint's are logged success. A
worker killed mid-delivery leaves its deliveries recorded as having no outcome, uncounted; a worker
stopped gracefully (SIGTERM) settles its hanging delivery before it exits.
The throughput and p99 figures of the same setup: bench/webhook_isolation.py.
"""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests
from PIL import Image

from tests.media import encode
from tests.proc_sockets import child_pids, free_port
from tests.production_env import production_env
from tests.waiting import process_tree, stop_process, wait_until
from tests.webhooks.receiver import Receiver

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
TIMEOUT = 12  # WEBHOOK_TIMEOUT_SECONDS of this server: long enough that B's requests finish well inside it
SETUP = """
import json, os, django
django.setup()
from tests import factories
port = os.environ["RECEIVER_PORT"]
out = {}
for label in ("a", "b"):
    org = factories.make_org(plan="scale", name=label)
    factories.make_user(org=org)
    generator = factories.make_generator(org=org, formats=["image"])
    hooks = {}
    for path in ((f"/{label}/hang", f"/{label}/good") if label == "a" else (f"/{label}/good",)):
        endpoint, secret = factories.make_webhook(org=org, url=f"http://127.0.0.1:{port}{path}",
                                                  events=["verify.attempted"])
        hooks[path] = {"id": str(endpoint.pk), "secret": secret}
    out[label] = {"key": factories.make_api_key(org=org), "generator": str(generator.pk), "hooks": hooks}
print(json.dumps(out))
"""


@pytest.fixture(autouse=True)
def _public_dns():
    """This module's clients resolve nothing but 127.0.0.1 and need the real lookup (conftest fakes it)."""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(base URL, setup, database path, master pid, receiver): gunicorn on a throwaway SQLite database."""
    if not GUNICORN.exists():
        pytest.skip(f"gunicorn is not installed at {GUNICORN}")
    receiver = Receiver()
    folder = tmp_path_factory.mktemp("isolation")
    database = folder / "db.sqlite3"
    env = production_env("isolation", f"sqlite:///{database}",
                         WEBHOOK_ALLOW_PRIVATE_TARGETS="true", WEBHOOK_TIMEOUT_SECONDS=str(TIMEOUT),
                         VERIFY_RATE_PER_MINUTE="100000", RECEIVER_PORT=str(receiver.port), WEB_CONCURRENCY="2")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=300)
    made = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True,
                          text=True, timeout=300)
    setup = json.loads(made.stdout.strip().splitlines()[-1])
    for label in ("a", "b"):
        for path, hook in setup[label]["hooks"].items():
            receiver.expect_secret(path, hook["secret"])
    receiver.respond("/a/hang", delay=3600)
    port, log = free_port(), folder / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py",
                                    "--bind", f"127.0.0.1:{port}", "--log-level", "info", "--no-control-socket"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: log.read_text(errors="replace").count("Worker ready") >= 2,
                   pids=lambda: process_tree(process.pid), cpu_budget=120, what="two gunicorn workers ready",
                   alive=lambda: process.poll() is None, details=lambda: log.read_text(errors="replace"))
        yield f"http://127.0.0.1:{port}", setup, database, process.pid, receiver
    finally:
        stop_process(process, grace=30)
        receiver.close()


def _signed(url: str, org: dict, seed: int) -> bytes:
    response = requests.post(f"{url}/v1/sign", headers={"Authorization": f"Bearer {org['key']}"},
                             data={"generator_id": org["generator"], "model": "m"},
                             files={"content": ("a.jpg", _variant(seed))}, timeout=120)
    assert response.status_code == 201, response.content[:300]
    return response.content


def _variant(seed: int) -> bytes:
    image = Image.effect_mandelbrot((320, 240), (-2.0 + seed / 50, -1.2, 1.0, 1.2), 60).convert("RGB")
    return encode(image, "jpeg", quality=90)


def _verify(url: str, content: bytes) -> int:
    response = requests.post(f"{url}/v1/verify", files={"content": ("v.jpg", content)}, timeout=300)
    return response.status_code


def _rows(database: Path, endpoint_id: str) -> list[tuple]:
    with sqlite3.connect(database) as conn:
        return conn.execute("SELECT status, response_code, error, pending FROM webhooks_webhookdelivery "
                            "WHERE endpoint_id = ? ORDER BY created_at", (endpoint_id.replace("-", ""),)).fetchall()


def _failures(database: Path, endpoint_id: str) -> int:
    with sqlite3.connect(database) as conn:
        return conn.execute("SELECT consecutive_failures FROM webhooks_webhookendpoint WHERE id = ?",
                            (endpoint_id.replace("-", ""),)).fetchone()[0]


def _logged(url: str, org: dict, path: str) -> list[dict]:
    response = requests.get(f"{url}/v1/webhooks/{org['hooks'][path]['id']}/deliveries",
                            headers={"Authorization": f"Bearer {org['key']}"}, timeout=60)
    assert response.status_code == 200, response.content[:300]
    return response.json()["deliveries"]


def test_a_hanging_endpoint_holds_no_other_organization_and_is_logged_honestly(served):
    url, setup, database, master, receiver = served
    a, b = setup["a"], setup["b"]
    a_content, b_content = _signed(url, a, 1), _signed(url, b, 2)
    workers = lambda: process_tree(master)  # noqa: E731

    # Three anonymous verifications of A's content, each from its own client, as in the attack.
    answered_a: list[int] = []
    clients = [threading.Thread(target=lambda: answered_a.append(_verify(url, a_content))) for _ in range(3)]
    for client in clients:
        client.start()
    # Both workers' worth of A's deliveries are at the hanging receiver (before the fix: both workers held).
    wait_until(lambda: receiver.held("/a/hang") >= 2, pids=workers, cpu_budget=60,
               what="A's deliveries reach the hanging receiver")

    # B's verifications, one after another: each needs a free worker.
    answered_b = [_verify(url, b_content) for _ in range(10)]
    holding_after_b = receiver.held("/a/hang")
    assert answered_b == [200] * 10
    assert holding_after_b == 3, "B's requests waited for A's hanging deliveries"
    for client in clients:
        client.join(timeout=300)
    assert answered_a == [200] * 3
    assert len(receiver.received("/b/good")) >= 1

    # The hanging deliveries end at the timeout: failed, no response code, counted once each.
    hang, good = a["hooks"]["/a/hang"]["id"], a["hooks"]["/a/good"]["id"]
    wait_until(lambda: all(not pending for *_, pending in _rows(database, hang)) and len(_rows(database, hang)) == 3,
               pids=workers, cpu_budget=60, what="the hanging deliveries are settled")
    assert [(status, code) for status, code, *_ in _rows(database, hang)] == [("failed", None)] * 3
    assert _failures(database, hang) == 3
    assert [(entry["status"], entry["response_code"]) for entry in _logged(url, a, "/a/hang")] == [("failed", None)] * 3
    assert all(entry["latency_ms"] >= TIMEOUT * 1000 - 100 for entry in _logged(url, a, "/a/hang"))
    assert [(entry["status"], entry["response_code"]) for entry in _logged(url, a, "/a/good")] == [("success", 200)] * 3
    assert _failures(database, good) == 0
    assert len(receiver.received("/a/good")) == 3


def test_a_worker_killed_mid_delivery_leaves_an_honest_uncounted_record(served):
    url, setup, database, master, receiver = served
    a = setup["a"]
    hang = a["hooks"]["/a/hang"]["id"]
    content = _signed(url, a, 3)
    before, failures_before = len(_rows(database, hang)), _failures(database, hang)
    already = receiver.held("/a/hang")
    assert _verify(url, content) == 200
    wait_until(lambda: receiver.held("/a/hang") > already, pids=lambda: process_tree(master), cpu_budget=60,
               what="the delivery reaches the hanging receiver")
    rows = _rows(database, hang)
    assert len(rows) == before + 1 and rows[-1][3]  # written before it was sent, its outcome still open
    for pid in child_pids(master):
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: receiver.held("/a/hang") == already, pids=lambda: process_tree(master), cpu_budget=60,
               what="the killed worker's connection closes")
    status, code, error, pending = _rows(database, hang)[-1]
    assert (status, code, pending) == ("failed", None, 1)
    assert "no outcome" in error
    assert _failures(database, hang) == failures_before  # never counted: nobody knows how it ended
    # In the log it is not shown while it could still be in flight, and never as a success.
    assert all(entry["status"] == "failed" for entry in _logged(url, a, "/a/hang"))


def test_a_worker_stopped_gracefully_settles_its_deliveries_before_it_exits(served):
    url, setup, database, master, receiver = served
    a = setup["a"]
    hang = a["hooks"]["/a/hang"]["id"]
    content = _signed(url, a, 4)
    failures_before = _failures(database, hang)
    already = receiver.held("/a/hang")
    assert _verify(url, content) == 200
    wait_until(lambda: receiver.held("/a/hang") > already, pids=lambda: process_tree(master), cpu_budget=60,
               what="the delivery reaches the hanging receiver")
    for pid in child_pids(master):
        os.kill(pid, signal.SIGTERM)  # as a reload or max_requests stops a worker
    wait_until(lambda: not _rows(database, hang)[-1][3], pids=lambda: process_tree(master), cpu_budget=60,
               what="the stopping worker settles its delivery")
    status, code, error, _ = _rows(database, hang)[-1]
    assert (status, code, error) == ("failed", None, "timed out")
    assert _failures(database, hang) == failures_before + 1
