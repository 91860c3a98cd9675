"""`svc log verify`, `verify --offline --log-keys` and `svc log monitor`, against a fake log built from the
contract (tests/client/fake_log.py): the service's log routes are not in this tree yet."""

import json

import pytest

from svc_client.cli import main
from svc_client.offline import log_entry, verify_offline
from tests.client.fake_log import FakeLog, serve


@pytest.fixture
def log():
    log = FakeLog()
    server, log.url = serve(log)
    yield log
    server.shutdown()
    server.server_close()


def _run(capsys, *argv):
    code = main(["--quiet", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def logged_record(service, client_generator, samples, log):
    """(data, record with its `log` field, pinned keys) of a JPEG that is entry 3 of a 7-entry log."""
    from svc_client import record_sign

    generator_id, key = client_generator
    data = samples["jpeg"]
    created = service.record_submit(record_sign(key=key, generator_id=generator_id, model="m", data=data))
    record = dict(service.record_get(created.record_id))
    for i in range(3):
        log.append(f"before {i}".encode())
    index = log.append(log_entry(record))
    for i in range(3):
        log.append(f"after {i}".encode())
    log.publish()
    record["log"] = log.log_field(index)
    return data, record, service.keys_pinned(generator_id)


@pytest.mark.django_db(transaction=True)
def test_a_logged_record_verifies_offline_with_its_inclusion_proof(logged_record, log):
    from svc_client.checkpoint import log_keys_from_document

    data, record, pinned = logged_record
    keys = log_keys_from_document(log.keys_document())
    result = verify_offline(data, record, pinned, log_keys=keys)
    assert result.authentic, result.reason
    assert result.checks[-1].message.startswith("entry 3 of the log, under a tree of size 7 signed by every")

    record["log"]["inclusion_proof"][0] = record["log"]["inclusion_proof"][1]
    assert "does not lead to the checkpoint's root" in verify_offline(data, record, pinned, log_keys=keys).reason


@pytest.mark.django_db(transaction=True)
def test_log_verify_checks_the_record_against_pinned_log_keys(logged_record, log, tmp_path, capsys):
    _, record, _ = logged_record
    (tmp_path / "record.json").write_text(json.dumps(record))
    (tmp_path / "log-keys.json").write_text(json.dumps(log.keys_document()))
    (tmp_path / "other-keys.json").write_text(json.dumps(FakeLog(origin=log.origin).keys_document()))

    code, out, _ = _run(capsys, "log", "verify", str(tmp_path / "record.json"), "--log-keys",
                        str(tmp_path / "log-keys.json"))
    assert code == 0, out
    code, out, _ = _run(capsys, "log", "verify", str(tmp_path / "record.json"), "--log-keys",
                        str(tmp_path / "other-keys.json"))
    assert code == 1 and "no signature by the pinned" in out

    log.append(b"later")
    log.publish()
    verify = ("--url", log.url, "log", "verify", str(tmp_path / "record.json"), "--log-keys",
              str(tmp_path / "log-keys.json"), "--checkpoint", str(tmp_path / "checkpoint.txt"))
    for size in (8, 5):  # newer and older than the record's proof (7): linked by a consistency proof
        (tmp_path / "checkpoint.txt").write_text(log.checkpoint(size))
        code, out, _ = _run(capsys, *verify)
        assert code == 0, out
        assert f"entry 3 of the log, under the pinned checkpoint of size {size}" in out

    (tmp_path / "checkpoint.txt").write_text(log.checkpoint(3))
    code, out, _ = _run(capsys, *verify)
    assert code == 1 and "entry 3 is newer than the pinned checkpoint (size 3)" in out

    log.forked = [*log.leaves[:6], b"\x00" * 32, *log.leaves[7:]]
    (tmp_path / "checkpoint.txt").write_text(log.checkpoint(8))
    code, out, _ = _run(capsys, *verify)
    assert code == 1 and "does not join the two root hashes" in out


@pytest.mark.django_db(transaction=True)
def test_offline_a_pinned_checkpoint_must_be_the_proofs_own_size(logged_record, log):
    from svc_client.checkpoint import log_keys_from_document

    data, record, pinned = logged_record
    keys = log_keys_from_document(log.keys_document())
    assert verify_offline(data, record, pinned, log_keys=keys, pinned_checkpoint=log.checkpoint(7)).authentic
    result = verify_offline(data, record, pinned, log_keys=keys, pinned_checkpoint=log.checkpoint(6))
    assert "the pinned checkpoint is of size 6: `svc log verify` links them" in result.reason


def test_a_pending_record_is_not_yet_in_the_log(log, tmp_path, capsys):
    (tmp_path / "record.json").write_text(json.dumps({"record_id": "r", "log": {"status": "pending"}}))
    (tmp_path / "log-keys.json").write_text(json.dumps(log.keys_document()))
    code, out, _ = _run(capsys, "log", "verify", str(tmp_path / "record.json"), "--log-keys",
                        str(tmp_path / "log-keys.json"))
    assert code == 1 and "pending" in out


def test_the_monitor_follows_a_growing_log_and_fails_loudly_on_a_fork(log, tmp_path, capsys):
    state = tmp_path / "state.json"
    code, _, _ = _run(capsys, "--url", log.url, "log", "pin", "-o", str(tmp_path / "log-keys.json"))
    assert code == 0
    monitor = ("--url", log.url, "log", "monitor", "--log-keys", str(tmp_path / "log-keys.json"),
               "--state", str(state), "--count", "1")
    for size in (0, 5, 5, 12):
        while len(log.leaves) < size:
            log.append(f"entry {len(log.leaves)}".encode())
        log.publish()
        code, _, err = _run(capsys, *monitor)
        assert code == 0, err
        assert json.loads(state.read_text())["tree_size"] == size

    seen = state.read_text()
    log.forked = [*log.leaves[:4], b"\x00" * 32, *log.leaves[5:], b"\x01" * 32]
    log.publish()
    code, _, err = _run(capsys, *monitor)
    assert code == 1
    assert err.startswith("FORK DETECTED: the tree of size 12 does not extend the one of size 12") or \
        err.startswith("FORK DETECTED: two root hashes for tree size 12")
    assert state.read_text() == seen  # the last consistent checkpoint stays, as evidence

    log.forked.append(b"\x02" * 32)
    log.published = 14
    code, _, err = _run(capsys, *monitor)
    assert code == 1 and "does not extend the one of size 12" in err


def test_the_monitor_refuses_a_checkpoint_the_pinned_keys_did_not_sign(log, tmp_path, capsys):
    (tmp_path / "other-keys.json").write_text(json.dumps(FakeLog(origin=log.origin).keys_document()))
    code, _, err = _run(capsys, "--url", log.url, "log", "monitor", "--log-keys", str(tmp_path / "other-keys.json"),
                        "--state", str(tmp_path / "state.json"), "--count", "1")
    assert code == 1 and "no signature by the pinned" in err
