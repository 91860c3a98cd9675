"""C2PA test helpers: images carrying an upstream manifest, signed at test time by c2pa-python's own Builder
with an ES256 CA + end-entity chain made with cryptography (c2pa-rs's profile check wants v3, EKU, AKI and
SKI); c2pa-python's report on a file; hostile variants of a manifest store."""

from __future__ import annotations

import datetime
import functools
import io
import json

import numpy as np
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

TRAINED = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
MOMENT = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
READ_SETTINGS = {"verify": {"remote_manifest_fetch": False, "ocsp_fetch": False}}


def certificate_name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Upstream Labs")])


def _key_usage(*, signing: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=signing, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=not signing, crl_sign=not signing,
                         encipher_only=False, decipher_only=False)


def _issue(subject: str, public_key: object, ca_key: object, *, is_ca: bool,
           algorithm: object = None) -> x509.Certificate:
    """A v3 certificate from the upstream CA: what c2pa-rs's profile check wants (EKU, AKI, SKI)."""
    builder = (x509.CertificateBuilder().subject_name(certificate_name(subject))
               .issuer_name(certificate_name("Upstream CA"))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(MOMENT).not_valid_after(MOMENT + datetime.timedelta(days=3650))
               .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
               .add_extension(_key_usage(signing=not is_ca), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))
    if not is_ca:
        ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
        key_identifier = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski)
        builder = (builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
                   .add_extension(key_identifier, critical=False))
    return builder.sign(ca_key, algorithm)


@functools.cache
def _ca_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


@functools.cache
def _es256_chain() -> tuple[bytes, bytes]:
    """(PEM of end-entity + CA certificates, PEM of the end-entity's PKCS#8 key)."""
    ca_key, ee_key = _ca_key(), ec.generate_private_key(ec.SECP256R1())
    ca = _issue("Upstream CA", ca_key.public_key(), ca_key, is_ca=True, algorithm=hashes.SHA256())
    ee = _issue("Upstream Generator", ee_key.public_key(), ca_key, is_ca=False, algorithm=hashes.SHA256())
    pem = ee.public_bytes(serialization.Encoding.PEM) + ca.public_bytes(serialization.Encoding.PEM)
    key = ee_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                               serialization.NoEncryption())
    return pem, key


def c2pa_sign(data: bytes, mime: str, *, parent: bool = False, thumbnail: bool = False) -> bytes:
    """`data` signed by c2pa-python: a created AI image, or (parent=True) an edit whose parent is `data`."""
    import c2pa  # a test extra: importing this module does not need it

    pem, key = _es256_chain()
    signer = c2pa.Signer.from_info(c2pa.C2paSignerInfo(alg=b"es256", sign_cert=pem, private_key=key, ta_url=None))
    context = c2pa.Context.from_dict({**READ_SETTINGS, "builder": {"thumbnail": {"enabled": thumbnail}}})
    definition: dict = {"claim_generator_info": [{"name": "Upstream Generator", "version": "3.1"}],
                        "title": f"generated.{mime.split('/')[1]}"}
    if not parent:
        definition["assertions"] = [{"label": "c2pa.actions.v2", "data": {"actions": [
            {"action": "c2pa.created", "digitalSourceType": TRAINED}]}}]
    builder = c2pa.Builder(definition, context=context)
    if parent:
        builder.set_intent(c2pa.C2paBuilderIntent.EDIT)
    output = io.BytesIO()
    builder.sign(signer, mime, io.BytesIO(data), output)
    return output.getvalue()


def c2pa_report(data: bytes, mime: str) -> dict:
    """c2pa-python's JSON report on a file, with no remote fetch (needs the `c2pa` test extra)."""
    import c2pa

    context = c2pa.Context.from_dict(READ_SETTINGS)
    return json.loads(c2pa.Reader(mime, io.BytesIO(data), context=context).json())


def active_codes(report: dict, kind: str) -> list[str]:
    """The codes of one kind (`success`, `informational`, `failure`) c2pa reports for the active manifest."""
    return [item["code"] for item in report["validation_results"]["activeManifest"][kind]]


def hostile_stores(good: bytes, *, seed: int, mutations: int) -> list[bytes]:
    """A manifest store truncated, with random bytes changed, and with its first box sizes lying (the "c2pa"
    mark at byte 24 stays, so a reader still finds the store)."""
    rng = np.random.default_rng(seed)
    hostile = [good[:n] for n in (8, 24, 40, 100, len(good) // 2, len(good) - 1)]
    for _ in range(mutations):
        mutated = bytearray(good)
        for position in rng.integers(0, len(good), size=4):
            mutated[position] = rng.integers(0, 256)
        hostile.append(bytes(mutated))
    hostile += [good[:8] + size.to_bytes(4, "big") + good[12:] for size in (0, 1, 7, 9, 0xFFFFFFFF)]
    hostile += [size.to_bytes(4, "big") + good[4:] for size in (0, 1, 9, len(good) + 1, 0xFFFFFFFF)]
    return hostile
