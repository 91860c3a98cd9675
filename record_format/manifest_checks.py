"""The checks a verifier runs on a C2PA manifest, each with a status and a plain-words message.

Used by the service's verification (with the generator's registered ML-DSA-65 key as the post-quantum
key) and by the client's offline verifier (with pinned keys). Pure: no Django, no network.

- claim_signature: the COSE_Sign1 over the claim, with the key of its x5chain end-entity certificate
  (ES256 in a hybrid manifest, ML-DSA-65 in a post-quantum-only one).
- pq_signature: the ML-DSA-65 signature: a hybrid manifest's RFC 9338 countersignature over the claim and
  the claim signature, or the claim signature itself; checked with `pq_verify` when the caller knows the
  signer's key (found by the kid in its header), else with its certificate.
- certificate_chain: every signer's chain up to one of the trust anchors, valid at the stamped time (or
  now without a stamp).
- time_stamp: the claim signature's `sigTst2` token, an RFC 3161 stamp of that signature by an authority
  chaining to `tsa_roots`.
- hard_binding: the format's hash of the file minus the store (`c2pa.hash.data`, or BMFF's).
- assertions: every hashed URI of the claim matches its assertion.
- ingredients: each ingredient's manifest is in the store and hashes to the value the ingredient names.
"""

from __future__ import annotations

import datetime
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography import x509

from media_codecs.c2pa import signatures
from media_codecs.c2pa.manifest import (
    COSE_ALG,
    COSE_ALG_ML_DSA_65,
    COSE_KID,
    COSE_X5CHAIN,
    countersign_structure,
    sig_structure,
    superbox_content,
    time_stamp_message,
)
from media_codecs.c2pa.reading import ReadManifest, assertion_hash_matches, assertion_references, binding_matches
from media_codecs.errors import CodecError
from record_format import certificates, timestamp

CHECKS = ("claim_signature", "pq_signature", "certificate_chain", "time_stamp", "hard_binding", "assertions",
          "ingredients")
PqVerify = Callable[[str | None, bytes, bytes], bool | None]  # (kid, message, signature) -> None: key unknown


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # valid | invalid | absent | unsupported | trusted | untrusted | unchecked | none
    message: str


@dataclass(frozen=True)
class ManifestReport:
    label: str
    signing: str  # "hybrid", "ml-dsa-65", or the COSE algorithm's name for anyone else's manifest
    checks: tuple[Check, ...]
    time: datetime.datetime | None  # the trusted time of the claim signature, from its time stamp
    pq_expected: bool = True  # ours (it carries our provenance assertion): its ML-DSA-65 signature must hold


    def status(self, name: str) -> str:
        return next(check.status for check in self.checks if check.name == name)

    @property
    def signatures_valid(self) -> bool:
        """The claim signature holds, and so does the ML-DSA-65 one (the same for a PQ-only manifest); another
        signer's manifest without a post-quantum signature needs only its claim signature."""
        pq = self.status("pq_signature")
        pq_holds = pq == "valid" or (pq == "absent" and not self.pq_expected)
        return self.status("claim_signature") == "valid" and pq_holds

    @property
    def intact(self) -> bool:
        """The file and every assertion are what was signed."""
        return self.status("hard_binding") == "valid" and self.status("assertions") == "valid"

    def as_dict(self) -> dict:
        return {"manifest": self.label, "signing": self.signing,
                "time": self.time.isoformat().replace("+00:00", "Z") if self.time else None,
                "valid": self.signatures_valid and self.intact,
                "checks": [{"check": c.name, "status": c.status, "message": c.message} for c in self.checks]}


_ALGORITHM_NAMES = {-7: "es256", -35: "es384", -36: "es512", -37: "ps256", -38: "ps384", -39: "ps512",
                    -8: "ed25519", COSE_ALG_ML_DSA_65: "ml-dsa-65"}


