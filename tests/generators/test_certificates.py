"""generators/certificates.py and certificate_authority.py: the deployment CA, per-key certificates, an
installed intermediate and an organization's own chain, each proved by c2pa-python signing a JPEG with what
the service hands out and reading it back Trusted against the service's trust anchors."""

import io
import json
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.core.management import CommandError, call_command
from django.utils import timezone

from core.keyring import private_key_sealing_ring
from core.sealing import unseal
from generators import certificate_authority as authority
from generators.certificates import (
    C2paCredentials,
    generator_c2pa_certificate_upload,
    generator_c2pa_credentials,
    trust_anchor_certificates,
)
from generators.models import CertificateAuthority, Generator, GeneratorCertificate, GeneratorKey
from generators.services import generator_register, generator_rotate_key
from record_format import certificates as certs
from record_format import crypto
from tests import factories
from tests.c2pa_upstream import READ_SETTINGS, TRAINED
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
Family = CertificateAuthority.Family


def _pem(ders) -> bytes:
    return "".join(certs.der_to_pem(d) for d in ders).encode()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def c2pa_sign_and_read(chain_der, key: ec.EllipticCurvePrivateKey, anchors_der) -> dict:
    """Sign a JPEG with c2pa-python's Builder under `chain_der`/`key`; c2pa-python's report trusting `anchors_der`."""
    import c2pa

    signer = c2pa.Signer.from_info(c2pa.C2paSignerInfo(alg=b"es256", sign_cert=_pem(chain_der),
                                                       private_key=_key_pem(key), ta_url=None))
    definition = {"claim_generator_info": [{"name": "test"}], "assertions": [{"label": "c2pa.actions.v2", "data": {
        "actions": [{"action": "c2pa.created", "digitalSourceType": TRAINED}]}}]}
    signed = io.BytesIO()
    c2pa.Builder(definition).sign(signer, "image/jpeg", io.BytesIO(photo_bytes()), signed)
    trust = {"trust": {"trust_anchors": _pem(anchors_der).decode()}} if anchors_der else {}
    context = c2pa.Context.from_dict({**READ_SETTINGS, **trust})
    return json.loads(c2pa.Reader("image/jpeg", io.BytesIO(signed.getvalue()), context=context).json())


def assert_trusted(report: dict) -> None:
    results = report["validation_results"]["activeManifest"]
    assert report["validation_state"] == "Trusted", results
    assert results["failure"] == [] and not report.get("validation_status")
    assert "signingCredential.trusted" in [item["code"] for item in results["success"]]


def _hybrid(org, name="hybrid gen") -> GeneratorKey:
    generator = generator_register(org=org, name=name, public_key=None, c2pa_signing="hybrid")
    return GeneratorKey.objects.select_related("generator__org").get(generator=generator)


def test_a_hybrid_key_gets_an_es256_chain_c2pa_trusts(org):
    key = _hybrid(org)
    credentials = generator_c2pa_credentials(key)
    assert isinstance(credentials, C2paCredentials) and credentials.signing == "hybrid"
    assert len(credentials.es256_chain) == 2 and len(credentials.ml_dsa_chain) == 2
    assert_trusted(c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key,
                                      trust_anchor_certificates()))
    # Without the service's root the same file is only Valid: the anchor is what makes it Trusted.
    report = c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key, [])
    assert report["validation_state"] == "Valid"


def test_the_end_entities_name_the_organization_and_generator_and_hold_the_right_keys(org):
    key = _hybrid(org, name="G" * 100)
    credentials = generator_c2pa_credentials(key)
    es256, ml_dsa = certs.load_der(credentials.es256_chain[0]), certs.load_der(credentials.ml_dsa_chain[0])
    for certificate in (es256, ml_dsa):
        assert certificate.subject.rfc4514_string() == f"CN={'G' * 64},O={org.name}"
        assert certs.end_entity_problems(certificate, timezone.now()) in ([], [
            "signed with an algorithm C2PA does not accept"])
    assert certs.same_public_key(es256.public_key(), credentials.es256_private_key.public_key())
    assert ml_dsa.public_key().public_bytes_raw() == bytes(key.public_key)
    anchors = trust_anchor_certificates()
    for chain in (credentials.es256_chain, credentials.ml_dsa_chain):
        assert certs.verify_chain(chain, anchors, timezone.now()).trusted
        assert not any(certs.is_self_signed(certs.load_der(d)) for d in chain)  # no root in x5chain


