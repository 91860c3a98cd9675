"""Offline verification: a file, its record and pinned keys, checked with no call to the service.

Checks, in order, each with a message that says what failed:
1. the record's signed payload is its own four fields, and the pinned keys are its generator's;
2. the record's kid is among the pinned keys;
3. the ML-DSA-65 signature over the payload's canonical JSON verifies with that key;
4. the file's content hash (computed as the service does) is the record's;
5. with a time stamp on the record: an authority chaining to a pinned trust anchor stamped that signature;
6. with a C2PA manifest of ours in the file: both its signatures (the ML-DSA-65 one with the pinned key),
   its certificate chains to the pinned anchors, its time stamp, and its binding to the file
   (record_format.manifest_checks);
7. with pinned log keys: the record's inclusion proof leads to its checkpoint, which every pinned log key
   signed; with a pinned checkpoint too, that is the same tree (offline) or one linked to it by a
   consistency proof (`svc log verify`, which may ask the log for it).
"""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509

from media_codecs import CodecError
from media_codecs.c2pa import ReadManifest, read_manifest
from record_format import crypto, manifest_checks, timestamp
from record_format.canonical_json import canonicalize
from record_format.payload import SIGNED_FIELDS, signed_payload_bytes
from svc_client.checkpoint import Checkpoint, CheckpointError, LogKey, checkpoint_verify
from svc_client.keys import PinnedKeys
from svc_client.merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from svc_client.signing import content_hash

Consistency = Callable[[int, int], list[bytes]]  # (first size, second size) -> RFC 9162 consistency proof
LEAF_FIELDS = ("record_id", "content_hash", "generator_id", "model", "watermark_id", "signature", "kid",
               "signed_at")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    message: str


@dataclass
class OfflineResult:
    checks: list[Check] = field(default_factory=list)

    @property
    def authentic(self) -> bool:
        return bool(self.checks) and all(check.ok for check in self.checks)

    @property
    def reason(self) -> str | None:
        """The first failed check's message, None when authentic."""
        return next((check.message for check in self.checks if not check.ok), None)

    def as_dict(self) -> dict[str, Any]:
        return {"authentic": self.authentic, "reason": self.reason,
                "checks": [{"name": c.name, "ok": c.ok, "message": c.message} for c in self.checks]}


def verify_offline(data: bytes, record: dict[str, Any], keys: PinnedKeys, *, log_keys: list[LogKey] | None = None,
                   pinned_checkpoint: str | None = None) -> OfflineResult:
    """Run the checks above; stops at the first failure, whose message is the result's reason."""
    result = OfflineResult()
    steps = [_check_record_shape, _check_signature]
    if record.get("signature_timestamp"):
        steps.append(_check_time_stamp)
    steps.append(lambda r, k: _check_content(data, r))
    manifest = _our_manifest(data)
    if manifest is not None:
        steps.append(lambda r, k: _check_manifest(data, manifest, r, k))
    if log_keys is not None:
        steps.append(lambda r, k: check_log(r, log_keys, pinned_checkpoint))
    for step in steps:
        check = step(record, keys)
        result.checks.append(check)
        if not check.ok:
            break
    return result


def _check_record_shape(record: dict[str, Any], keys: PinnedKeys) -> Check:
    payload = record.get("signed_payload")
    if not isinstance(payload, dict) or sorted(payload) != sorted(SIGNED_FIELDS) \
            or any(payload[name] != record.get(name) for name in SIGNED_FIELDS):
        return Check("record", False, "the record's signed_payload is not its content_hash, generator_id, model "
                                      "and watermark_id: the record was altered")
    if str(record.get("generator_id")) != keys.generator_id:
        return Check("record", False, f"the pinned keys are generator {keys.generator_id}'s, the record is "
                                      f"generator {record.get('generator_id')}'s")
    return Check("record", True, f"record {record.get('record_id')} of generator {keys.generator_id}")


def _check_signature(record: dict[str, Any], keys: PinnedKeys) -> Check:
    kid = str(record.get("kid"))
    public_key = keys.keys.get(kid)
    if public_key is None:
        pinned = ", ".join(sorted(keys.keys)) or "none"
        return Check("signature", False, f"unknown kid {kid!r}: the pinned keys of generator {keys.generator_id} "
                                         f"are {pinned} (pin them again if the generator rotated its key)")
    try:
        signature = base64.b64decode(str(record.get("signature")), validate=True)
        message = signed_payload_bytes(**record["signed_payload"])
    except (binascii.Error, TypeError, ValueError):
        return Check("signature", False, "the record's signature or payload is malformed")
    if not crypto.verify(public_key, message, signature):
        return Check("signature", False, f"the ML-DSA-65 signature does not verify with the pinned key {kid!r}: "
                                         "the record was altered, or the pinned key is not the one it was signed with")
    return Check("signature", True, f"ML-DSA-65 signature valid with pinned key {kid!r}")


def _check_time_stamp(record: dict[str, Any], keys: PinnedKeys) -> Check:
    stamp = record["signature_timestamp"]
    if not keys.trust_anchors:
        return Check("time_stamp", False, "the record carries a time stamp, but the pinned keys hold no trust "
                                          "anchors to check it with: pin the keys again (svc keys pin)")
    try:
        token = base64.b64decode(str(stamp.get("token")), validate=True)
        signature = base64.b64decode(str(record.get("signature")), validate=True)
        roots = [x509.load_der_x509_certificate(anchor) for anchor in keys.trust_anchors]
        moment = timestamp.time_of(token, signature, roots)
    except (AttributeError, binascii.Error, ValueError) as error:  # TimestampError is a ValueError
        return Check("time_stamp", False, f"the record's time stamp does not prove its signature's time: {error}")
    return Check("time_stamp", True, f"a trusted time-stamp authority saw the signature on "
                                     f"{moment:%Y-%m-%d %H:%M:%S} UTC")


