"""`svc` end to end against the live service; exit codes 0 authentic, 1 not, 2 usage, 3 service error."""

import json
import os

import pytest

from svc_client.cli import main

pytestmark = pytest.mark.django_db(transaction=True)


def test_keygen_register_sign_pin_and_verify_offline_with_no_service(svc, samples, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "photo.jpg").write_bytes(samples["jpeg"])
    assert svc("keygen", "key.json")[0] == 0
    assert os.stat("key.json").st_mode & 0o777 == 0o600
    code, out, _ = svc("--json", "register", "local", "--key", "key.json")
    generator_id = json.loads(out)["generator_id"]

    code, out, _ = svc("--json", "sign", "photo.jpg", "--generator", generator_id, "--model", "m", "--key", "key.json")
    assert code == 0
    record_id = json.loads(out)["results"][0]["record_id"]
    assert svc("keys", "pin", generator_id, "-o", "pinned.json")[0] == 0
    assert svc("record", record_id, "-o", "record.json")[0] == 0

    # An unreachable URL: offline verification makes no call.
    code, out, err = svc("--url", "http://127.0.0.1:9", "verify", "photo.jpg", "--offline", "--keys", "pinned.json",
                         "--record", "record.json", key=False)
    assert code == 0, err
    assert out.splitlines()[-1].startswith(f"Authentic: this file is exactly the content of record {record_id}, ")

    (tmp_path / "photo.jpg").write_bytes(samples["jpeg"][:-3000] + bytes(2998) + samples["jpeg"][-2:])
    code, out, _ = svc("--json", "verify", "photo.jpg", "--offline", "--keys", "pinned.json", "--record", "record.json")
    assert code == 1
    assert "was changed after signing" in json.loads(out)["reason"]


def test_server_managed_sign_writes_the_signed_file_and_it_verifies_online(svc, samples, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "song.wav").write_bytes(samples["wav"])
    code, out, _ = svc("--json", "register", "hosted", "--server-managed")
    generator_id = json.loads(out)["generator_id"]

    code, out, err = svc("--json", "sign", "song.wav", "--generator", generator_id, "--model", "m")
    assert code == 0 and err == ""  # --json: no progress lines
    code, _, err = svc("sign", "song.wav", "--generator", generator_id, "--model", "m", "-o", "again.wav",
                       quiet=False)
    assert code == 0
    assert err.splitlines()[-1].startswith("uploading song.wav: 100% (0.1/0.1 MB)")
    assert json.loads(out)["results"][0]["signed_file"] == "song.signed.wav"
    code, out, _ = svc("verify", "song.signed.wav", key=False)
    assert code == 0 and not out.startswith("{"), out  # sentences (test_verify_cli.py)
    assert svc("keys", "pin", generator_id, "-o", "pinned.json")[0] == 0
    code, out, _ = svc("verify", "song.signed.wav", "--offline", "--keys", "pinned.json", key=False)  # token->record
    assert code == 0, out
    # Too short for the audio watermark, the signed file is the original plus its token: the original is
    # found by its exact content hash.
    code, out, _ = svc("--json", "verify", "song.wav", key=False)
    assert code == 0 and json.loads(out)["token_source"] == "content_hash"


