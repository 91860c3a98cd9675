"""Read and verify the C2PA manifest store a JPEG or PNG carries (the active manifest: the last one).

Reading parses the JUMBF and the CBOR of the claim, the signature and every CBOR assertion; it never
decodes pixels. Verifying recomputes the data hash over the file minus its exclusions and each
assertion's hashed URI, and checks the COSE_Sign1 signature with a `verify` callable the caller binds
to the key it trusts (the generator's ML-DSA-65 public key, found by the manifest's `kid`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import cbor2

from media_codecs import jumbf
from media_codecs.c2pa import carriers
from media_codecs.c2pa.manifest import (
    CLAIM_LABEL,
    COSE_ALG,
    COSE_KID,
    COSE_SIGN1_TAG,
    COSE_X5CHAIN,
    DATA_HASH_LABEL,
    HEADER_PUBLIC_KEY,
    HEADER_PUBLIC_KEY_URL,
    MANIFEST_UUID,
    PROVENANCE_LABEL,
    SIGNATURE_LABEL,
    SOFT_BINDING_LABEL,
    STORE_UUID,
    sig_structure,
    superbox_content,
)
from media_codecs.errors import CorruptMedia

_CBOR_ERRORS = (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError, LookupError)
_MAX_EXCLUSIONS = 64


@dataclass(frozen=True)
class ReadManifest:
    """The active manifest of a file, parsed."""

    label: str
    claim: dict
    claim_bytes: bytes
    assertions: dict[str, object]  # label -> decoded CBOR content (None for a non-CBOR assertion)
    assertion_boxes: dict[str, bytes]  # label -> the superbox bytes, for hashed-URI checks
    protected: dict
    protected_bytes: bytes
    signature: bytes
    store_start: int
    store_length: int
    manifest_count: int

    @property
    def alg(self) -> object:
        return self.protected.get(COSE_ALG)

    @property
    def kid(self) -> str | None:
        kid = self.protected.get(COSE_KID)
        return kid.decode(errors="replace") if isinstance(kid, bytes) else None

    @property
    def certificate_chain(self) -> list[bytes]:
        chain = self.protected.get(COSE_X5CHAIN)
        if isinstance(chain, bytes):
            return [chain]
        return [c for c in chain if isinstance(c, bytes)] if isinstance(chain, list | tuple) else []

    @property
    def public_key(self) -> bytes | None:
        return self.protected.get(HEADER_PUBLIC_KEY)

    @property
    def public_key_url(self) -> str | None:
        return self.protected.get(HEADER_PUBLIC_KEY_URL)

    @property
    def provenance(self) -> dict | None:
        value = self.assertions.get(PROVENANCE_LABEL)
        return value if isinstance(value, dict) else None

    @property
    def soft_binding(self) -> dict | None:
        value = self.assertions.get(SOFT_BINDING_LABEL)
        return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class Verification:
    signature_valid: bool
    data_hash_valid: bool
    assertion_hashes: dict[str, bool]  # url -> whether the assertion it names hashes to the claim's value

    @property
    def is_valid(self) -> bool:
        return self.signature_valid and self.data_hash_valid and all(self.assertion_hashes.values())


def read_manifest(data: bytes) -> ReadManifest | None:
    """The active manifest of a JPEG or PNG, or None when it carries no store.

    Raises UnsupportedFormat for other formats, CorruptMedia for a malformed file, store or manifest,
    MediaTooLarge past the JUMBF bounds.
    """
    found = carriers.carrier_for(data).find(data)
    if found is None:
        return None
    store = jumbf.read(found.store)
    if store.uuid != STORE_UUID:
        raise CorruptMedia("the JUMBF data is not a C2PA manifest store")
    manifests = [box for box in store.superboxes() if box.uuid == MANIFEST_UUID]
    if not manifests:
        raise CorruptMedia("the C2PA manifest store holds no manifest")
    return _read_active(manifests[-1], found, len(manifests))


def _read_active(manifest: jumbf.SuperBox, found: carriers.Found, count: int) -> ReadManifest:
    claim_bytes = _cbor_content(manifest.child(CLAIM_LABEL) or manifest.child("c2pa.claim"), "claim")
    sign1 = _decode(_cbor_content(manifest.child(SIGNATURE_LABEL), "signature"), "signature")
    if (not isinstance(sign1, cbor2.CBORTag) or sign1.tag != COSE_SIGN1_TAG or not isinstance(sign1.value, list | tuple)
            or len(sign1.value) != 4 or not isinstance(sign1.value[0], bytes) or not isinstance(sign1.value[3], bytes)):
        raise CorruptMedia("the C2PA claim signature is not a COSE_Sign1")
    protected = _decode(sign1.value[0], "protected header")
    claim = _decode(claim_bytes, "claim")
    if not isinstance(protected, dict) or not isinstance(claim, dict):
        raise CorruptMedia("the C2PA claim or its signature header is not a map")
    assertion_store = manifest.child("c2pa.assertions")
    boxes = {box.label: box for box in (assertion_store.superboxes() if assertion_store else [])}
    assertions = {label: _assertion_value(box) for label, box in boxes.items()}
    return ReadManifest(manifest.label, claim, claim_bytes, assertions, {k: b.raw for k, b in boxes.items()},
                        protected, sign1.value[0], sign1.value[3], found.start, found.length, count)


def _cbor_content(box: jumbf.SuperBox | None, what: str) -> bytes:
    content = None if box is None else box.content(b"cbor")
    if content is None:
        raise CorruptMedia(f"the C2PA manifest has no {what}")
    return content


def _decode(data: bytes, what: str) -> object:
    try:
        return cbor2.loads(data)
    except _CBOR_ERRORS:
        raise CorruptMedia(f"the C2PA {what} is not valid CBOR") from None


def _assertion_value(box: jumbf.SuperBox) -> object:
    content = box.content(b"cbor")
    return None if content is None else _decode(content, f"assertion {box.label}")


def verify_manifest(data: bytes, verify: Callable[[bytes, bytes], bool]) -> Verification | None:
    """Check the active manifest: `verify(message, signature)` on the COSE_Sign1, the data hash, the assertions.

    None when the file carries no store. Raises what `read_manifest` raises.
    """
    manifest = read_manifest(data)
    return None if manifest is None else check_manifest(data, manifest, verify)


def check_manifest(data: bytes, manifest: ReadManifest, verify: Callable[[bytes, bytes], bool]) -> Verification:
    """`verify_manifest` for a manifest already read from `data`."""
    message = sig_structure(manifest.protected_bytes, manifest.claim_bytes)
    signature_valid = bool(verify(message, manifest.signature))
    return Verification(signature_valid, _data_hash_valid(data, manifest), _assertion_hashes(manifest))


def _data_hash_valid(data: bytes, manifest: ReadManifest) -> bool:
    binding = manifest.assertions.get(DATA_HASH_LABEL)
    if not isinstance(binding, dict) or binding.get("alg", manifest.claim.get("alg")) != "sha256":
        return False
    exclusions = binding.get("exclusions") or []
    if not isinstance(exclusions, list | tuple) or len(exclusions) > _MAX_EXCLUSIONS:
        return False
    digest, position = hashlib.sha256(), 0
    view = memoryview(data)
    try:
        ranges = sorted((int(item["start"]), int(item["length"])) for item in exclusions)
    except (*_CBOR_ERRORS, KeyError):
        return False
    for start, length in ranges:
        if start < position or length < 0 or start + length > len(data):
            return False
        digest.update(view[position:start])
        position = start + length
    digest.update(view[position:])
    # The store itself must lie inside the exclusions, or it would be hashing itself.
    covered = any(s <= manifest.store_start and manifest.store_start + manifest.store_length <= s + n
                  for s, n in ranges)
    return covered and digest.digest() == binding.get("hash")


def _assertion_hashes(manifest: ReadManifest) -> dict[str, bool]:
    results = {}
    references = [manifest.claim.get(key) for key in ("created_assertions", "gathered_assertions")]
    for reference in [item for group in references if isinstance(group, list | tuple) for item in group]:
        if not isinstance(reference, dict) or not isinstance(reference.get("url"), str):
            continue
        url = reference["url"]
        label = url.rsplit("/", 1)[-1]
        raw = manifest.assertion_boxes.get(label)
        results[url] = raw is not None and hashlib.sha256(superbox_content(raw)).digest() == reference.get("hash")
    return results
