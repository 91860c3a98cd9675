"""The signer service as a real separate process (`manage.py signer`) on its own migrated database: it signs
for an active generator of the organization the request names, and refuses forgeries, replays, revoked or
foreign generators and unknown keys; a signer that is not there is a 503 for the caller."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dilithium_py.ml_dsa import ML_DSA_65

from core import signer_protocol as protocol
from core.errors import ServiceUnavailable
from core.hkdf import derive_key
from core.signer_client import SignerRefused, signature_request
from tests.waiting import wait_for_process

ROOT = Path(__file__).resolve().parents[2]
SECRET_KEY = "signer-test-secret-key-0123456789abcdef-0123456789"

CREATE = """
import json
from tests import factories
from generators.services import generator_register
org, other = factories.make_org(name="Signer Org"), factories.make_org(name="Other Org")
generator = generator_register(org=org, name="g", public_key=None)
hybrid = generator_register(org=org, name="h", public_key=None, c2pa_signing="hybrid")
key = generator.keys.get()
print(json.dumps({"org": str(org.pk), "other": str(other.pk), "generator": str(generator.pk), "kid": key.kid,
                  "public_key": bytes(key.public_key).hex(), "hybrid": str(hybrid.pk),
                  "hybrid_kid": hybrid.keys.get().kid}))