def _our_manifest(data: bytes) -> ReadManifest | None:
    try:
        manifest = read_manifest(data)
    except CodecError:
        return None
    return manifest if manifest is not None and manifest.token is not None else None


def _check_manifest(data: bytes, manifest: ReadManifest, record: dict[str, Any], keys: PinnedKeys) -> Check:
    def pq_verify(kid: str | None, message: bytes, signature: bytes) -> bool:
        key = keys.keys.get(kid or "")
        return key is not None and crypto.verify(key, message, signature)

    report = manifest_checks.check_manifest(data, manifest, anchors=keys.signing_anchors,
                                            tsa_roots=keys.trust_anchors, pq_verify=pq_verify)
    failed = [c for c in report.checks if c.status in ("invalid", "untrusted", "unsupported")
              or (c.name == "pq_signature" and c.status != "valid")]
    if manifest.provenance.get("record_id") != str(record.get("record_id")):
        return Check("c2pa", False, "the file's C2PA manifest names another record")
    if failed:
        return Check("c2pa", False, f"C2PA manifest ({report.signing}): {failed[0].message}")
    return Check("c2pa", True, f"C2PA manifest ({report.signing}): both signatures, the certificate chains, the "
                               f"time stamp and the binding to the file hold")


def _check_content(data: bytes, record: dict[str, Any]) -> Check:
    try:
        actual = content_hash(data)
    except CodecError as error:
        return Check("content", False, f"the file cannot be hashed: {error}")
    if actual != record.get("content_hash"):
        return Check("content", False, f"the file's content hash {actual} is not the record's "
                                       f"{record.get('content_hash')}: the file was changed after signing")
    return Check("content", True, f"content hash {actual} matches")


def check_log(record: dict[str, Any], log_keys: list[LogKey], pinned_checkpoint: str | None = None,
              consistency: Consistency | None = None) -> Check:
    """Check 5 alone: the record's proof leads to its checkpoint, which every pinned log key signed.

    With a pinned checkpoint, the record must be in that tree too: the same checkpoint, or one linked
    to the record's by a consistency proof from `consistency(first, second)` (a call to the log, so
    none offline: there the pinned checkpoint must be of the proof's size).
    """
    log = record.get("log") or {}
    if log.get("status") != "integrated":
        return Check("log", False, "the record is not in the transparency log yet (pending): fetch it again later")
    try:
        own = checkpoint_verify(str(log.get("checkpoint", "")), log_keys)
        index = _check_inclusion(record, log, own)
        pinned = checkpoint_verify(pinned_checkpoint, log_keys) if pinned_checkpoint else None
        if pinned is not None:
            _check_pinned_holds(index, own, pinned, consistency)
    except (CheckpointError, ProofError) as error:
        return Check("log", False, f"log inclusion: {error}")
    under = f"the pinned checkpoint of size {pinned.tree_size}" if pinned else f"a tree of size {own.tree_size}"
    return Check("log", True, f"entry {index} of the log, under {under} signed by every pinned log key")


def _check_inclusion(record: dict[str, Any], log: dict[str, Any], checkpoint: Checkpoint) -> int:
    try:
        index, size = int(log["index"]), int(log["tree_size"])
        proof = [base64.b64decode(item, validate=True) for item in log["inclusion_proof"]]
    except (KeyError, TypeError, ValueError, binascii.Error):
        raise ProofError("the record's log proof is malformed") from None
    if size != checkpoint.tree_size:
        raise ProofError(f"the proof is for a tree of size {size}, its checkpoint is of size {checkpoint.tree_size}")
    verify_inclusion(leaf_hash(log_entry(record)), index, size, proof, checkpoint.root_hash)
    return index


def _check_pinned_holds(index: int, own: Checkpoint, pinned: Checkpoint, consistency: Consistency | None) -> None:
    """The record (entry `index` of `own`) is in the pinned tree. Raises ProofError."""
    if index >= pinned.tree_size:
        raise ProofError(f"entry {index} is newer than the pinned checkpoint (size {pinned.tree_size}): "
                         "pin a newer one")
    if pinned.tree_size == own.tree_size:
        if pinned.root_hash != own.root_hash:
            raise ProofError(f"the pinned checkpoint and the record's differ for tree size {own.tree_size}: a fork")
        return
    if consistency is None:
        raise ProofError(f"the proof is for a tree of size {own.tree_size}, the pinned checkpoint is of size "
                         f"{pinned.tree_size}: `svc log verify` links them with a consistency proof")
    smaller, larger = sorted((own, pinned), key=lambda checkpoint: checkpoint.tree_size)
    proof = consistency(smaller.tree_size, larger.tree_size)
    verify_consistency(smaller.tree_size, larger.tree_size, proof, smaller.root_hash, larger.root_hash)


def log_entry(record: dict[str, Any]) -> bytes:
    """The leaf's entry: the RFC 8785 canonical JSON of the record's logged fields, as the log builds it."""
    return canonicalize({name: str(record.get(name)) for name in LEAF_FIELDS})


def record_id_of_token(token: str) -> str:
    """The record id a `svc_` token names, read without the service's key (the record's signature, not the
    token, is what offline verification trusts). Raises ValueError for text that is not a token."""
    if not token.startswith("svc_"):
        raise ValueError("a token starts with svc_")
    raw = base64.urlsafe_b64decode(token[4:] + "=" * (-len(token[4:]) % 4))
    if len(raw) < 17:
        raise ValueError("a token carries a version byte and a 16-byte record id")
    return str(uuid.UUID(bytes=raw[1:17]))
