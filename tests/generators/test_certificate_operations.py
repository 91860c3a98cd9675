"""The signer's certificate operations (signer/authority.py: issue-certificates, ensure-authorities,
seal-secret) answered in this process through signer.service.request_sign, and the web side's use of them:
with SIGNER_SOCKET set, stored certificates are read without asking, and what is missing is asked for."""

import time
import uuid

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from core.errors import ServiceUnavailable
from core.keyring import private_key_sealing_ring
from core.sealing import unseal
from core.signer_protocol import SignRequest, SignResponse
from generators.certificates import generator_c2pa_credentials
from generators.models import CertificateAuthority, GeneratorCertificate, GeneratorKey
from generators.services import generator_revoke, generator_rotate_key
from record_format import certificates as certs
from signer.service import request_sign
from tests import factories

pytestmark = pytest.mark.django_db


def _ask(op: str, *, org_id: str = "", generator_id: str = "", kid: str = "", args: dict | None = None) -> SignResponse:
    return request_sign(SignRequest.new(org_id=org_id, generator_id=generator_id, kid=kid, op=op, args=args,
                                        now_ms=int(time.time() * 1000)))


def _issue(key: GeneratorKey, *, org_id: str | None = None) -> SignResponse:
    return _ask("issue-certificates", org_id=org_id or str(key.generator.org_id), generator_id=str(key.generator_id),
                kid=key.kid)


def _key(generator) -> GeneratorKey:
    return GeneratorKey.objects.select_related("generator__org").get(generator=generator, retired_at__isnull=True)


def test_issue_certificates_issues_both_of_a_hybrid_key_and_the_cas_once(org):
    key = _key(factories.make_generator(org=org, c2pa_signing="hybrid"))
    assert _issue(key).result == {"issued": True}
    stored = GeneratorCertificate.objects.get(key=key)
    assert stored.ml_dsa_certificate is not None and stored.es256_certificate is not None
    assert CertificateAuthority.objects.count() == 4
    first = bytes(stored.es256_certificate)
    assert _issue(key).ok  # nothing is due: nothing is issued again
    assert bytes(GeneratorCertificate.objects.get(key=key).es256_certificate) == first
    assert CertificateAuthority.objects.count() == 4


def test_issue_certificates_gives_a_client_managed_key_its_ml_dsa_certificate_only(org):
    generator, _seed = factories.make_client_generator(org=org)
    key = _key(generator)
    assert _issue(key).ok
    stored = GeneratorCertificate.objects.get(key=key)
    assert certs.load_der(stored.ml_dsa_certificate).public_key().public_bytes_raw() == bytes(key.public_key)
    assert stored.es256_certificate is None


def test_issue_certificates_refuses_another_org_a_revoked_generator_and_a_retired_or_unknown_kid(org, other_org):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    key = _key(generator)
    assert _issue(key, org_id=str(other_org.pk)).error == "forbidden"
    retired = key
    generator_rotate_key(generator=generator, public_key=None)
    assert _issue(retired).error == "not_found"
    assert _ask("issue-certificates", org_id=str(org.pk), generator_id=str(uuid.uuid4()), kid=key.kid).error == (
        "not_found")
    assert _ask("issue-certificates", org_id=str(org.pk), generator_id="not-a-uuid", kid=key.kid).error == (
        "bad_request")
    generator_revoke(generator=generator)
    assert _issue(_key(generator)).error == "revoked"
    assert not GeneratorCertificate.objects.filter(key__generator=generator).exists()


def test_ensure_authorities_makes_each_family_once():
    assert _ask("ensure-authorities").result == {"authorities": 2}
    made = set(CertificateAuthority.objects.values_list("pk", flat=True))
    assert len(made) == 4  # a root and an intermediate per family
    assert _ask("ensure-authorities").ok
    assert set(CertificateAuthority.objects.values_list("pk", flat=True)) == made


def _p256() -> bytes:
    return certs.ec_private_key_der(ec.generate_private_key(ec.SECP256R1()))


def test_seal_secret_seals_an_upload_under_its_generators_context_only(org):
    generator = factories.make_generator(org=org, c2pa_signing="hybrid")
    key, secret = _key(generator), _p256()
    fields = {"org_id": str(org.pk), "generator_id": str(generator.pk)}
    answer = _ask("seal-secret", **fields, args={"context": f"c2pa-upload:{generator.pk}", "secret": secret})
    context = f"c2pa-upload:{generator.pk}".encode()
    assert unseal(answer.result["sealed"], private_key_sealing_ring().keys, associated_data=context) == secret
    for planted in (f"generator-key:{generator.pk}:{key.kid}", f"c2pa-es256:{key.pk}", f"c2pa-ca:{uuid.uuid4()}",
                    f"c2pa-upload:{uuid.uuid4()}", f"c2pa-upload:{str(generator.pk).upper()}", "c2pa-upload"):
        assert _ask("seal-secret", **fields, args={"context": planted, "secret": secret}).error == "refused", planted
    assert _ask("seal-secret", **fields, args={"context": context.decode()}).error == "bad_request"


def test_seal_secret_refuses_a_client_managed_or_revoked_generator(org):
    client_managed, _seed = factories.make_client_generator(org=org)
    revoked = factories.make_generator(org=org, name="revoked")
    generator_revoke(generator=revoked)
    for generator, error in ((client_managed, "refused"), (revoked, "revoked")):
        answer = _ask("seal-secret", org_id=str(org.pk), generator_id=str(generator.pk),
                      args={"context": f"c2pa-upload:{generator.pk}", "secret": _p256()})
        assert answer.error == error


def test_with_a_signer_stored_certificates_are_read_without_asking_and_missing_ones_are_asked_for(org, settings,
                                                                                                   tmp_path):
    issued = _key(factories.make_generator(org=org, c2pa_signing="hybrid"))
    fresh = _key(factories.make_generator(org=org, name="fresh", c2pa_signing="hybrid"))
    assert _issue(issued).ok
    settings.SIGNER_SOCKET = str(tmp_path / "nobody-listens.sock")  # any question to the signer fails
    credentials = generator_c2pa_credentials(issued, private_key=False)
    assert credentials.es256_private_key is None and len(credentials.es256_chain) == 2
    with pytest.raises(ServiceUnavailable):
        generator_c2pa_credentials(fresh, private_key=False)
    with pytest.raises(ValueError, match="signer service holds"):
        generator_c2pa_credentials(issued)
    assert not GeneratorCertificate.objects.filter(key=fresh).exists()
