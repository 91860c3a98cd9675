"""The C2PA certificate authority, uploaded keys and the log's checkpoints with SIGNER_SOCKET set: a real
`manage.py signer` process on the same PostgreSQL database holds KEY_ENCRYPTION_KEY and LOG_SIGNING_KEY,
and this process (the web worker, and the sequencer) is given values of both that unseal and derive
nothing. Certificates are issued there on first use, the CAs made there, an upload sealed there, and
checkpoints signed there only for the log's own tree. PostgreSQL only: the signer must see the test's rows."""

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from django.db import connection

from core.errors import KeyUnavailable
from core.keyring import _sealing_ring, log_signing_seeds
from core.sealing import unseal
from core.secret_ring import read_key_encryption_key
from core.signer_client import SignerRefused, signature_request, signer_call
from generators.certificate_authority import ca_private_key
from generators.certificates import generator_c2pa_credentials
from generators.models import CertificateAuthority, GeneratorKey, GeneratorUploadedCertificate
from media_codecs.c2pa import read_manifest
from provenance.models import Record
from record_format import certificates as certs
from tests import factories
from tests.generators.test_certificates_api import _upload_body
from tests.generators.test_certificates_concurrency import _run_together
from tests.signer.processes import signer_environment, start_signer, stop
from tests.transparency import rfc9162
from tests.transparency.logs import decode, leaf_from_api, make_key, make_records
from tests.verification.uploads import sign, verify
from transparency import merkle, note, services
from transparency.models import LogState

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the signer process needs the test's database"),
]
ROOT = Path(__file__).resolve().parents[2]
SIGNER_SECRET = "signer-authority-secret-0123456789abcdef"
# What only the signer holds, and what this process is given instead.
SIGNER_KEY_ENCRYPTION_KEY = "held:the-signers-own-key-encryption-key-0123456789"
SIGNER_LOG_SIGNING_KEY = "the-signers-own-log-signing-key-0123456789abcdef"
WEB_KEY_ENCRYPTION_KEY = "elsewhere:a-key-that-unseals-nothing-here-0123456789"
WEB_LOG_SIGNING_KEY = "a-log-key-that-derives-nothing-the-log-uses-0123456"


@pytest.fixture
def signer(settings, tmp_path):
    path = str(tmp_path / "signer.sock")
    # SIGNER_SOCKET as where one environment serves every process: the signer never asks itself.
    env = signer_environment(settings, KEY_ENCRYPTION_KEY=SIGNER_KEY_ENCRYPTION_KEY,
                             LOG_SIGNING_KEY=SIGNER_LOG_SIGNING_KEY, LOG_ORIGIN=settings.LOG_ORIGIN,
                             SIGNER_SECRET=SIGNER_SECRET, SIGNER_SOCKET=path)
    process = start_signer(env, path)
    settings.SIGNER_SOCKET, settings.SIGNER_SECRET = path, SIGNER_SECRET
    settings.KEY_ENCRYPTION_KEY, settings.LOG_SIGNING_KEY = WEB_KEY_ENCRYPTION_KEY, WEB_LOG_SIGNING_KEY
    yield process
    stop(process)


def _signers_ring():
    return _sealing_ring(read_key_encryption_key(SIGNER_KEY_ENCRYPTION_KEY), "generator-private-keys")


def test_a_hybrid_generator_signs_c2pa_with_certificates_and_cas_made_in_the_signer(signer, key_client,
                                                                                       growth_org, api_client):
    factories.make_user(org=growth_org, role="owner")
    generator = factories.make_generator(org=growth_org, formats=["image"], c2pa_signing="hybrid")
    assert not CertificateAuthority.objects.exists()
    from tests.media import photo_bytes

    response = sign(key_client(growth_org), generator, photo_bytes("astronaut", "jpeg"), model="m", c2pa="true")
    assert response.status_code == 201, response.content[:300]
    result = verify(api_client, response.content)
    assert result["authentic"] and result["token_source"] == "c2pa", result
    checks = {check["check"]: check["status"] for check in result["c2pa"]["checks"]}
    assert (checks["claim_signature"], checks["pq_signature"], checks["certificate_chain"]) == (
        "valid", "valid", "trusted")
    assert result["c2pa"]["signing"] == "hybrid"
    # The CA and the key's ES256 key were sealed by the signer: none of them unseals here.
    assert CertificateAuthority.objects.count() == 4
    for ca in CertificateAuthority.objects.all():
        with pytest.raises(KeyUnavailable):
            ca_private_key(ca)
        unseal(bytes(ca.encrypted_private_key), _signers_ring().keys, associated_data=f"c2pa-ca:{ca.pk}".encode())
    key = GeneratorKey.objects.select_related("generator__org").get(generator=generator)
    with pytest.raises(ValueError, match="signer service holds"):
        generator_c2pa_credentials(key)  # the unsealed ES256 key is never asked for here


