"""The signer's checkpoint purpose in this process (transparency/checkpoint_policy.py through
signer.service.request_sign), the published keys, and a log whose checkpoint lags its tiles while a
signer service is unreachable: readers keep serving the signed tree, and the next round signs the rest."""

import base64
import time

import pytest

from core.signer_protocol import SignRequest, SignResponse
from provenance.models import Record
from signer.service import request_sign
from tests.transparency import rfc9162
from tests.transparency.logs import decode, leaf_from_api, make_key, make_records
from transparency import merkle, note, services
from transparency.keys import log_keys_publish, log_signers
from transparency.models import LogKey, LogState

pytestmark = pytest.mark.django_db


def _checkpoint_request(message: bytes, *, algorithm: str = "ed25519", org_id: str = "") -> SignResponse:
    return request_sign(SignRequest.new(org_id=org_id, generator_id="", algorithm=algorithm, purpose="checkpoint",
                                        message=message, now_ms=int(time.time() * 1000)))


def _text(origin: str, size: int, root: bytes) -> bytes:
    return note.Checkpoint(origin=origin, tree_size=size, root_hash=root).text().encode()


@pytest.fixture
def log_of_300():
    make_records(make_key(), 300)
    services.log_sequence()
    return LogState.objects.get()


def test_the_logs_own_tree_head_is_signed_with_each_log_key(log_of_300, settings):
    message = _text(settings.LOG_ORIGIN, 300, bytes(log_of_300.root_hash))
    for algorithm, key in zip(("ed25519", "ml-dsa-65"), log_signers(), strict=True):
        answer = _checkpoint_request(message, algorithm=algorithm)
        assert answer.ok, answer.detail
        line = f"{note.SIGNATURE_LINE_PREFIX}{key.name} {base64.b64encode(key.key_id + answer.signature).decode()}\n"
        note.verify_note(message.decode() + "\n" + line, key.vkey)


def test_anything_but_the_logs_tree_head_is_refused(log_of_300, settings):
    origin, root = settings.LOG_ORIGIN, bytes(log_of_300.root_hash)
    refused = {
        "wrong root": _text(origin, 300, merkle.leaf_hash(b"forged")),
        "a larger tree": _text(origin, 301, root),
        "an older size with today's root": _text(origin, 299, root),
        "another origin": _text("evil.example/log", 300, root),
        "an extension line": _text(origin, 300, root) + b"extra\n",
        "not a note": b"\xff\xfe",
    }
    for what, message in refused.items():
        answer = _checkpoint_request(message)
        assert answer.error == "refused", what
    assert _checkpoint_request(_text(origin, 300, root), org_id="some-org").error == "refused"
    assert _checkpoint_request(_text(origin, 300, root), algorithm="es256").error == "refused"


def test_an_empty_log_has_its_empty_tree_head_signed(settings):
    assert _checkpoint_request(_text(settings.LOG_ORIGIN, 0, merkle.EMPTY_ROOT)).ok
    assert _checkpoint_request(_text(settings.LOG_ORIGIN, 0, merkle.leaf_hash(b"x"))).error == "refused"


def test_with_a_signer_the_published_keys_are_the_signers_rows(api_client, settings, tmp_path):
    settings.SIGNER_SOCKET = str(tmp_path / "nobody-listens.sock")
    response = api_client.get("/v1/log/keys")
    assert response.status_code == 503 and response.json()["error"] == "service_unavailable"
    log_keys_publish()  # what the signer does when it starts
    signers_keys = [signer.vkey for signer in log_signers()]
    assert LogKey.objects.count() == 2
    settings.LOG_SIGNING_KEY = "this-process-derives-other-keys-0123456789abcdef"
    keys = api_client.get("/v1/log/keys").json()["keys"]
    assert [key["algorithm"] for key in keys] == ["ed25519", "ml-dsa-65"]
    assert [key["vkey"] for key in keys] == signers_keys
    assert signers_keys != [signer.vkey for signer in log_signers()]


def test_a_checkpoint_lags_its_tiles_while_the_signer_is_down_and_proofs_keep_verifying(api_client, settings,
                                                                                         tmp_path):
    settings.VERIFY_RATE_PER_MINUTE = 100_000
    records = make_records(make_key(), 300)
    services.log_sequence()
    log_keys_publish()
    settings.SIGNER_SOCKET = str(tmp_path / "nobody-listens.sock")
    make_records(make_key(), 300)
    result = services.log_integrate_batch()
    assert (result.integrated, result.tree_size, result.checkpoint_signed) == (300, 600, False)
    state = LogState.objects.get()
    assert (state.tree_size, state.integrated_size) == (300, 600)
    # The level-0 tile 1 was the signed tree's edge (44 wide) and is full now: proofs still read it.
    for record in (records[10], records[299]):
        body = api_client.get(f"/v1/records/{record.pk}").json()
        log = body["log"]
        assert log["tree_size"] == 300
        assert rfc9162.verify_inclusion(log["index"], 300, leaf_from_api(body), decode(log["inclusion_proof"]),
                                        bytes(state.root_hash))
    later = Record.objects.get(log_index=450)
    assert api_client.get(f"/v1/records/{later.pk}").json()["log"] == {"status": "pending"}
    assert api_client.get("/v1/log/inclusion?index=450").status_code == 404
    consistency = api_client.get("/v1/log/consistency?first=100")
    assert consistency.status_code == 200 and consistency.json()["second"] == 300
    settings.SIGNER_SOCKET = ""  # the keys are here again: the next round signs the integrated tree
    assert services.log_integrate_batch().checkpoint_signed
    assert LogState.objects.get().tree_size == 600
    assert api_client.get(f"/v1/records/{later.pk}").json()["log"]["status"] == "integrated"