def check_manifest(data: bytes, manifest: ReadManifest, *, anchors: Sequence[bytes], tsa_roots: Sequence[bytes],
                   pq_verify: PqVerify | None = None, now: datetime.datetime | None = None) -> ManifestReport:
    """Every check of the module docstring on `manifest`, read from `data`."""
    now = now or datetime.datetime.now(datetime.UTC)
    counter = manifest.countersignature
    hybrid = counter is not None
    signing = "hybrid" if hybrid else _ALGORITHM_NAMES.get(manifest.alg, str(manifest.alg))
    stamp, stamped_at = _time_stamp(manifest, tsa_roots)
    checks = [
        _claim_signature(manifest, pq_verify),
        _pq_signature(manifest, counter, pq_verify),
        _chains(manifest, counter, anchors, stamped_at or now),
        stamp,
        _binding(data, manifest),
        _assertions(manifest),
        _ingredients(manifest),
    ]
    return ManifestReport(manifest.label, signing, tuple(checks), stamped_at, manifest.provenance is not None)


def _leaf(chain: list[bytes]) -> x509.Certificate:
    return signatures.load_certificate(chain[0] if chain else b"")


def _claim_signature(manifest: ReadManifest, pq_verify: PqVerify | None) -> Check:
    message = sig_structure(manifest.protected_bytes, manifest.claim_bytes)
    if manifest.alg == COSE_ALG_ML_DSA_65 and pq_verify is not None:
        verdict = pq_verify(manifest.kid, message, manifest.signature)
        if verdict is not None:
            return _signature_check("claim_signature", verdict, "ML-DSA-65")
    try:
        valid = signatures.verify(manifest.alg, _leaf(manifest.certificate_chain), message, manifest.signature)
    except signatures.BadCertificate:
        return Check("claim_signature", "invalid", "The signing certificate is missing or not X.509.")
    except signatures.UnsupportedAlgorithm:
        return Check("claim_signature", "unsupported", f"The signature algorithm ({manifest.alg!r}) is not one "
                     "this verifier checks.")
    return _signature_check("claim_signature", valid, _ALGORITHM_NAMES.get(manifest.alg, "the").upper())


def _signature_check(name: str, valid: bool, algorithm: str) -> Check:
    if valid:
        return Check(name, "valid", f"The {algorithm} signature over the manifest's claim checks out.")
    return Check(name, "invalid", f"The {algorithm} signature does not match the claim: the manifest was altered "
                 "or signed by another key.")


def _pq_signature(manifest: ReadManifest, counter: list | None, pq_verify: PqVerify | None) -> Check:
    if counter is None:
        if manifest.alg != COSE_ALG_ML_DSA_65:
            return Check("pq_signature", "absent", "No post-quantum (ML-DSA-65) signature travels in this manifest.")
        claim = _claim_signature(manifest, pq_verify)
        return Check("pq_signature", claim.status, claim.message)
    protected_bytes, _, signature = counter
    try:
        protected = _decode_map(protected_bytes)
    except ValueError:
        return Check("pq_signature", "invalid", "The ML-DSA-65 countersignature's header is not a CBOR map.")
    if protected.get(COSE_ALG) != COSE_ALG_ML_DSA_65:
        return Check("pq_signature", "invalid", "The countersignature is not an ML-DSA-65 signature.")
    message = countersign_structure(manifest.protected_bytes, protected_bytes, manifest.claim_bytes,
                                    manifest.signature)
    kid = protected.get(COSE_KID)
    if pq_verify is not None:
        verdict = pq_verify(kid.decode(errors="replace") if isinstance(kid, bytes) else None, message, signature)
        if verdict is not None:
            return _countersignature_check(verdict)
    try:
        return _countersignature_check(signatures.verify(COSE_ALG_ML_DSA_65, _leaf(_chain(protected)), message,
                                                         signature))
    except (signatures.BadCertificate, signatures.UnsupportedAlgorithm):
        return Check("pq_signature", "invalid", "The ML-DSA-65 countersignature has no usable certificate.")


def _countersignature_check(valid: bool) -> Check:
    if valid:
        return Check("pq_signature", "valid", "The ML-DSA-65 (post-quantum) countersignature over the claim and "
                     "its signature checks out.")
    return Check("pq_signature", "invalid", "The ML-DSA-65 (post-quantum) countersignature does not match: it was "
                 "altered, or the claim or its signature was.")