"""


def _env(folder: Path) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{folder / 'signer.sqlite3'}", "DEBUG": "true",
           "SECRET_KEY": SECRET_KEY, "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("REDIS_URL", None)
    return env


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True,
                          text=True, timeout=600).stdout


@pytest.fixture(scope="module")
def signer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("signer")
    env = _env(folder)
    _manage(env, "migrate", "--noinput", "-v0")
    _manage(env, "createcachetable")
    facts = json.loads(_manage(env, "shell", "-c", CREATE).strip().splitlines()[-1])
    path = str(folder / "signer.sock")
    process = subprocess.Popen([sys.executable, "manage.py", "signer", "--socket", path], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_process(lambda: Path(path).exists(), process, what="the signer's socket", cpu_budget=60)
    secret = derive_key(SECRET_KEY, "signer")
    yield {**facts, "path": path, "secret": secret, "env": env, "process": process}
    process.terminate()
    process.wait(timeout=60)


def _sign(signer, **changes) -> bytes:
    values = {"path": signer["path"], "secret": signer["secret"], "org_id": signer["org"],
              "generator_id": signer["generator"], "kid": signer["kid"], "algorithm": "ml-dsa-65",
              "purpose": "record", "message": b"the signed payload"}
    return signature_request(**{**values, **changes})


def test_the_signer_signs_for_an_active_generator_of_the_organization(signer):
    signature = _sign(signer, message=b"payload one")
    assert ML_DSA_65.verify(bytes.fromhex(signer["public_key"]), b"payload one", signature)
    es256 = _sign(signer, generator_id=signer["hybrid"], kid=signer["hybrid_kid"], algorithm="es256",
                  purpose="c2pa-claim", message=b"claim")
    assert len(es256) == 64  # r || s


@pytest.mark.parametrize(("changes", "error"), [
    ({"org_id": "other"}, "forbidden"),
    ({"kid": "not-a-kid"}, "not_found"),
    ({"generator_id": "00000000-0000-0000-0000-000000000000"}, "not_found"),
    ({"algorithm": "es256"}, "refused"),  # a record is ML-DSA-65; and this generator is not hybrid
])
def test_what_policy_forbids_is_refused(signer, changes, error):
    if changes.get("org_id") == "other":
        changes = {"org_id": signer["other"]}
    with pytest.raises(SignerRefused) as refused:
        _sign(signer, **changes)
    assert refused.value.error == error


def test_a_forged_or_replayed_request_is_refused(signer):
    import dataclasses
    import socket

    with pytest.raises(ServiceUnavailable):  # another secret: the hello does not authenticate, nothing is sent
        signature_request(path=signer["path"], secret=b"f" * 32, org_id=signer["org"],
                          generator_id=signer["generator"], kid=signer["kid"], algorithm="ml-dsa-65",
                          purpose="record", message=b"m")
    request = dataclasses.replace(protocol.SignRequest.new(
        org_id=signer["org"], generator_id=signer["generator"], kid=signer["kid"], algorithm="ml-dsa-65",
        purpose="record", message=b"m", now_ms=int(time.time() * 1000)), sequence=1)

    def connect() -> tuple[socket.socket, bytes]:
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(30)
        connection.connect(signer["path"])
        return connection, protocol.open_hello(protocol.read_frame(connection), signer["secret"])

    def answer(connection: socket.socket):
        return protocol.open_response(protocol.read_frame(connection), signer["secret"],
                                      request_id=request.request_id)

    first, challenge = connect()
    with first:
        sealed = protocol.seal_request(request, signer["secret"], challenge=challenge)
        protocol.write_frame(first, sealed)
        assert answer(first).signature is not None
        protocol.write_frame(first, sealed)  # the same frame again on its connection
        assert answer(first).error == "replayed"
        # A new request with a sequence number that did not grow is a replay too.
        protocol.write_frame(first, protocol.seal_request(request, signer["secret"], challenge=challenge))
        assert answer(first).error == "replayed"
    second, other_challenge = connect()
    with second:
        assert other_challenge != challenge
        protocol.write_frame(second, sealed)  # copied to another connection: it does not authenticate there
        with pytest.raises(EOFError):  # closed without an answer
            protocol.read_frame(second)


def test_a_revoked_generator_cannot_sign_whoever_asks(signer):
    _manage(signer["env"], "shell", "-c", "from generators.models import Generator; from generators.services "
            f"import generator_revoke; generator_revoke(generator=Generator.objects.get(pk='{signer['hybrid']}'))")
    with pytest.raises(SignerRefused) as refused:
        _sign(signer, generator_id=signer["hybrid"], kid=signer["hybrid_kid"], purpose="c2pa-claim")
    assert refused.value.error == "revoked"


def test_a_signer_that_is_not_there_is_a_503(tmp_path):
    with pytest.raises(ServiceUnavailable):
        signature_request(path=str(tmp_path / "nobody.sock"), secret=b"s" * 32, org_id="o", generator_id="g",
                          kid="k", algorithm="ml-dsa-65", purpose="record", message=b"m")


@pytest.mark.django_db
def test_readyz_sees_the_running_signer(signer, client, settings):
    settings.SIGNER_SOCKET = signer["path"]
    response = client.get("/readyz")
    assert response.status_code == 200 and response.json()["checks"]["signer"] == {"status": "ok"}


def test_the_signer_makes_a_generator_key_sealed_under_its_own_key(signer):
    from core.signer_client import signer_call
    from record_format import crypto

    generator_id = "5b0c2a52-8f0e-4a4e-9d0c-000000000001"  # not committed anywhere yet, as at registration
    made = signer_call("generate-key", org_id=signer["org"], generator_id=generator_id, path=signer["path"],
                       secret=signer["secret"], args={"backend": ""})
    assert made["backend"] == "sealed" and made["reference"] == ""
    assert crypto.is_valid_public_key(made["public_key"]) and made["kid"] == crypto.key_id(made["public_key"])
    assert len(made["sealed"]) > 32 and made["public_key"] not in made["sealed"]
    for args, generator, error in (({"backend": "no-such-backend"}, generator_id, "bad_request"),
                                   ({}, "not-a-uuid", "bad_request")):
        with pytest.raises(SignerRefused) as refused:
            signer_call("generate-key", org_id=signer["org"], generator_id=generator, path=signer["path"],
                        secret=signer["secret"], args=args)
        assert refused.value.error == error


def test_a_kept_connection_to_a_signer_that_restarted_is_replaced_without_an_error(signer, tmp_path):
    from core import signer_client

    path = str(tmp_path / "restarting.sock")

    def start() -> subprocess.Popen:
        Path(path).unlink(missing_ok=True)  # a killed signer leaves its socket file behind
        process = subprocess.Popen([sys.executable, "manage.py", "signer", "--socket", path], cwd=ROOT,
                                   env=signer["env"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_process(lambda: Path(path).exists(), process, what="the signer's socket", cpu_budget=60)
        return process

    first = start()
    try:
        _sign(signer, path=path, message=b"before the restart")
        kept = signer_client._connections.open[path]
        first.kill()
        first.wait(timeout=60)
        second = start()
    finally:
        first.kill()
    try:
        signature = _sign(signer, path=path, message=b"after the restart")
        assert ML_DSA_65.verify(bytes.fromhex(signer["public_key"]), b"after the restart", signature)
        assert signer_client._connections.open[path] is not kept  # a new connection, made once
    finally:
        second.terminate()
        second.wait(timeout=60)
