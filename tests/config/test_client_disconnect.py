"""A signing upload whose client disconnects halfway, against a real gunicorn (gunicorn.conf.py, DEBUG off).

The socket sends POST /v1/sign's head and half its multipart body, then closes. Nothing may be
stored or counted: no record, no usage, no audit event; the worker serves the next request. The same
fault at load, on PostgreSQL: `bench/faults.py disconnect`.
"""

import io
import json
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.proc_sockets import free_port
from tests.production_env import production_env
from tests.waiting import stop_process, wait_for_process

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
SETUP = """
import json, django
django.setup()
from tests import factories
org = factories.make_org(plan="scale", name="disconnect")
generator = factories.make_generator(org=org, formats=["image"])
print(json.dumps({"key": factories.make_api_key(org=org), "generator": str(generator.pk)}))
"""


def _jpeg() -> bytes:
    image = Image.effect_mandelbrot((800, 600), (-2.0, -1.2, 1.0, 1.2), 100).convert("RGB")
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """gunicorn with production settings on a throwaway SQLite database; yields (port, setup, database, log)."""
    if not GUNICORN.exists():
        pytest.skip(f"gunicorn is not installed at {GUNICORN}")
    folder = tmp_path_factory.mktemp("disconnect")
    database = folder / "db.sqlite3"
    env = production_env("disconnect", f"sqlite:///{database}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=600)
    made = subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True,
                          text=True, timeout=600)
    setup = json.loads(made.stdout.strip().splitlines()[-1])
    port, log = free_port(), folder / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--graceful-timeout", "2", "--log-level", "info", "--no-control-socket"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    # Bounded by the CPU gunicorn spends starting, not by the clock (a busy machine only makes it longer).
    wait_for_process(lambda: "Worker ready" in log.read_text(errors="replace"), process, what="gunicorn start",
                     details=lambda: log.read_text(errors="replace"))
    yield port, setup, database, log
    stop_process(process)


def _sign_request(setup: dict, content: bytes) -> bytes:
    boundary = "cutoff"
    body = (f'--{boundary}\r\nContent-Disposition: form-data; name="generator_id"\r\n\r\n{setup["generator"]}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.jpg"\r\n\r\n'
            ).encode() + content + f"\r\n--{boundary}--\r\n".encode()
    head = (f"POST /v1/sign HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {setup['key']}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode()
    return head + body


def _counts(database: Path) -> tuple[int, int, int]:
    with sqlite3.connect(database) as conn:
        return tuple(conn.execute(sql).fetchone()[0] for sql in (
            "SELECT COUNT(*) FROM provenance_record",
            "SELECT COALESCE(SUM(signatures_used), 0) FROM billing_usagecounter",
            "SELECT COUNT(*) FROM audit_auditevent WHERE type = 'sign'"))


def _send_all(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_an_upload_cut_off_halfway_stores_and_counts_nothing(server):
    port, setup, database, log = server
    request = _sign_request(setup, _jpeg())
    head_end = request.index(b"\r\n\r\n") + 4
    for cut_at in (head_end + (len(request) - head_end) // 2, head_end + 10, len(request) - 20):
        with socket.create_connection(("127.0.0.1", port)) as sock:
            sock.sendall(request[:cut_at])
            time.sleep(0.2)  # the worker is reading the body when the client goes
    time.sleep(1.0)
    assert _counts(database) == (0, 0, 0)

    # The worker is free and the same upload, whole, is signed and counted once.
    answer = _send_all(port, request)
    assert answer.startswith(b"HTTP/1.1 201"), answer[:300]
    assert _counts(database) == (1, 1, 1)
    assert "Traceback" not in log.read_text(errors="replace")
