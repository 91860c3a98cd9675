"""record_format/certificates.py: the hierarchies it builds, the C2PA end-entity profile, verify_chain, and
independent checks of what it signs (openssl for ECDSA; dilithium-py for ML-DSA, which OpenSSL 3.0 lacks)."""

import shutil
import subprocess
from datetime import UTC, datetime, timedelta

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.x509.oid import ExtendedKeyUsageOID

from record_format import certificates as certs
from tests.purity import assert_imports_without_django

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def _hierarchy(kind: str = "ec", *, start: datetime = NOW):
    """(root, intermediate, end entity, end entity key) built as the service builds them."""
    if kind == "ec":
        root_key, mid_key, ee_key = (ec.generate_private_key(c) for c in (ec.SECP384R1(), ec.SECP256R1(),
                                                                            ec.SECP256R1()))
    else:
        root_key, mid_key, ee_key = (MLDSA65PrivateKey.generate() for _ in range(3))
    root = certs.build_root(root_key, name=certs.subject_name(organization="Svc", common_name="Root"),
                            validity=certs.validity_from(start, 3650))
    mid = certs.build_intermediate(mid_key.public_key(), name=certs.subject_name(organization="Svc",
                                                                                common_name="Intermediate"),
                                   issuer=root, issuer_key=root_key, validity=certs.validity_from(start, 1800))
    ee = certs.build_end_entity(ee_key.public_key(), name=certs.subject_name(organization="Org", common_name="gen"),
                                issuer=mid, issuer_key=mid_key, validity=certs.validity_from(start, 365))
    return root, mid, ee, ee_key, mid_key


def _der(*certificates: x509.Certificate) -> list[bytes]:
    return [certs.to_der(c) for c in certificates]


@pytest.fixture(scope="module")
def ec_chain():
    return _hierarchy("ec")


@pytest.fixture(scope="module")
def pq_chain():
    return _hierarchy("pq")


def test_the_module_imports_without_django():
    assert_imports_without_django(["record_format.certificates"])


def test_the_classical_end_entity_passes_the_c2pa_profile(ec_chain):
    root, mid, ee, _ee_key, _ = ec_chain
    assert certs.end_entity_problems(ee, NOW) == []
    assert ee.version == x509.Version.v3 and not certs.is_ca(ee)
    usage = ee.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.digital_signature and not usage.value.key_cert_sign
    ekus = ee.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert certs.DOCUMENT_SIGNING in ekus and ExtendedKeyUsageOID.EMAIL_PROTECTION in ekus
    aki = ee.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == mid.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    assert certs.algorithm_name(root) == "ecdsa-p384" and certs.algorithm_name(ee) == "ecdsa-p256"
    assert ee.signature_algorithm_oid.dotted_string == "1.2.840.10045.4.3.2"  # ecdsa-with-SHA256 from P-256


def test_ca_certificates_carry_the_ca_extensions(ec_chain):
    root, mid, *_ = ec_chain
    for certificate, path_length in ((root, 1), (mid, 0)):
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
        assert constraints.critical and constraints.value.ca and constraints.value.path_length == path_length
        assert certificate.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign
        certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
        certificate.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier)
    assert certs.is_self_signed(root) and not certs.is_self_signed(mid)


def test_names_are_organization_and_common_name_cut_to_64_characters():
    name = certs.subject_name(organization="O" * 80, common_name="  a  generator\nname " + "x" * 100)
    assert [a.value for a in name] == ["O" * 64, ("a generator name " + "x" * 100)[:64]]
    assert [a.value for a in certs.subject_name(organization="", common_name=" ")] == ["unnamed", "unnamed"]