def test_an_ml_dsa_generator_gets_only_its_ml_dsa_chain(org):
    key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    credentials = generator_c2pa_credentials(key)
    assert credentials.signing == "ml-dsa-65" and credentials.es256_chain == ()
    assert credentials.es256_private_key is None
    assert GeneratorCertificate.objects.get(key=key).es256_certificate is None


def test_certificates_are_issued_once_and_stored(org, django_assert_max_num_queries):
    key = _hybrid(org)
    first = generator_c2pa_credentials(key)
    again = generator_c2pa_credentials(key)
    assert first.es256_chain == again.es256_chain and first.ml_dsa_chain == again.ml_dsa_chain
    assert CertificateAuthority.objects.count() == 4  # a root and an intermediate per family
    with django_assert_max_num_queries(8):  # reads only: nothing issued, nothing written
        generator_c2pa_credentials(key)


def test_private_keys_are_sealed_at_rest(org):
    key = _hybrid(org)
    credentials = generator_c2pa_credentials(key)
    raw = certs.ec_private_key_der(credentials.es256_private_key)
    stored = GeneratorCertificate.objects.get(key=key)
    sealed = bytes(stored.encrypted_es256_private_key)
    number = credentials.es256_private_key.private_numbers().private_value.to_bytes(32, "big")
    assert raw not in sealed and number not in sealed and b"PRIVATE KEY" not in sealed
    for ca in CertificateAuthority.objects.all():
        blob = bytes(ca.encrypted_private_key)
        assert b"PRIVATE" not in blob and blob[0] == 2  # a version-2 sealed blob
        # Bound to its row: another CA's context does not open it.
        with pytest.raises(Exception):
            unseal(blob, private_key_sealing_ring().keys, associated_data=b"c2pa-ca:other")
    with pytest.raises(Exception):
        unseal(sealed, private_key_sealing_ring().keys, associated_data=f"generator-key:{key.generator_id}:x".encode())


def test_rotation_issues_new_certificates_and_old_ones_keep_verifying(org):
    key = _hybrid(org)
    old = generator_c2pa_credentials(key)
    call_command("c2pa_ca", "rotate", stdout=io.StringIO())
    new = generator_c2pa_credentials(key)
    assert new.es256_chain[1] != old.es256_chain[1] and new.ml_dsa_chain[1] != old.ml_dsa_chain[1]
    anchors = trust_anchor_certificates()
    for chain in (old.es256_chain, new.es256_chain, old.ml_dsa_chain, new.ml_dsa_chain):
        assert certs.verify_chain(chain, anchors, timezone.now()).trusted
    assert_trusted(c2pa_sign_and_read(old.es256_chain, old.es256_private_key, anchors))
    assert_trusted(c2pa_sign_and_read(new.es256_chain, new.es256_private_key, anchors))


def test_a_new_root_keeps_the_old_root_an_anchor(org):
    key = _hybrid(org)
    old = generator_c2pa_credentials(key)
    call_command("c2pa_ca", "rotate", "--root", stdout=io.StringIO())
    new = generator_c2pa_credentials(key)
    roots = CertificateAuthority.objects.filter(kind="root")
    assert roots.count() == 4
    anchors = trust_anchor_certificates()
    assert {bytes(r.certificate) for r in roots} <= set(anchors)
    assert_trusted(c2pa_sign_and_read(old.es256_chain, old.es256_private_key, anchors))
    assert_trusted(c2pa_sign_and_read(new.es256_chain, new.es256_private_key, anchors))
    names = {certs.load_der(r.certificate).subject.rfc4514_string() for r in roots}
    assert len(names) == 4  # the generation is in the name


