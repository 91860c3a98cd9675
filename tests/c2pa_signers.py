"""Manifest signers for tests: a test CA (ECDSA root and intermediate) issuing an ES256 claim-signing
certificate as c2pa-rs's profile check wants it, an ML-DSA-65 key with a certificate from the same CA, and
c2pa-python's report with that root (and a time-stamp authority's) configured as trust anchors.

`hybrid_signer()` and `ml_dsa_signer()` give `media_codecs.c2pa.ManifestSigner`s; `trusted_report(data,
mime, anchors)` reads a file with c2pa-python trusting `anchors` (PEM certificates)."""

from __future__ import annotations

import datetime
import functools
import io
import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from media_codecs.c2pa.manifest import COSE_ALG_ES256, COSE_ALG_ML_DSA_65, CoseKey, ManifestSigner, TimeStamper

NOW = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
DOCUMENT_SIGNING = x509.ObjectIdentifier("1.3.6.1.5.5.7.3.36")
READ_SETTINGS = {"verify": {"remote_manifest_fetch": False, "ocsp_fetch": False}}


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Test Deployment")])


def _usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                         data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                         encipher_only=False, decipher_only=False)


def _certificate(subject: str, public_key: object, issuer: x509.Certificate | None, issuer_key: object, *,
                 ca: bool) -> x509.Certificate:
    builder = (x509.CertificateBuilder().subject_name(_name(subject))
               .issuer_name(issuer.subject if issuer is not None else _name(subject))
               .public_key(public_key).serial_number(x509.random_serial_number())
               .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=365))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
               .add_extension(_usage(ca=ca), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False))
    if issuer is not None:
        ski = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski),
                                        critical=False)
    if not ca:
        builder = builder.add_extension(
            x509.ExtendedKeyUsage([DOCUMENT_SIGNING, ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
    algorithm = None if isinstance(issuer_key, MLDSA65PrivateKey) else hashes.SHA256()
    return builder.sign(issuer_key, algorithm)


@functools.cache
def signing_ca() -> dict:
    """{'root', 'intermediate', 'es256', 'es256_key', 'ml_dsa', 'ml_dsa_key'}: certificates and keys."""
    root_key, intermediate_key = ec.generate_private_key(ec.SECP384R1()), ec.generate_private_key(ec.SECP256R1())
    root = _certificate("Test Root CA", root_key.public_key(), None, root_key, ca=True)
    intermediate = _certificate("Test Signing CA", intermediate_key.public_key(), root, root_key, ca=True)
    es256_key, ml_dsa_key = ec.generate_private_key(ec.SECP256R1()), MLDSA65PrivateKey.generate()
    es256 = _certificate("Test Generator", es256_key.public_key(), intermediate, intermediate_key, ca=False)
    ml_dsa = _certificate("Test Generator (ML-DSA-65)", ml_dsa_key.public_key(), intermediate, intermediate_key,
                          ca=False)
    return {"root": root, "intermediate": intermediate, "es256": es256, "es256_key": es256_key, "ml_dsa": ml_dsa,
            "ml_dsa_key": ml_dsa_key}


def der(certificate: x509.Certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.DER)


def pem(*certificates: x509.Certificate) -> str:
    return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)


def es256_sign(key: ec.EllipticCurvePrivateKey):
    def sign(message: bytes) -> bytes:
        r, s = decode_dss_signature(key.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")
    return sign


def ml_dsa_key() -> CoseKey:
    ca = signing_ca()
    return CoseKey(COSE_ALG_ML_DSA_65, (der(ca["ml_dsa"]), der(ca["intermediate"])), ca["ml_dsa_key"].sign,
                   kid="test-kid", public_key=ca["ml_dsa_key"].public_key().public_bytes_raw())


def hybrid_signer(time_stamp: TimeStamper | None = None) -> ManifestSigner:
    ca = signing_ca()
    claim = CoseKey(COSE_ALG_ES256, (der(ca["es256"]), der(ca["intermediate"])), es256_sign(ca["es256_key"]))
    return ManifestSigner(claim, ml_dsa_key(), time_stamp=time_stamp)


def ml_dsa_signer(time_stamp: TimeStamper | None = None) -> ManifestSigner:
    return ManifestSigner(ml_dsa_key(), time_stamp=time_stamp)


def trusted_report(data: bytes, mime: str, anchors: Sequence[x509.Certificate] = ()) -> dict:
    """c2pa-python's report on a file, trusting the test root and `anchors` (a TSA's root, say)."""
    import c2pa

    bundle = pem(signing_ca()["root"], *anchors)
    settings = {**READ_SETTINGS, "trust": {"trust_anchors": bundle}}
    context = c2pa.Context.from_dict(settings)
    return json.loads(c2pa.Reader(mime, io.BytesIO(data), context=context).json())


def codes(report: dict, kind: str) -> list[str]:
    return [item["code"] for item in report["validation_results"]["activeManifest"][kind]]


def tsa_stamper(url: str) -> TimeStamper:
    """A time stamper asking the authority at `url` (tests/tsa_server.LocalTsa) for each message's token."""
    import requests

    from record_format import timestamp

    def one(message: bytes) -> bytes:
        request = timestamp.request_for(message)
        answer = requests.post(url, data=request.as_bytes(), timeout=30,
                               headers={"Content-Type": "application/timestamp-query"})
        return timestamp.token_from_response(answer.content, request)

    def stamp(messages: Sequence[bytes]) -> list[bytes]:  # in parallel, as the service asks (core.tsa)
        with ThreadPoolExecutor(max_workers=max(1, len(messages))) as pool:
            return list(pool.map(one, messages))
    return stamp