def test_a_certificate_never_outlives_its_issuer(ec_chain):
    _root, mid, *_ = ec_chain
    key = ec.generate_private_key(ec.SECP256R1())
    long = certs.build_end_entity(key.public_key(), name=certs.subject_name(organization="o", common_name="c"),
                                  issuer=mid, issuer_key=ec.generate_private_key(ec.SECP256R1()),
                                  validity=certs.validity_from(NOW, 100 * 365))
    assert long.not_valid_after_utc == mid.not_valid_after_utc


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_openssl_verifies_the_classical_chain(ec_chain, tmp_path):
    root, mid, ee, *_ = ec_chain
    for name, certificate in (("root", root), ("mid", mid), ("ee", ee)):
        (tmp_path / f"{name}.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    at = str(int(NOW.timestamp()))
    result = subprocess.run(["openssl", "verify", "-attime", at, "-CAfile", tmp_path / "root.pem", "-untrusted",
                             tmp_path / "mid.pem", tmp_path / "ee.pem"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip().endswith("OK"), result.stderr
    # Without the intermediate, openssl cannot build the path: the check is real.
    broken = subprocess.run(["openssl", "verify", "-attime", at, "-CAfile", tmp_path / "root.pem",
                             tmp_path / "ee.pem"], capture_output=True, text=True)
    assert broken.returncode != 0


def test_dilithium_py_verifies_every_ml_dsa_signature_of_the_pq_chain(pq_chain):
    from dilithium_py.ml_dsa import ML_DSA_65

    root, mid, ee, *_ = pq_chain
    for child, parent in ((ee, mid), (mid, root), (root, root)):
        assert child.signature_algorithm_oid.dotted_string == certs.ML_DSA_65_OID
        public_key = parent.public_key().public_bytes_raw()
        assert ML_DSA_65.verify(public_key, child.tbs_certificate_bytes, child.signature)
        assert not ML_DSA_65.verify(public_key, child.tbs_certificate_bytes + b"x", child.signature)
    assert certs.algorithm_name(ee) == "ml-dsa-65"


@pytest.mark.parametrize("kind", ["ec", "pq"])
def test_a_good_chain_is_trusted_with_or_without_its_root(kind, ec_chain, pq_chain):
    root, mid, ee, *_ = ec_chain if kind == "ec" else pq_chain
    assert certs.verify_chain(_der(ee, mid), _der(root), NOW) == certs.ChainCheck(True, None)
    assert certs.verify_chain(_der(ee, mid, root), _der(root), NOW).trusted
    assert certs.verify_chain(_der(mid), _der(root), NOW).trusted


def test_expired_and_not_yet_valid_chains_are_refused(ec_chain):
    root, mid, ee, *_ = ec_chain
    assert certs.verify_chain(_der(ee, mid), _der(root), NOW + timedelta(days=400)) == certs.ChainCheck(
        False, "expired")
    assert certs.verify_chain(_der(ee, mid), _der(root), NOW - timedelta(days=1)).problem == "not yet valid"


def test_another_root_is_untrusted(ec_chain):
    root, mid, ee, *_ = ec_chain
    other_root = _hierarchy("ec")[0]  # same names, other keys
    assert certs.verify_chain(_der(ee, mid), _der(other_root), NOW).problem == "bad signature"
    stranger = certs.build_root(ec.generate_private_key(ec.SECP256R1()),
                                name=certs.subject_name(organization="X", common_name="Y"),
                                validity=certs.validity_from(NOW, 10))
    assert certs.verify_chain(_der(ee, mid), _der(stranger), NOW) == certs.ChainCheck(False, "untrusted")
    assert certs.verify_chain(_der(ee, mid), [], NOW).problem == "untrusted"
    # Sending the right root inside the chain does not make it an anchor.
    assert certs.verify_chain(_der(ee, mid, root), _der(stranger), NOW).problem == "untrusted"


def test_a_tampered_signature_is_refused(ec_chain, pq_chain):
    for root, mid, ee, *_ in (ec_chain, pq_chain):
        der = bytearray(certs.to_der(ee))
        der[-3] ^= 0x01  # inside the signature BIT STRING at the end
        assert certs.verify_chain([bytes(der), certs.to_der(mid)], _der(root), NOW).problem == "bad signature"


def test_a_non_ca_cannot_issue(ec_chain):
    root, mid, ee, ee_key, _ = ec_chain
    # An end entity that signs another certificate: the issuer is not a CA.
    child_key = ec.generate_private_key(ec.SECP256R1())
    child = certs.build_end_entity(child_key.public_key(), name=certs.subject_name(organization="o", common_name="c"),
                                   issuer=ee, issuer_key=ee_key, validity=certs.validity_from(NOW, 30))
    assert certs.verify_chain(_der(child, ee, mid), _der(root), NOW) == certs.ChainCheck(False, "not a CA")


def test_path_length_is_enforced(ec_chain):
    root, mid, _ee, _, mid_key = ec_chain
    # A second intermediate below one whose path length is 0.
    sub_key = ec.generate_private_key(ec.SECP256R1())
    sub = certs.build_intermediate(sub_key.public_key(), name=certs.subject_name(organization="o", common_name="s"),
                                   issuer=mid, issuer_key=mid_key, validity=certs.validity_from(NOW, 30))
    leaf = certs.build_end_entity(ec.generate_private_key(ec.SECP256R1()).public_key(),
                                  name=certs.subject_name(organization="o", common_name="l"), issuer=sub,
                                  issuer_key=sub_key, validity=certs.validity_from(NOW, 30))
    assert certs.verify_chain(_der(leaf, sub, mid), _der(root), NOW).problem == "path length exceeded"


def test_a_chain_out_of_order_does_not_link(ec_chain):
    root, mid, ee, *_ = ec_chain
    assert certs.verify_chain(_der(mid, ee), _der(root), NOW).problem in {"issuer mismatch", "untrusted"}


def test_loops_and_over_long_chains_are_refused(ec_chain):
    root, mid, ee, *_ = ec_chain
    assert certs.verify_chain(_der(ee, mid, mid), _der(root), NOW) == certs.ChainCheck(False, "loop")
    assert certs.verify_chain(_der(ee, mid, ee, mid), _der(root), NOW).problem == "loop"
    long = _der(ee) + _der(mid) * certs.MAX_CHAIN_LENGTH
    assert certs.verify_chain(long, _der(root), NOW) == certs.ChainCheck(False, "chain too long")
    assert certs.verify_chain([], _der(root), NOW) == certs.ChainCheck(False, "empty chain")


@pytest.mark.parametrize("garbage", [b"", b"\x00" * 10, b"0\x82\xff\xff" + b"\x01" * 40, b"-----BEGIN CERT"])
def test_garbage_der_is_a_problem_not_an_exception(garbage, ec_chain):
    root, mid, ee, *_ = ec_chain
    assert certs.verify_chain([garbage], _der(root), NOW) == certs.ChainCheck(False, "malformed certificate")
    assert certs.verify_chain(_der(ee, mid), [garbage], NOW).problem == "malformed certificate"
    with pytest.raises(certs.CertificateError):
        certs.load_der(garbage)


def test_the_profile_names_what_a_leaf_lacks(ec_chain):
    _root, mid, ee, ee_key, mid_key = ec_chain
    assert "a CA certificate, not an end-entity one" in certs.end_entity_problems(mid, NOW)
    assert any("expired" in p for p in certs.end_entity_problems(ee, NOW + timedelta(days=400)))
    bare = (x509.CertificateBuilder().subject_name(ee.subject).issuer_name(mid.subject)
            .public_key(ee_key.public_key()).serial_number(1)
            .not_valid_before(NOW - timedelta(days=1)).not_valid_after(NOW + timedelta(days=1))
            .sign(mid_key, hashes.SHA256()))
    problems = certs.end_entity_problems(bare, NOW)
    assert "no KeyUsage digitalSignature" in problems and "no authority key identifier" in problems
    assert any("extended key usage" in p for p in problems)
    any_eku = (x509.CertificateBuilder().subject_name(ee.subject).issuer_name(mid.subject)
               .public_key(ee_key.public_key()).serial_number(2)
               .not_valid_before(NOW - timedelta(days=1)).not_valid_after(NOW + timedelta(days=1))
               .add_extension(x509.KeyUsage(True, False, False, False, False, False, False, False, False), True)
               .add_extension(x509.ExtendedKeyUsage([certs.DOCUMENT_SIGNING,
                                                     ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE]), False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(mid_key.public_key()), False)
               .sign(mid_key, hashes.SHA256()))
    assert certs.end_entity_problems(any_eku, NOW) == ["anyExtendedKeyUsage is not allowed"]


def test_pem_helpers_round_trip_and_refuse_garbage(ec_chain):
    _root, mid, ee, ee_key, _ = ec_chain
    bundle = "".join(certs.der_to_pem(d) for d in _der(ee, mid))
    assert [certs.to_der(c) for c in certs.load_pem_chain(bundle)] == _der(ee, mid)
    for garbage in ("", "hello", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"):
        with pytest.raises(certs.CertificateError):
            certs.load_pem_chain(garbage)
    pem_key = ee_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                   serialization.NoEncryption())
    assert certs.same_public_key(certs.load_pem_ec_private_key(pem_key).public_key(), ee.public_key())
    ml_dsa_pem = MLDSA65PrivateKey.generate().private_bytes(serialization.Encoding.PEM,
                                                             serialization.PrivateFormat.PKCS8,
                                                             serialization.NoEncryption())
    for bad in (ml_dsa_pem, b"garbage"):
        with pytest.raises(certs.CertificateError):
            certs.load_pem_ec_private_key(bad)
    der = certs.ec_private_key_der(ee_key)
    assert certs.same_public_key(certs.ec_private_key_from_der(der).public_key(), ee.public_key())