def test_rotating_a_generator_key_gives_the_new_key_its_own_certificates(org):
    key = _hybrid(org)
    old = generator_c2pa_credentials(key)
    new_key = generator_rotate_key(generator=key.generator, public_key=None)
    new_key = GeneratorKey.objects.select_related("generator__org").get(pk=new_key.pk)
    new = generator_c2pa_credentials(new_key)
    assert certs.load_der(new.ml_dsa_chain[0]).public_key().public_bytes_raw() == bytes(new_key.public_key)
    assert new.es256_chain[0] != old.es256_chain[0]
    assert GeneratorCertificate.objects.filter(key__generator=key.generator).count() == 2


def test_an_expiring_end_entity_is_issued_again(org):
    key = _hybrid(org)
    old = generator_c2pa_credentials(key)
    # A certificate within the renewal margin of its end, as if issued long ago.
    stored = GeneratorCertificate.objects.get(key=key)
    issuer = stored.es256_issuer
    near_end = certs.build_end_entity(
        ec.generate_private_key(ec.SECP256R1()).public_key(),
        name=certs.subject_name(organization="o", common_name="c"),
        issuer=certs.load_der(issuer.certificate), issuer_key=authority.ca_private_key(issuer),
        validity=certs.Validity(timezone.now() - timedelta(days=300), timezone.now() + timedelta(days=2)))
    GeneratorCertificate.objects.filter(key=key).update(es256_certificate=certs.to_der(near_end))
    new = generator_c2pa_credentials(key)
    assert new.es256_chain[0] not in (old.es256_chain[0], certs.to_der(near_end))
    assert certs.load_der(new.es256_chain[0]).not_valid_after_utc > timezone.now() + timedelta(days=300)


def test_a_client_managed_key_gets_an_ml_dsa_certificate_for_its_public_key(org):
    generator, _seed = factories.make_client_generator(org=org)
    key = GeneratorKey.objects.select_related("generator__org").get(generator=generator)
    credentials = generator_c2pa_credentials(key)
    assert certs.load_der(credentials.ml_dsa_chain[0]).public_key().public_bytes_raw() == bytes(key.public_key)
    assert credentials.es256_chain == ()


def _external_ca(*, root_in_chain: bool, start=None):
    """A CA outside the service (a trust-listed one): root, intermediate and the intermediate's key."""
    root_key, mid_key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP256R1())
    now = start or timezone.now()
    root = certs.build_root(root_key, name=certs.subject_name(organization="Listed CA", common_name="Listed Root"),
                            validity=certs.validity_from(now, 3650))
    mid = certs.build_intermediate(mid_key.public_key(), issuer=root, issuer_key=root_key,
                                   name=certs.subject_name(organization="Listed CA", common_name="Listed Issuing"),
                                   validity=certs.validity_from(now, 1000))
    chain = [mid, root] if root_in_chain else [mid]
    return root, mid, mid_key, "".join(certs.der_to_pem(certs.to_der(c)) for c in chain)


@pytest.mark.parametrize("root_in_chain", [True, False])
def test_an_installed_intermediate_issues_es256_certificates_c2pa_trusts(org, tmp_path, root_in_chain):
    root, mid, mid_key, chain_pem = _external_ca(root_in_chain=root_in_chain)
    (tmp_path / "chain.pem").write_text(chain_pem)
    (tmp_path / "key.pem").write_bytes(_key_pem(mid_key))
    before = generator_c2pa_credentials(_hybrid(org, "before"))
    output = io.StringIO()
    call_command("c2pa_ca", "install", "--chain", str(tmp_path / "chain.pem"), "--key", str(tmp_path / "key.pem"),
                 stdout=output)
    assert "installed" in output.getvalue()
    key = GeneratorKey.objects.select_related("generator__org").get(generator__name="before")
    credentials = generator_c2pa_credentials(key)
    assert credentials.es256_chain[1] == certs.to_der(mid) and credentials.es256_chain != before.es256_chain
    assert len(credentials.es256_chain) == 2
    assert_trusted(c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key, [certs.to_der(root)]))
    # The ML-DSA family stays the service's own.
    assert credentials.ml_dsa_chain[1] == before.ml_dsa_chain[1]
    assert (certs.to_der(root) in trust_anchor_certificates()) == root_in_chain
    installed = CertificateAuthority.objects.get(origin="installed", kind="intermediate")
    assert _key_pem(mid_key) not in bytes(installed.encrypted_private_key)


