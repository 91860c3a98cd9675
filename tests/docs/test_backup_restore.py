"""The restore drill of docs/operations.md, on the test's PostgreSQL: `pg_dump` a database holding a
server-managed generator, a signed file's record in the transparency log and a webhook endpoint;
`pg_restore` it into a new database; then a server on the restored copy, with the same secrets, signs with
the sealed private key, verifies the file signed before the dump, and publishes the same log keys and
tree. With another KEY_ENCRYPTION_KEY, the same restored copy cannot sign (503 `key_unavailable`): the
sealed keys are worth nothing without the key ring."""

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
import requests
from django.db import connection

from tests.factories import make_api_key, make_generator, make_org, make_user, make_webhook
from tests.log_scan import watch_file
from tests.media import photo_bytes
from tests.proc_sockets import free_port
from tests.waiting import process_tree, serving, wait_until

PROJECT = Path(__file__).resolve().parents[2]
STARTUP_CPU_SECONDS = 120  # CPU seconds to start serving (tests/waiting.py)

pytestmark = [pytest.mark.postgres,
              pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL dump and restore"),
              pytest.mark.skipif(shutil.which("pg_dump") is None or shutil.which("pg_restore") is None,
                                 reason="needs pg_dump and pg_restore")]


def _url(name: str) -> str:
    params = connection.settings_dict
    password = f":{params['PASSWORD']}" if params["PASSWORD"] else ""
    return f"postgres://{params['USER']}{password}@{params['HOST'] or '127.0.0.1'}:{params['PORT'] or 5432}/{name}"


@pytest.fixture
def restored_database(tmp_path):
    """The name of a new database, dropped afterwards."""
    name = f"{connection.settings_dict['NAME']}_restored"[:63]
    with psycopg.connect(_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield name
    with psycopg.connect(_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Server:
    """`manage.py runserver` on a database URL, in the development mode the tests run in."""

    def __init__(self, database_url: str, log_path: Path, **environment: str):
        env = {name: value for name, value in os.environ.items() if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
        env.update(DEBUG="true", DATABASE_URL=database_url, **environment)
        self.base = f"http://127.0.0.1:{free_port()}"
        watch_file(log_path)
        self.log_path, self.log = log_path, log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", "--noreload", self.base.removeprefix("http://")],
            cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        wait_until(lambda: serving(f"{self.base}/healthz"), pids=lambda: process_tree(self.process.pid),
                   cpu_budget=STARTUP_CPU_SECONDS, what=f"runserver answering on {self.base}",
                   alive=lambda: self.process.poll() is None, details=lambda: log_path.read_text()[-3000:])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _manage(database_url: str, *args: str) -> subprocess.CompletedProcess:
    env = {name: value for name, value in os.environ.items() if name not in ("REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    env.update(DEBUG="true", DATABASE_URL=database_url)
    return subprocess.run([sys.executable, "manage.py", *args], cwd=PROJECT, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=600)


def test_a_dump_restored_into_a_new_database_signs_verifies_and_keeps_the_log(transactional_db, api_client,
                                                                             restored_database, tmp_path):
    from transparency.services import log_sequence

    org = make_org(plan="growth")
    make_user(org=org)
    key = make_api_key(org=org)
    generator = make_generator(org=org, formats=["image"])
    # Subscribed to an event nothing here causes: no delivery is ever attempted, to any address.
    _endpoint, webhook_secret = make_webhook(org=org, events=["generator.revoked"])
    api_client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    signed = api_client.post("/v1/sign", {"content": _upload(photo_bytes()), "model": "m-1",
                                          "generator_id": str(generator.id)}, format="multipart")
    assert signed.status_code == 201, signed.content[:500]
    signed_file = b"".join(signed.streaming_content) if signed.streaming else signed.content
    assert log_sequence() == 1
    log_keys = api_client.get("/v1/log/keys").json()

    dump = tmp_path / "provenance.dump"
    source = _url(connection.settings_dict["NAME"])
    subprocess.run(["pg_dump", "--format=custom", f"--file={dump}", source], check=True, timeout=600)
    listing = subprocess.run(["pg_restore", "--list", str(dump)], check=True, capture_output=True, text=True)
    assert "provenance_record" in listing.stdout and "generators_generatorkey" in listing.stdout
    restored = _url(restored_database)
    subprocess.run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={restored}", str(dump)],
                   check=True, timeout=600)

    assert _manage(restored, "migrate", "--check").returncode == 0  # the schema is the code's
    unsealed = _manage(restored, "shell", "-c",
                       "import hashlib; from webhooks.models import WebhookEndpoint; "
                       "from webhooks.services import webhook_secret; "
                       "print(hashlib.sha256(webhook_secret(WebhookEndpoint.objects.get()).encode()).hexdigest())")
    expected = hashlib.sha256(webhook_secret.encode()).hexdigest()
    assert unsealed.stdout.strip().splitlines()[-1] == expected, unsealed.stderr[-2000:]

    server = Server(restored, tmp_path / "restored.log")
    try:
        auth = {"Authorization": f"Bearer {key}"}
        again = requests.post(f"{server.base}/v1/sign", headers=auth, timeout=60,
                              files={"content": ("photo.jpg", photo_bytes(name="coffee"))},
                              data={"model": "m-1", "generator_id": str(generator.id)})
        assert again.status_code == 201, again.text[:500]  # the sealed private key unsealed
        verified = requests.post(f"{server.base}/v1/verify", files={"content": ("signed.jpg", signed_file)},
                                 timeout=60).json()
        assert verified["authentic"] is True and verified["token_source"] == "xmp"  # the token key is the same
        assert verified["log"]["status"] == "integrated"
        assert requests.get(f"{server.base}/v1/log/keys", timeout=30).json() == log_keys
        assert requests.get(f"{server.base}/v1/log/checkpoint", timeout=30).text.splitlines()[1] == "1"
    finally:
        server.stop()

    other_key = Server(restored, tmp_path / "other-key.log", KEY_ENCRYPTION_KEY="k9:" + "another-secret-" * 3)
    try:
        refused = requests.post(f"{other_key.base}/v1/sign", headers={"Authorization": f"Bearer {key}"}, timeout=60,
                                files={"content": ("photo.jpg", photo_bytes(name="coffee"))},
                                data={"model": "m-1", "generator_id": str(generator.id)})
        assert refused.status_code == 503 and refused.json()["error"] == "key_unavailable"
    finally:
        other_key.stop()


def _upload(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("photo.jpg", data, content_type="image/jpeg")