def test_trust_anchors_and_public_key_chains_are_made_in_the_signer_on_first_use(signer, api_client, org):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    anchors = api_client.get("/v1/c2pa/trust-anchors")
    assert anchors.status_code == 200
    listed = anchors.json()["trust_anchors"]
    assert sorted(anchor["algorithm"] for anchor in listed) == ["ecdsa-p384", "ml-dsa-65"]
    assert {anchor["use"] for anchor in listed} == {"signing"}
    keys = api_client.get(f"/v1/keys/{generator.pk}")
    assert keys.status_code == 200
    chains = keys.json()["public_keys"][0]["certificates"]
    assert set(chains) == {"ml-dsa-65", "es256"}
    roots = {base64.b64decode("".join(anchor["certificate"].splitlines()[1:-1])) for anchor in listed}
    for family in ("ml-dsa-65", "es256"):
        chain = [certs.to_der(certs.load_pem_chain(pem)[0]) for pem in chains[family]]
        assert certs.verify_chain(chain, list(roots), certs.load_der(chain[0]).not_valid_before_utc).trusted


def test_concurrent_first_use_through_the_signer_makes_one_ca_and_one_certificate_set(signer, org):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    key_pk = GeneratorKey.objects.get(generator=generator).pk

    def first_use():
        key = GeneratorKey.objects.select_related("generator__org").get(pk=key_pk)
        return generator_c2pa_credentials(key, private_key=False)

    results = _run_together(first_use)
    assert not [r for r in results if isinstance(r, Exception)], results
    assert {r.es256_chain for r in results} == {results[0].es256_chain}
    assert sorted(CertificateAuthority.objects.values_list("family", "kind")) == [
        ("es256", "intermediate"), ("es256", "root"), ("ml-dsa-65", "intermediate"), ("ml-dsa-65", "root")]


def test_an_upload_is_sealed_by_the_signer_and_its_key_signs(signer, key_client, growth_org, api_client):
    factories.make_user(org=growth_org, role="owner")
    generator = factories.make_generator(org=growth_org, formats=["image"], c2pa_signing="hybrid")
    body, chain = _upload_body()
    response = key_client(growth_org).put(f"/v1/generators/{generator.pk}/c2pa-certificate", body, format="json")
    assert response.status_code == 200, response.json()
    upload = GeneratorUploadedCertificate.objects.get(generator=generator)
    secret = unseal(bytes(upload.encrypted_private_key), _signers_ring().keys,
                    associated_data=f"c2pa-upload:{generator.pk}".encode())
    assert certs.same_public_key(certs.ec_private_key_from_der(secret).public_key(), chain[0].public_key())
    from tests.media import photo_bytes

    signed = sign(key_client(growth_org), generator, photo_bytes("astronaut", "jpeg"), model="m", c2pa="true")
    assert signed.status_code == 201, signed.content[:300]
    assert read_manifest(signed.content).certificate_chain[0] == certs.to_der(chain[0])


@pytest.mark.parametrize("context", ["generator-key:{generator}:{kid}", "c2pa-es256:{key}", "c2pa-ca:{key}",
                                     "c2pa-upload:{other}", "c2pa-upload:{generator}:x", "c2pa-upload:"])
def test_seal_secret_refuses_every_context_but_its_generators_upload(signer, org, context):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    other = factories.make_generator(org=org, name="other", c2pa_signing="hybrid")
    key = generator.keys.get()
    secret = certs.ec_private_key_der(ec.generate_private_key(ec.SECP256R1()))
    named = context.format(generator=generator.pk, kid=key.kid, key=key.pk, other=other.pk)
    with pytest.raises(SignerRefused) as refused:
        signer_call("seal-secret", org_id=str(org.pk), generator_id=str(generator.pk),
                    args={"context": named, "secret": secret})
    assert refused.value.error == "refused"
    sealed = signer_call("seal-secret", org_id=str(org.pk), generator_id=str(generator.pk),
                         args={"context": f"c2pa-upload:{generator.pk}", "secret": secret})["sealed"]
    assert unseal(sealed, _signers_ring().keys, associated_data=f"c2pa-upload:{generator.pk}".encode()) == secret