def test_install_refuses_what_cannot_issue(org, tmp_path):
    _root, mid, mid_key, chain_pem = _external_ca(root_in_chain=True)
    other_key = ec.generate_private_key(ec.SECP256R1())
    leaf = certs.build_end_entity(other_key.public_key(), name=certs.subject_name(organization="o", common_name="l"),
                                  issuer=mid, issuer_key=mid_key, validity=certs.validity_from(timezone.now(), 30))
    cases = [
        (chain_pem, _key_pem(other_key), "does not match"),
        (certs.der_to_pem(certs.to_der(leaf)) + chain_pem, _key_pem(other_key), "not a CA"),
        (chain_pem.split("-----END CERTIFICATE-----")[0][:-20], _key_pem(mid_key), "not a PEM"),
        (chain_pem, b"not a key", "private key"),
        (certs.der_to_pem(certs.to_der(mid)) + certs.der_to_pem(certs.to_der(_external_ca(root_in_chain=True)[0])),
         _key_pem(mid_key), "does not check"),
    ]
    for chain, key, message in cases:
        (tmp_path / "chain.pem").write_text(chain)
        (tmp_path / "key.pem").write_bytes(key)
        with pytest.raises(CommandError, match=message):
            call_command("c2pa_ca", "install", "--chain", str(tmp_path / "chain.pem"), "--key",
                         str(tmp_path / "key.pem"), stdout=io.StringIO())
    assert not CertificateAuthority.objects.filter(origin="installed").exists()


def test_an_organizations_uploaded_chain_signs_instead_and_c2pa_trusts_it_under_its_own_root(org):
    key = _hybrid(org)
    root, mid, mid_key, _ = _external_ca(root_in_chain=True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = certs.build_end_entity(leaf_key.public_key(), name=certs.subject_name(organization="Org", common_name="g"),
                                  issuer=mid, issuer_key=mid_key, validity=certs.validity_from(timezone.now(), 90))
    chain_pem = [certs.der_to_pem(certs.to_der(c)) for c in (leaf, mid, root)]
    generator_c2pa_certificate_upload(generator=key.generator, chain_pem=chain_pem, key_pem=_key_pem(leaf_key).decode())
    credentials = generator_c2pa_credentials(key)
    assert credentials.es256_chain == (certs.to_der(leaf), certs.to_der(mid))  # the root left out
    assert_trusted(c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key, [certs.to_der(root)]))
    assert credentials.ml_dsa_chain[1] == bytes(authority.current_issuer(Family.ML_DSA_65).certificate)


def test_c2pa_signing_defaults_to_ml_dsa_and_hybrid_needs_a_server_managed_generator(org):
    assert factories.make_generator(org=org).c2pa_signing == Generator.C2paSigning.ML_DSA_65
    from core.errors import ValidationFailed
    from generators.services import SuppliedPublicKey

    raw = crypto.generate_keypair()[1]
    with pytest.raises(ValidationFailed):
        generator_register(org=org, name="c", public_key=SuppliedPublicKey("k", "ml-dsa-65", raw),
                           c2pa_signing="hybrid")
    with pytest.raises(ValidationFailed):
        generator_register(org=org, name="c", public_key=None, c2pa_signing="rsa")