def _decode_map(data: bytes) -> dict:
    import cbor2  # already loaded by media_codecs.c2pa; kept local to the one decode here

    try:
        value = cbor2.loads(data)
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError, LookupError):
        raise ValueError("not CBOR") from None
    if not isinstance(value, dict):
        raise ValueError("not a map")
    return value


def _chain(header: dict) -> list[bytes]:
    chain = header.get(COSE_X5CHAIN)
    if isinstance(chain, bytes):
        return [chain]
    return [c for c in chain if isinstance(c, bytes)] if isinstance(chain, list | tuple) else []


def _chains(manifest: ReadManifest, counter: list | None, anchors: Sequence[bytes],
            at: datetime.datetime) -> Check:
    chains = [("claim", manifest.certificate_chain)]
    if counter is not None:
        try:
            chains.append(("post-quantum", _chain(_decode_map(counter[0]))))
        except ValueError:
            chains.append(("post-quantum", []))
    if not anchors:
        return Check("certificate_chain", "unchecked", "No trust anchor is configured here, so who signed is "
                     "not checked against a trust list.")
    for role, chain in chains:
        outcome = certificates.verify_chain(chain, anchors, at)
        if not outcome.trusted:
            return Check("certificate_chain", "untrusted" if outcome.problem == "untrusted" else "invalid",
                         f"The {role} signing certificate is not trusted: {outcome.problem}.")
    return Check("certificate_chain", "trusted", "Every signing certificate chains to a trusted certificate "
                 "authority and was valid when the manifest was signed.")


def _time_stamp(manifest: ReadManifest, tsa_roots: Sequence[bytes]) -> tuple[Check, datetime.datetime | None]:
    token = manifest.time_stamp_token
    if token is None:
        return Check("time_stamp", "absent", "The signature carries no time stamp: its time is the signer's own "
                     "claim."), None
    if not tsa_roots:
        return Check("time_stamp", "unchecked", "A time stamp is present, but no time-stamp authority is trusted "
                     "here."), None
    roots = []
    for root in tsa_roots:
        try:
            roots.append(x509.load_der_x509_certificate(root))
        except ValueError:
            continue
    try:
        moment = timestamp.time_of(token, time_stamp_message(manifest.protected_bytes, manifest.signature), roots)
    except timestamp.TimestampError as error:
        return Check("time_stamp", "invalid", f"The time stamp does not prove the signature's time: {error}."), None
    return Check("time_stamp", "valid", f"A trusted time-stamp authority saw this signature on "
                 f"{moment:%Y-%m-%d at %H:%M:%S} UTC."), moment


def _binding(data: bytes, manifest: ReadManifest) -> Check:
    try:
        valid = binding_matches(data, manifest)
    except CodecError:
        valid = False
    if valid:
        return Check("hard_binding", "valid", "The file's bytes are exactly the ones the manifest was signed for.")
    return Check("hard_binding", "invalid", "The file changed after the manifest was signed: its hash no longer "
                 "matches the manifest's.")


def _assertions(manifest: ReadManifest) -> Check:
    references = assertion_references(manifest)
    if references and all(assertion_hash_matches(manifest, reference) for reference in references):
        return Check("assertions", "valid", "Every statement in the manifest is the one that was signed.")
    return Check("assertions", "invalid", "A statement in the manifest is missing or was changed after signing.")


def _ingredients(manifest: ReadManifest) -> Check:
    ingredients = manifest.ingredients
    if not ingredients:
        return Check("ingredients", "none", "The manifest names no earlier content it was made from.")
    for ingredient in ingredients:
        reference = ingredient.get("activeManifest") or ingredient.get("c2pa_manifest")
        if not isinstance(reference, dict) or not isinstance(reference.get("url"), str):
            continue  # an ingredient without a manifest of its own
        label = reference["url"].removeprefix("self#jumbf=/c2pa/").split("/")[0]
        box = manifest.store_boxes.get(label)
        if box is None or hashlib.sha256(superbox_content(box)).digest() != reference.get("hash"):
            return Check("ingredients", "invalid", "An earlier manifest this one names is missing or was changed.")
    count = len(ingredients)
    noun, verb = ("manifests", "are") if count > 1 else ("manifest", "is")
    return Check("ingredients", "valid", f"The {count} earlier {noun} this one was made from {verb} kept "
                 "unchanged in the file.")