def test_seal_secret_refuses_another_organization_and_what_is_not_a_p256_key(signer, org, other_org):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    context = f"c2pa-upload:{generator.pk}"
    p256 = certs.ec_private_key_der(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(SignerRefused) as refused:
        signer_call("seal-secret", org_id=str(other_org.pk), generator_id=str(generator.pk),
                    args={"context": context, "secret": p256})
    assert refused.value.error == "forbidden"
    for secret in (os.urandom(32), certs.ec_private_key_der(ec.generate_private_key(ec.SECP384R1()))):
        with pytest.raises(SignerRefused) as refused:
            signer_call("seal-secret", org_id=str(org.pk), generator_id=str(generator.pk),
                        args={"context": context, "secret": secret})
        assert refused.value.error == "bad_request"


def _published_vkeys(api_client) -> list[str]:
    keys = api_client.get("/v1/log/keys")
    assert keys.status_code == 200, keys.content
    return [key["vkey"] for key in keys.json()["keys"]]


def test_a_checkpoint_signed_through_the_signer_verifies_with_the_published_keys(signer, api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 100_000
    make_records(make_key(), 300)
    assert services.log_sequence(limit=200) == 300
    state = LogState.objects.get()
    assert state.tree_size == state.integrated_size == 300
    checkpoint = api_client.get("/v1/log/checkpoint").content.decode()
    vkeys = _published_vkeys(api_client)
    for vkey in vkeys:
        assert note.parse_checkpoint(note.verify_note(checkpoint, vkey)).tree_size == 300
    # This process's LOG_SIGNING_KEY derives other keys: the published ones are the signer's.
    here = note.ed25519_signer(settings.LOG_ORIGIN, log_signing_seeds()[0])
    assert here.vkey not in vkeys
    record = Record.objects.get(log_index=123)
    log = api_client.get(f"/v1/log/inclusion?record_id={record.pk}").json()
    assert log["status"] == "integrated" and log["tree_size"] == 300


def _checkpoint_text(origin: str, size: int, root: bytes) -> bytes:
    return note.Checkpoint(origin=origin, tree_size=size, root_hash=root).text().encode()


def test_a_checkpoint_with_a_wrong_root_another_size_or_another_origin_is_refused(signer, settings):
    make_records(make_key(), 5)
    services.log_sequence()
    state = LogState.objects.get()
    root, origin = bytes(state.root_hash), settings.LOG_ORIGIN
    forged = [_checkpoint_text(origin, 5, merkle.leaf_hash(b"forged")), _checkpoint_text(origin, 6, root),
              _checkpoint_text(origin, 4, root), _checkpoint_text("evil.example/log", 5, root),
              _checkpoint_text(origin, 5, root) + b"extension line\n", b"not a checkpoint"]
    for message in forged:
        for algorithm in ("ed25519", "ml-dsa-65"):
            with pytest.raises(SignerRefused) as refused:
                signature_request(org_id="", generator_id="", kid="", algorithm=algorithm, purpose="checkpoint",
                                  message=message)
            assert refused.value.error == "refused"
    with pytest.raises(SignerRefused):  # a checkpoint is not an organization's
        signature_request(org_id=str(make_key().generator.org_id), generator_id="", kid="", algorithm="ed25519",
                          purpose="checkpoint", message=_checkpoint_text(origin, 5, root))
    with pytest.raises(SignerRefused):  # nor signed with a generator's algorithm
        signature_request(org_id="", generator_id="", kid="", algorithm="es256", purpose="checkpoint",
                          message=_checkpoint_text(origin, 5, root))
    signature = signature_request(org_id="", generator_id="", kid="", algorithm="ed25519", purpose="checkpoint",
                                  message=_checkpoint_text(origin, 5, root))
    assert len(signature) == 64


def test_the_sequencer_command_with_the_signer_produces_verifying_checkpoints(signer, api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 100_000
    records = make_records(make_key(), 700)
    env = signer_environment(settings, KEY_ENCRYPTION_KEY=WEB_KEY_ENCRYPTION_KEY, LOG_SIGNING_KEY=WEB_LOG_SIGNING_KEY,
                             LOG_ORIGIN=settings.LOG_ORIGIN, SIGNER_SOCKET=settings.SIGNER_SOCKET,
                             SIGNER_SECRET=SIGNER_SECRET)
    command = [sys.executable, "manage.py", "log_sequencer", "--once", "--batch-size", "300"]
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    state = LogState.objects.get()
    assert (state.tree_size, state.integrated_size) == (700, 700)
    checkpoint = api_client.get("/v1/log/checkpoint").content.decode()
    for vkey in _published_vkeys(api_client):
        note.verify_note(checkpoint, vkey)
    record = api_client.get(f"/v1/records/{records[456].pk}").json()
    log = record["log"]
    assert log["status"] == "integrated" and log["checkpoint"] == checkpoint
    root = note.parse_checkpoint(note.split_note(checkpoint)[0]).root_hash
    assert rfc9162.verify_inclusion(log["index"], 700, leaf_from_api(record), decode(log["inclusion_proof"]), root)
    # A second run signs nothing new: the checkpoint is of the integrated tree, by the published keys.
    run = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert LogState.objects.get().checkpoint_at == state.checkpoint_at
