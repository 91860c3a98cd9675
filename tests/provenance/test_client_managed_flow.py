"""End to end as a client-managed user: own keypair, local signing, submission, offline verification."""

import base64
import hashlib
import json

import pytest
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey, MLDSA65PublicKey
from dilithium_py.ml_dsa import ML_DSA_65

pytestmark = pytest.mark.django_db


def _canonical(payload: dict) -> bytes:
    # What any client can write: RFC 8785 for an all-string object is sorted keys, no whitespace, UTF-8.
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_client_signs_locally_submits_and_anyone_verifies_offline(key_client, org, api_client):
    client = key_client(org)
    private_key = MLDSA65PrivateKey.generate()
    public_raw = private_key.public_key().public_bytes_raw()
    generator = client.post("/v1/generators", {"name": "studio", "public_keys": [
        {"kid": "studio-2026", "algorithm": "ml-dsa-65", "key": base64.b64encode(public_raw).decode()}]},
        format="json").json()

    content = "A caption written by a model — ünïcode included.".encode()
    payload = {"content_hash": "sha3-256:" + hashlib.sha3_256(content).hexdigest(),
               "generator_id": generator["generator_id"], "model": "writer-7b", "watermark_id": "wm-0042"}
    signature = private_key.sign(_canonical(payload))
    created = client.post("/v1/records", {**payload, "signature": base64.b64encode(signature).decode(),
                                          "signed_payload": payload}, format="json")
    assert created.status_code == 201

    record = api_client.get(f"/v1/records/{created.json()['record_id']}").json()
    keys = api_client.get(f"/v1/keys/{generator['generator_id']}").json()["public_keys"]
    key = next(k for k in keys if k["kid"] == record["kid"])
    message = _canonical(record["signed_payload"])
    published_key = base64.b64decode(key["key"])
    published_signature = base64.b64decode(record["signature"])
    # Two independent ML-DSA-65 implementations agree the stored signature is valid.
    MLDSA65PublicKey.from_public_bytes(published_key).verify(published_signature, message)
    assert ML_DSA_65.verify(published_key, message, published_signature)
    assert record["signed_payload"]["content_hash"] == payload["content_hash"]
