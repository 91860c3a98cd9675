"""record_format.manifest_checks on manifests made here: every check's statuses, from the test CA's hybrid and
ML-DSA-65 signers, a real local time-stamp authority, and c2pa-python's own manifests (pure: no database)."""

import datetime
import functools

import pytest

from media_codecs.c2pa import ManifestFacts, embed, read_manifest
from media_codecs.c2pa.manifest import COSE_X5CHAIN
from record_format import manifest_checks
from tests.c2pa_signers import NOW, der, hybrid_signer, ml_dsa_signer, signing_ca, tsa_stamper
from tests.media import photo_bytes
from tests.tsa_server import OPENSSL, LocalTsa

pytestmark = pytest.mark.skipif(OPENSSL is None, reason="needs the openssl command")
FACTS = ManifestFacts(record_id="rec_1", model="m", generator_id="gen_1", kid="test-kid", token="svc_token",
                      certificate_chain=())


@pytest.fixture(scope="module")
def tsa():
    with LocalTsa() as authority:
        yield authority


@functools.cache
def _photo() -> bytes:
    return photo_bytes("astronaut", "jpeg")


def _check(data: bytes, *, anchors=None, tsa_roots=(), pq_verify=None, now=None) -> manifest_checks.ManifestReport:
    anchors = [der(signing_ca()["root"])] if anchors is None else anchors
    return manifest_checks.check_manifest(data, read_manifest(data), anchors=anchors, tsa_roots=tsa_roots,
                                          pq_verify=pq_verify, now=now)


def _statuses(report) -> dict[str, str]:
    return {check.name: check.status for check in report.checks}


def test_a_stamped_hybrid_manifest_passes_every_check(tsa):
    signed = embed(_photo(), FACTS, hybrid_signer(tsa_stamper(tsa.url)))
    report = _check(signed, tsa_roots=[der(tsa.root)])
    assert _statuses(report) == {"claim_signature": "valid", "pq_signature": "valid", "certificate_chain": "trusted",
                                 "time_stamp": "valid", "hard_binding": "valid", "assertions": "valid",
                                 "ingredients": "none"}
    assert report.signing == "hybrid" and report.signatures_valid and report.intact
    assert abs(report.time - datetime.datetime.now(datetime.UTC)) < datetime.timedelta(minutes=5)
    assert report.as_dict()["valid"] and all(check.message for check in report.checks)


def test_without_anchors_or_authority_roots_trust_is_unchecked(tsa):
    signed = embed(_photo(), FACTS, hybrid_signer(tsa_stamper(tsa.url)))
    statuses = _statuses(_check(signed, anchors=[]))
    assert statuses["certificate_chain"] == "unchecked" and statuses["time_stamp"] == "unchecked"


def test_another_root_is_untrusted_and_an_expired_chain_is_invalid(tsa):
    signed = embed(_photo(), FACTS, hybrid_signer())
    assert _statuses(_check(signed, anchors=[der(tsa.root)]))["certificate_chain"] == "untrusted"
    impostor = der(signing_ca.__wrapped__()["root"])  # the same name, another key: its signature does not hold
    assert _statuses(_check(signed, anchors=[impostor]))["certificate_chain"] == "invalid"
    later = NOW + datetime.timedelta(days=3650)
    assert _statuses(_check(signed, now=later))["certificate_chain"] == "invalid"


def test_a_stamp_of_other_bytes_or_from_an_untrusted_authority_is_invalid(tsa):
    signed = embed(_photo(), FACTS, hybrid_signer(lambda messages: tsa_stamper(tsa.url)([b"x"] * len(messages))))
    assert _statuses(_check(signed, tsa_roots=[der(tsa.root)]))["time_stamp"] == "invalid"
    good = embed(_photo(), FACTS, hybrid_signer(tsa_stamper(tsa.url)))
    assert _statuses(_check(good, tsa_roots=[der(signing_ca()["root"])]))["time_stamp"] == "invalid"
    assert _statuses(_check(embed(_photo(), FACTS, hybrid_signer())))["time_stamp"] == "absent"


def test_the_post_quantum_key_the_caller_knows_decides():
    signed = embed(_photo(), FACTS, hybrid_signer())
    refused = _check(signed, pq_verify=lambda kid, message, signature: False)
    assert _statuses(refused)["pq_signature"] == "invalid" and not refused.signatures_valid
    seen = []
    unknown = _check(signed, pq_verify=lambda kid, message, signature: seen.append(kid))  # None: key unknown
    assert seen == ["test-kid"] and _statuses(unknown)["pq_signature"] == "valid"  # then by its certificate


def test_an_ml_dsa_manifest_is_its_own_pq_signature():
    signed = embed(_photo(), FACTS, ml_dsa_signer())
    report = _check(signed)
    statuses = _statuses(report)
    assert report.signing == "ml-dsa-65" and statuses["claim_signature"] == statuses["pq_signature"] == "valid"
    assert statuses["certificate_chain"] == "trusted"


def test_a_changed_file_or_claim_signature_fails_its_check():
    signed = embed(_photo(), FACTS, hybrid_signer())
    tampered = signed[:-100] + bytes([signed[-100] ^ 1]) + signed[-99:]
    assert _statuses(_check(tampered))["hard_binding"] == "invalid"
    manifest = read_manifest(signed)
    bad = manifest.signature[:-1] + bytes([manifest.signature[-1] ^ 1])
    assert signed.count(manifest.signature) == 1
    report = _check(signed.replace(manifest.signature, bad))
    assert _statuses(report)["claim_signature"] == "invalid" and _statuses(report)["pq_signature"] == "invalid"


def test_a_garbage_certificate_is_an_invalid_check_not_an_error():
    from dataclasses import replace

    signed = embed(_photo(), FACTS, hybrid_signer())
    manifest = read_manifest(signed)
    broken = replace(manifest, protected={**manifest.protected, COSE_X5CHAIN: [b"not a certificate"]})
    report = manifest_checks.check_manifest(signed, broken, anchors=[der(signing_ca()["root"])], tsa_roots=[])
    statuses = _statuses(report)
    assert statuses["claim_signature"] == "invalid" and statuses["certificate_chain"] == "invalid"


def test_another_signers_manifest_needs_no_pq_signature():
    pytest.importorskip("c2pa")
    from tests.c2pa_upstream import c2pa_sign

    report = _check(c2pa_sign(_photo(), "image/jpeg"), anchors=[])
    statuses = _statuses(report)
    assert report.signing == "es256" and statuses["pq_signature"] == "absent"
    assert statuses["claim_signature"] == "valid" and report.signatures_valid and not report.pq_expected