def test_reseal_secrets_moves_every_c2pa_key_to_the_newest_id(org, settings):
    from tests.key_rings import OLD_SECRET, ROTATED

    settings.KEY_ENCRYPTION_KEY = OLD_SECRET
    key = _hybrid(org)
    _root, mid, mid_key, _ = _external_ca(root_in_chain=True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = certs.build_end_entity(leaf_key.public_key(), name=certs.subject_name(organization="o", common_name="g"),
                                  issuer=mid, issuer_key=mid_key, validity=certs.validity_from(timezone.now(), 90))
    before = generator_c2pa_credentials(key)
    generator_c2pa_certificate_upload(generator=key.generator, chain_pem=[certs.der_to_pem(certs.to_der(leaf))],
                                      key_pem=_key_pem(leaf_key).decode())
    settings.KEY_ENCRYPTION_KEY = ROTATED
    output = io.StringIO()
    call_command("reseal_secrets", stdout=output)
    assert "C2PA CA keys: 4 resealed" in output.getvalue()
    assert "C2PA ES256 keys: 1 resealed" in output.getvalue()
    assert "uploaded C2PA keys: 1 resealed" in output.getvalue()
    assert "still under other ids: 0" in output.getvalue()
    # Everything still unseals under the new id alone, and signs as before.
    settings.KEY_ENCRYPTION_KEY = "k2:a-new-key-encryption-secret-0123456789"
    after = generator_c2pa_credentials(key)
    assert after.es256_private_key.private_numbers() == leaf_key.private_numbers()
    assert after.ml_dsa_chain == before.ml_dsa_chain
    for ca in CertificateAuthority.objects.all():
        authority.ca_private_key(ca)
    from generators.certificates import _es256_context, _unseal_ec

    stored = GeneratorCertificate.objects.get(key=key)
    assert _unseal_ec(stored.encrypted_es256_private_key, _es256_context(key.pk)).private_numbers() == (
        before.es256_private_key.private_numbers())


def test_an_expired_upload_gives_way_to_the_deployments_certificates(org):
    key = _hybrid(org)
    _root, mid, mid_key, _ = _external_ca(root_in_chain=True)
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = certs.build_end_entity(leaf_key.public_key(), name=certs.subject_name(organization="o", common_name="g"),
                                  issuer=mid, issuer_key=mid_key, validity=certs.validity_from(timezone.now(), 90))
    upload = generator_c2pa_certificate_upload(generator=key.generator, key_pem=_key_pem(leaf_key).decode(),
                                               chain_pem=[certs.der_to_pem(certs.to_der(leaf))])
    assert generator_c2pa_credentials(key).es256_chain == (certs.to_der(leaf),)
    type(upload).objects.filter(pk=upload.pk).update(not_after=timezone.now() - timedelta(seconds=1))
    chain = generator_c2pa_credentials(key).es256_chain
    assert chain[1] == bytes(authority.current_issuer(Family.ES256).certificate)
    assert certs.verify_chain(chain, trust_anchor_certificates(), timezone.now()).trusted


def test_c2pa_ca_show_makes_and_lists_the_cas_and_install_needs_readable_files(tmp_path):
    output = io.StringIO()
    call_command("c2pa_ca", "show", stdout=output)
    lines = output.getvalue().splitlines()
    assert len(lines) == 4 and all("(service)" in line for line in lines)
    assert "CN=C2PA ES256 Root CA G1,O=Content Provenance Service" in output.getvalue()
    with pytest.raises(CommandError, match="cannot read"):
        call_command("c2pa_ca", "install", "--chain", str(tmp_path / "missing.pem"), "--key",
                     str(tmp_path / "missing.pem"), stdout=io.StringIO())
    (tmp_path / "big.pem").write_bytes(b"A" * 300_000)
    with pytest.raises(CommandError, match="over"):
        call_command("c2pa_ca", "install", "--chain", str(tmp_path / "big.pem"), "--key", str(tmp_path / "big.pem"),
                     stdout=io.StringIO())
