"""An upstream C2PA manifest: the store a JPEG or PNG already carries when it reaches us, validated.

At sign time the service strips the store (our watermark changes the pixels, so its data hash could no
longer match) and keeps the store bytes with the validation result computed here against the uploaded
file. At embed time the store comes back through `upstream_from_store` and becomes the `parentOf`
ingredient of our manifest (`ingredients.py`), its manifests copied verbatim before ours.

Validation follows what c2pa-rs reports for an active manifest (C2PA 2.2 section 15), code for code and
URL for URL, so that a reader re-validating the ingredient finds nothing new (c2pa-rs lists only the
differences, in `ingredientDeltas`): the COSE_Sign1 signature with the x5chain leaf's key, the validity
period of that certificate at `at` (no time-stamp is read), every hashed-URI assertion and the data hash.
No trust list is configured, so a good signature is reported `signingCredential.untrusted`, and OCSP is
never fetched (`signingCredential.ocsp.skipped`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509

from media_codecs import jumbf
from media_codecs.c2pa import carriers, signatures
from media_codecs.c2pa.manifest import DATA_HASH_LABEL, SIGNATURE_LABEL, sig_structure, superbox_content
from media_codecs.c2pa.reading import (
    ReadManifest,
    assertion_hash_matches,
    assertion_label,
    assertion_references,
    binding_matches,
    parse_manifest,
    store_manifests,
)
from media_codecs.errors import CorruptMedia, MediaTooLarge

MAX_UPSTREAM_STORE_BYTES = 4 * 1024 * 1024  # thumbnails and a few ingredient manifests; kept with the record
TOLERATED_FAILURES = ("signingCredential.untrusted",)
_KINDS = ("success", "informational", "failure")  # c2pa-rs: still a Valid manifest without a trust list
_OTHER_HARD_BINDINGS = ("c2pa.hash.boxes", "c2pa.hash.bmff", "c2pa.hash.bmff.v2", "c2pa.hash.bmff.v3",
                        "c2pa.hash.collection.data")


@dataclass(frozen=True)
class UpstreamManifest:
    """A manifest store found in an uploaded file, with the validation of its active manifest."""

    store: bytes  # the JUMBF store, verbatim: what the service keeps (at most MAX_UPSTREAM_STORE_BYTES)
    format: str  # MIME type of the file it came in
    label: str  # the active (last) manifest's label
    title: str | None  # the claim's `dc:title`
    instance_id: str | None  # the claim's `instanceID`
    validation_results: dict  # {"activeManifest": {"success": [...], "informational": [...], "failure": [...]}}
    manifest_boxes: tuple[bytes, ...]  # every manifest superbox of the store, verbatim, the active one last
    active_manifest_hash: bytes  # SHA-256 of the active manifest superbox minus its header (c2pa-rs's way)
    claim_signature_hash: bytes  # SHA-256 of its `c2pa.signature` superbox minus its header

    @property
    def manifest_count(self) -> int:
        return len(self.manifest_boxes)

    @property
    def failure_codes(self) -> list[str]:
        return [status["code"] for status in self.validation_results["activeManifest"]["failure"]]

    @property
    def is_valid(self) -> bool:
        """c2pa's `Valid` state: signature validated inside the certificate's validity, no failure but trust."""
        success = {status["code"] for status in self.validation_results["activeManifest"]["success"]}
        return ({"claimSignature.validated", "claimSignature.insideValidity"} <= success
                and all(code in TOLERATED_FAILURES for code in self.failure_codes))


def validate_upstream(data: bytes, *, at: datetime | None = None) -> UpstreamManifest | None:
    """The C2PA store of a JPEG or PNG validated against that file, or None when it carries none.

    `at` is when the signing certificate must be valid (now by default). Raises UnsupportedFormat for
    other formats, CorruptMedia for a malformed file or store, MediaTooLarge for a store over
    MAX_UPSTREAM_STORE_BYTES or past the JUMBF bounds.
    """
    carrier = carriers.carrier_for(data)
    found = carrier.find(data)
    if found is None:
        return None
    _check_size(found.store)
    manifests = store_manifests(found.store)
    active = parse_manifest(manifests[-1], found.start, found.length, len(manifests), carrier)
    results = {"activeManifest": _validate(data, active, at or datetime.now(UTC))}
    return _upstream(found.store, manifests, active, carrier.mime_type, results)


def upstream_from_store(store: bytes, *, format: str, validation_results: dict) -> UpstreamManifest:
    """Rebuild the upstream manifest the service kept at sign time, for `embed(..., parent=...)`.

    Raises CorruptMedia for a malformed store or validation result, MediaTooLarge past the bounds.
    """
    _check_size(store)
    codes = validation_results.get("activeManifest") if isinstance(validation_results, dict) else None
    if not isinstance(codes, dict) or not all(isinstance(codes.get(kind), list) for kind in _KINDS):
        raise CorruptMedia("the upstream validation result is not a C2PA validation-results map")
    manifests = store_manifests(store)
    active = parse_manifest(manifests[-1], 0, 0, len(manifests))
    return _upstream(store, manifests, active, format, validation_results)


def _check_size(store: bytes) -> None:
    if len(store) > MAX_UPSTREAM_STORE_BYTES:
        raise MediaTooLarge(f"the upstream C2PA manifest store is larger than {MAX_UPSTREAM_STORE_BYTES} bytes")


def _upstream(store: bytes, manifests: list[jumbf.SuperBox], active: ReadManifest, format: str,
              results: dict) -> UpstreamManifest:
    title, instance_id = active.claim.get("dc:title"), active.claim.get("instanceID")
    signature = manifests[-1].child(SIGNATURE_LABEL)
    return UpstreamManifest(store, format, active.label, title if isinstance(title, str) else None,
                            instance_id if isinstance(instance_id, str) else None, results,
                            tuple(box.raw for box in manifests), _box_hash(manifests[-1]), _box_hash(signature))


def _box_hash(box: jumbf.SuperBox) -> bytes:
    """A manifest reference hash: SHA-256 of the superbox minus its header (C2PA 2.2 8.4.2.3; c2pa-rs
    `Store::calc_manifest_box_hash` rebuilds the same bytes from the parsed claim)."""
    return hashlib.sha256(superbox_content(box.raw)).digest()


def _validate(data: bytes, manifest: ReadManifest, at: datetime) -> dict[str, list[dict]]:
    statuses = [*_signature_statuses(manifest, at), *_assertion_statuses(manifest), _binding_status(data, manifest)]
    grouped: dict[str, list[dict]] = {kind: [] for kind in _KINDS}
    for kind, status in statuses:
        grouped[kind].append(status)
    return grouped


def _status(kind: str, code: str, url: str, explanation: str) -> tuple[str, dict]:
    return kind, {"code": code, "url": url, "explanation": explanation}


def _signature_statuses(manifest: ReadManifest, at: datetime) -> list[tuple[str, dict]]:
    url = f"self#jumbf=/c2pa/{manifest.label}/{SIGNATURE_LABEL}"
    mismatch = _status("failure", "claimSignature.mismatch", url, "claim signature is not valid")
    skipped = _status("informational", "signingCredential.ocsp.skipped", url, "OCSP fetching skipped")
    chain = manifest.certificate_chain
    try:
        certificate = signatures.load_certificate(chain[0] if chain else b"")
        valid = signatures.verify(manifest.alg, certificate, sig_structure(manifest.protected_bytes,
                                                                           manifest.claim_bytes), manifest.signature)
    except signatures.BadCertificate:
        return [_status("failure", "signingCredential.invalid", url, "signing certificate missing or not X.509"),
                mismatch, skipped]
    except signatures.UnsupportedAlgorithm:
        return [_status("failure", "algorithm.unsupported", "Cose_Sign1", "unsupported or missing Cose algorithm"),
                mismatch, skipped]
    statuses = [_validity_status(certificate, url, at)] if valid else []
    statuses += [_status("success", "claimSignature.validated", url, "claim signature valid")] if valid else [mismatch]
    return [*statuses, skipped, _status("failure", "signingCredential.untrusted", url, "signing certificate untrusted")]


def _validity_status(certificate: x509.Certificate, url: str, at: datetime) -> tuple[str, dict]:
    if certificate.not_valid_before_utc <= at <= certificate.not_valid_after_utc:
        return _status("success", "claimSignature.insideValidity", url, "claim signature valid")
    return _status("failure", "signingCredential.expired", url, f"certificate not valid at {at.isoformat()}")


def _assertion_statuses(manifest: ReadManifest) -> list[tuple[str, dict]]:
    statuses = []
    for reference in assertion_references(manifest):
        label = assertion_label(reference["url"], manifest.label)
        url = f"self#jumbf=/c2pa/{manifest.label}/c2pa.assertions/{label}" if label else reference["url"]
        matches = assertion_hash_matches(manifest, reference)
        if matches:
            statuses.append(_status("success", "assertion.hashedURI.match", url,
                                    f"hashed uri matched: {reference['url']}"))
        elif matches is None:
            statuses.append(_status("failure", "assertion.missing", url, f"assertion missing: {reference['url']}"))
        else:
            statuses.append(_status("failure", "assertion.hashedURI.mismatch", url,
                                    f"hash does not match assertion data: {reference['url']}"))
    return statuses


def _binding_status(data: bytes, manifest: ReadManifest) -> tuple[str, dict]:
    label = manifest.carrier.binding_label if manifest.carrier else DATA_HASH_LABEL
    url = f"self#jumbf=/c2pa/{manifest.label}/c2pa.assertions/{label}"
    if isinstance(manifest.assertions.get(label), dict):
        kind = "bmffHash" if label != DATA_HASH_LABEL else "dataHash"
        if binding_matches(data, manifest):
            return _status("success", f"assertion.{kind}.match", url, "data hash valid")
        return _status("failure", f"assertion.{kind}.mismatch", url, "asset hash error: the data hash does not match")
    other = next((label for label in manifest.assertions if label.split("__")[0] in _OTHER_HARD_BINDINGS), None)
    if other is not None:
        return _status("failure", "algorithm.unsupported", f"self#jumbf=/c2pa/{manifest.label}/c2pa.assertions/{other}",
                       "only c2pa.hash.data hard bindings are checked")
    return _status("failure", "claim.hardBindings.missing", f"self#jumbf=/c2pa/{manifest.label}",
                   "no hard binding (c2pa.hash.data) in the active manifest")