def test_a_client_managed_batch_reports_every_file(svc, client_generator, samples, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    generator_id, key = client_generator
    key.save("key.json")
    names = []
    for fmt in ("png", "flac", "html", "mkv"):
        (tmp_path / f"file.{fmt}").write_bytes(samples[fmt])
        names.append(f"file.{fmt}")
    code, out, _ = svc("--json", "sign", *names, "--generator", generator_id, "--model", "m", "--key", "key.json",
                       "--batch")
    assert code == 0
    assert [r["file"] for r in json.loads(out)["results"]] == names


def test_usage_and_service_errors_have_their_own_exit_codes(svc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert svc("verify", "missing.jpg")[0] == 2
    assert svc("verify", "missing.jpg", "--offline")[0] == 2
    with pytest.raises(SystemExit) as usage:
        main(["sign"])
    assert usage.value.code == 2
    code, _, err = svc("record", "00000000-0000-0000-0000-000000000000")
    assert code == 3 and "not_found" in err
    code, _, err = svc("--api-key", "svc_key_wrong", "register", "x", "--server-managed", key=False)
    assert code == 3 and "authentication_required" in err
    code, _, err = svc("--url", "http://127.0.0.1:9", "record", "00000000-0000-0000-0000-000000000000")
    assert code == 3 and err == ("svc: the service cannot be reached: http://127.0.0.1:9 refused the connection: "
                                 "is the service running there? (--url or SVC_URL)\n")


def test_a_failure_mid_way_reports_what_was_already_stored(svc, client_generator, samples, tmp_path, monkeypatch):
    from svc_client.client import Client
    from svc_client.errors import ServerError

    monkeypatch.chdir(tmp_path)
    generator_id, key = client_generator
    key.save("key.json")
    (tmp_path / "a.png").write_bytes(samples["png"])
    (tmp_path / "b.png").write_bytes(samples["png"][:-1] + b"\x00")
    real_json = Client._json

    def second_call_fails(self, method, path, **options):
        if path.startswith("/v1/records") and getattr(self, "_calls", 0) == 1:
            raise ServerError(503, "internal_error", "down")
        self._calls = getattr(self, "_calls", 0) + 1
        return real_json(self, method, path, **options)

    monkeypatch.setattr(Client, "_json", second_call_fails)
    monkeypatch.setattr("svc_client.client.BATCH_MAX", 1)
    for batch in ([], ["--batch"]):
        code, _, err = svc("sign", "a.png", "b.png", "--generator", generator_id, "--model", "m", "--key", "key.json",
                           *batch)
        assert code == 3 and "internal_error" in err
        assert err.startswith("stored before the failure: a.png record ")


def test_a_hybrid_manifest_and_the_records_time_stamp_verify_offline(svc, samples, tmp_path, monkeypatch, settings):
    """`svc sign --c2pa` by a hybrid generator, keys pinned with the trust anchors, then `svc verify --offline`
    checks the record's time stamp and both manifest signatures with no service; a stripped PQ
    countersignature fails it."""
    import cbor2
    from cryptography.hazmat.primitives import serialization

    from media_codecs import jumbf
    from media_codecs.c2pa import read_manifest
    from media_codecs.c2pa.manifest import COSE_COUNTERSIGNATURE
    from tests.tsa_server import OPENSSL, LocalTsa

    if OPENSSL is None:
        pytest.skip("needs the openssl command")
    monkeypatch.chdir(tmp_path)
    with LocalTsa() as tsa:
        (tmp_path / "tsa.pem").write_bytes(tsa.root.public_bytes(serialization.Encoding.PEM))
        settings.TSA_URL, settings.TSA_ROOTS_FILE = tsa.url, str(tmp_path / "tsa.pem")
        (tmp_path / "photo.jpg").write_bytes(samples["jpeg"])
        code, out, _ = svc("--json", "register", "hosted", "--server-managed", "--c2pa-signing", "hybrid")
        generator_id = json.loads(out)["generator_id"]
        code, out, err = svc("--json", "sign", "photo.jpg", "--generator", generator_id, "--model", "m", "--c2pa")
        assert code == 0, err
        record_id = json.loads(out)["results"][0]["record_id"]
        assert svc("keys", "pin", generator_id, "-o", "pinned.json")[0] == 0
        assert svc("record", record_id, "-o", "record.json")[0] == 0
    assert json.loads((tmp_path / "pinned.json").read_text())["trust_anchors"]
    code, out, err = svc("--url", "http://127.0.0.1:9", "--json", "verify", "photo.signed.jpg", "--offline",
                         "--keys", "pinned.json", "--record", "record.json", key=False)
    result = json.loads(out)
    assert code == 0, result
    assert {check["name"]: check["ok"] for check in result["checks"]} == {
        "record": True, "signature": True, "time_stamp": True, "content": True, "c2pa": True}

    signed = (tmp_path / "photo.signed.jpg").read_bytes()
    manifest = read_manifest(signed)
    old = jumbf.read(manifest.store_boxes[manifest.label]).child("c2pa.signature").content(b"cbor")
    header = {key: value for key, value in manifest.unprotected.items() if key != COSE_COUNTERSIGNATURE}
    def encoded(pad: int) -> bytes:
        return cbor2.dumps(cbor2.CBORTag(18, [manifest.protected_bytes, {**header, "pad": bytes(pad)}, None,
                                              manifest.signature]))
    pad = len(header["pad"])
    stripped = encoded(pad + len(old) - len(encoded(pad)))
    (tmp_path / "stripped.jpg").write_bytes(signed.replace(old, stripped))
    code, out, _ = svc("--json", "verify", "stripped.jpg", "--offline", "--keys", "pinned.json", "--record",
                       "record.json", key=False)
    result = json.loads(out)
    assert code == 1 and "post-quantum" in result["reason"], result
