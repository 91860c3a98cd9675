"""Production settings with a signer service: the web processes (gunicorn, DEBUG off) are given no
key-encryption key and no log key, make generators and sign content through a real `manage.py signer`
(SIGNER_SERVICE=true, DEBUG off), and afterwards neither their environment nor their memory holds any key
material: not the signer's secrets, not the keys derived from them, not the generator's private seed. The
same scan finds the seed in the signer's memory, so it would find it in the web's. A web process given a
key-encryption key beside SIGNER_SOCKET refuses to start. PostgreSQL only (both processes share the test's
database)."""

import json
import os
import secrets
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import pytest
from dilithium_py.ml_dsa import ML_DSA_65
from django.db import connection

from core.hkdf import derive_key
from core.sealing import unseal
from generators.models import GeneratorKey
from provenance.models import Record
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.media import photo_bytes
from tests.own_services import free_port, wait_for_port
from tests.signer.processes import database_url_of_this_test
from tests.waiting import process_tree, wait_for_process

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the processes need the test's database"),
]
ROOT = Path(__file__).resolve().parents[2]
_CHUNK = 16 * 1024 * 1024
_PRODUCTION_SECRET_KEY = secrets.token_urlsafe(50)  # DEBUG off refuses the development one


def _production_env(settings, **values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items()
           if key not in ("KEY_ENCRYPTION_KEY", "LOG_SIGNING_KEY", "REDIS_URL", "SIGNER_SERVICE")}
    return {**env, "DATABASE_URL": database_url_of_this_test(), "DEBUG": "false", "SECRET_KEY": _PRODUCTION_SECRET_KEY,
            "DJANGO_SETTINGS_MODULE": "config.settings", "LOG_LEVEL": "WARNING", "MIGRATE_ON_START": "false",
            **values}


@pytest.fixture
def keys():
    """The deployment's secrets: the signer's key-encryption and log keys, the shared signer secret."""
    return {"kek": f"k9:{secrets.token_urlsafe(40)}", "log": secrets.token_urlsafe(40),
            "signer": secrets.token_urlsafe(40), "secrets": f"s1:{secrets.token_urlsafe(40)}"}


@pytest.fixture
def deployment(settings, tmp_path, keys):
    socket_path = str(tmp_path / "signer.sock")
    signer = subprocess.Popen([sys.executable, "manage.py", "signer"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=_production_env(
                                  settings, SIGNER_SERVICE="true", SIGNER_SOCKET=socket_path,
                                  KEY_ENCRYPTION_KEY=keys["kek"], LOG_SIGNING_KEY=keys["log"],
                                  SIGNER_SECRET=keys["signer"]))
    wait_for_process(lambda: Path(socket_path).exists(), signer, what="the signer's socket", cpu_budget=60)
    port = free_port()
    # The test process made the API key under its development token key (SECRET_KEY as `legacy`): the same here.
    web = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py",
                            "--bind", f"127.0.0.1:{port}", "--workers", "2", "--no-control-socket"], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_production_env(
                               settings, SIGNER_SOCKET=socket_path, SIGNER_SECRET=keys["signer"],
                               SECRET_ENCRYPTION_KEY=keys["secrets"], TOKEN_SIGNING_KEY=settings.SECRET_KEY,
                               ALLOWED_HOSTS="127.0.0.1"))
    try:
        wait_for_port(port, process=web)
        yield {"port": port, "web": web, "signer": signer}
    finally:
        for process in (web, signer):
            process.terminate()
            process.wait(timeout=60)


def _call(port: int, method: str, path: str, key: str, body: bytes, content_type: str) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, dict(response.headers) | {"body": response.read()}
    except urllib.error.HTTPError as error:
        return error.code, {"body": error.read()}


def _multipart(fields: dict[str, str], content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
             for name, value in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="content"; filename="a.png"\r\n'
                 "Content-Type: image/png\r\n\r\n".encode() + content + b"\r\n")
    return b"".join(parts) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _memory_holds(pid: int, needles: dict[str, bytes]) -> set[str]:
    """The names of the needles found anywhere in the readable memory of process `pid`."""
    found: set[str] = set()
    overlap = max(len(needle) for needle in needles.values())
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as memory:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("r") or line.rstrip().endswith(("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(part, 16) for part in fields[0].split("-"))
            tail = b""
            for offset in range(start, end, _CHUNK):
                try:
                    memory.seek(offset)
                    chunk = tail + memory.read(min(_CHUNK, end - offset))
                except (OSError, ValueError, OverflowError):
                    break
                found.update(name for name, needle in needles.items() if needle in chunk)
                tail = chunk[-overlap:]
    return found


def _environment_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(entry.decode(errors="replace").partition("=")[::2] for entry in raw if entry)


def _can_read_memory_of(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/mem", "rb", 0) as memory, open(f"/proc/{pid}/maps") as maps:
            memory.seek(int(maps.readline().split("-")[0], 16))
            memory.read(1)
        return True
    except OSError:
        return False


def test_the_web_processes_hold_no_key_material_after_making_keys_and_signing(deployment, keys):
    org = factories.make_org(plan="growth", name="Holds no keys")
    api_key = factories.make_api_key(org=org)
    status, made = _call(deployment["port"], "POST", "/v1/generators", api_key,
                         json.dumps({"name": "server-managed", "supported_formats": ["image"]}).encode(),
                         "application/json")
    assert status == 201, made["body"][:300]
    generator_id = json.loads(made["body"])["generator_id"]
    body, content_type = _multipart({"model": "m", "generator_id": generator_id}, photo_bytes("astronaut", "png"))
    status, signed = _call(deployment["port"], "POST", "/v1/sign", api_key, body, content_type)
    assert status == 201, signed["body"][:300]

    key = GeneratorKey.objects.get(generator_id=generator_id)
    record = Record.objects.get(pk=signed["X-Service-Record-Id"])
    assert ML_DSA_65.verify(bytes(key.public_key), signed_payload_bytes(**record.signed_payload),
                            bytes(record.signature))
    kek_id, kek_secret = keys["kek"].split(":", 1)
    seed = unseal(bytes(key.encrypted_private_key), {kek_id: derive_key(kek_secret, "generator-private-keys")},
                  associated_data=f"generator-key:{generator_id}:{key.kid}".encode())
    needles = {"generator seed": seed, "key-encryption key": kek_secret.encode(),
               "private-key sealing key": derive_key(kek_secret, "generator-private-keys"),
               "log signing key": keys["log"].encode(),
               "log Ed25519 seed": derive_key(keys["log"], "log-checkpoint-ed25519"),
               "log ML-DSA-65 seed": derive_key(keys["log"], "log-checkpoint-ml-dsa-65")}

    web_pids = process_tree(deployment["web"].pid)
    assert len(web_pids) >= 3  # the master and its two workers
    if not _can_read_memory_of(deployment["signer"].pid):
        pytest.skip("this kernel does not let the test read its children's memory (ptrace restrictions)")
    for pid in web_pids:
        environment = _environment_of(pid)
        assert "KEY_ENCRYPTION_KEY" not in environment and "LOG_SIGNING_KEY" not in environment
        assert not {kek_secret, keys["log"]} & set(environment.values())
        assert _memory_holds(pid, needles) == set(), f"web process {pid} holds key material"
        # The control of the scan itself: what the web process does hold (the secret it talks to the signer with).
        assert _memory_holds(pid, {"signer secret": keys["signer"].encode()}) == {"signer secret"}
    # And the control of the needle: the same scan finds the seed where it is used.
    assert "generator seed" in _memory_holds(deployment["signer"].pid, needles)


def test_a_web_process_given_a_key_encryption_key_beside_a_signer_refuses_to_start(settings, keys):
    for given in ({"KEY_ENCRYPTION_KEY": keys["kek"]}, {"LOG_SIGNING_KEY": keys["log"]}):
        checked = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, capture_output=True, text=True,
                                 timeout=300, env=_production_env(
                                     settings, SIGNER_SOCKET="/run/svc/signer.sock", SIGNER_SECRET=keys["signer"],
                                     SECRET_ENCRYPTION_KEY=keys["secrets"], TOKEN_SIGNING_KEY="t" * 40, **given))
        assert checked.returncode != 0
        assert f"Remove {next(iter(given))} from this process's environment" in checked.stderr


def test_a_signer_outside_its_own_environment_refuses_to_start(settings, keys):
    refused = subprocess.run([sys.executable, "manage.py", "signer", "--socket", "/tmp/never.sock"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300, env=_production_env(
                                 settings, SIGNER_SECRET=keys["signer"], KEY_ENCRYPTION_KEY=keys["kek"],
                                 LOG_SIGNING_KEY=keys["log"], TOKEN_SIGNING_KEY="t" * 40))
    assert refused.returncode != 0 and "set SIGNER_SERVICE=true" in refused.stderr
