"""Read and verify the C2PA manifest store a file carries (the active manifest: the last one).

Reading parses the JUMBF and the CBOR of the claim, the signature and every CBOR assertion; it never
decodes pixels. Verifying recomputes the data hash over the file minus its exclusions and each
assertion's hashed URI, and checks the COSE_Sign1 signature with a `verify` callable the caller binds
to the key it trusts (the generator's ML-DSA-65 public key, found by the manifest's `kid`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import cbor2

from media_codecs import jumbf
from media_codecs.c2pa import carriers
from media_codecs.c2pa.manifest import (
    CLAIM_LABEL,
    COSE_ALG,
    COSE_COUNTERSIGNATURE,
    COSE_KID,
    COSE_SIGN1_TAG,
    COSE_X5CHAIN,
    HEADER_PUBLIC_KEY,
    HEADER_PUBLIC_KEY_URL,
    MANIFEST_UUIDS,
    PROVENANCE_LABEL,
    SIGNATURE_LABEL,
    SOFT_BINDING_LABEL,
    STORE_UUID,
    TIME_STAMP_LABEL,
    sig_structure,
    superbox_content,
)
from media_codecs.errors import CorruptMedia

_THAW_DEPTH = 6
INGREDIENT_LABELS = ("c2pa.ingredient", "c2pa.ingredient.v2", "c2pa.ingredient.v3")
_CBOR_ERRORS = (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError, RecursionError, LookupError)


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
    manifest_count: int  # manifests in the store: 1 for ours alone, more when it carries upstream ones
    unprotected: dict = field(default_factory=dict)
    carrier: carriers.Carrier | None = None  # the format's, when read from a file
    store_boxes: dict[str, bytes] = field(default_factory=dict)  # every manifest of the store: label -> superbox

    @property
    def countersignature(self) -> list | None:
        """The RFC 9338 countersignature `[protected, unprotected, signature]` of a hybrid manifest, or None."""
        value = self.unprotected.get(COSE_COUNTERSIGNATURE)
        if (isinstance(value, list | tuple) and len(value) == 3 and isinstance(value[0], bytes)
                and isinstance(value[1], dict) and isinstance(value[2], bytes)):
            return list(value)
        return None

    @property
    def time_stamp_token(self) -> bytes | None:
        """The first RFC 3161 token of the claim signature's `sigTst2`, or None."""
        return time_stamp_token(self.unprotected)

    @property
    def alg(self) -> object:
        return self.protected.get(COSE_ALG)

    @property
    def kid(self) -> str | None:
        kid = self.protected.get(COSE_KID)
        return kid.decode(errors="replace") if isinstance(kid, bytes) else None

    @property
    def certificate_chain(self) -> list[bytes]:
        """x5chain, end-entity first: the protected header's, else the unprotected one's (C2PA 1.x wrote it there)."""
        chain = self.protected.get(COSE_X5CHAIN, self.unprotected.get(COSE_X5CHAIN))
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
    def token(self) -> str | None:
        """Our provenance token, when the manifest is one of ours (its provenance assertion holds one)."""
        token = self.provenance.get("token") if self.provenance else None
        return token if isinstance(token, str) else None

    @property
    def soft_binding(self) -> dict | None:
        value = self.assertions.get(SOFT_BINDING_LABEL)
        return value if isinstance(value, dict) else None

    @property
    def ingredients(self) -> list[dict]:
        """The decoded ingredient assertions (`c2pa.ingredient`, `.v2`, `.v3`, with any `__n` instance)."""
        return [value for label, value in self.assertions.items()
                if label.split("__")[0] in INGREDIENT_LABELS and isinstance(value, dict)]

    @property
    def parent(self) -> dict | None:
        """The `parentOf` ingredient, or None."""
        return next((i for i in self.ingredients if i.get("relationship") == "parentOf"), None)


@dataclass(frozen=True)
class Verification:
    signature_valid: bool
    data_hash_valid: bool
    assertion_hashes: dict[str, bool]  # url -> whether the assertion it names hashes to the claim's value

    @property
    def is_valid(self) -> bool:
        return self.signature_valid and self.data_hash_valid and all(self.assertion_hashes.values())


def time_stamp_token(unprotected: dict) -> bytes | None:
    """The first token of a COSE unprotected header's `sigTst2` (`{"tstTokens": [{"val": bstr}]}`), or None."""
    container = unprotected.get(TIME_STAMP_LABEL)
    tokens = container.get("tstTokens") if isinstance(container, dict) else None
    first = tokens[0] if isinstance(tokens, list | tuple) and tokens else None
    value = first.get("val") if isinstance(first, dict) else None
    return value if isinstance(value, bytes) else None


def read_manifest(data: bytes) -> ReadManifest | None:
    """The active manifest of a file whose format has a carrier, or None when it carries no store.

    Raises UnsupportedFormat for other formats, CorruptMedia for a malformed file, store or manifest,
    MediaTooLarge past the JUMBF bounds.
    """
    carrier = carriers.carrier_for(data)
    found = carrier.find(data)
    if found is None:
        return None
    manifests = store_manifests(found.store)
    manifest = parse_manifest(manifests[-1], found.start, found.length, len(manifests), carrier)
    return replace(manifest, store_boxes={box.label: box.raw for box in manifests})


def store_manifests(store_bytes: bytes) -> list[jumbf.SuperBox]:
    """The manifest superboxes of a JUMBF manifest store, in order (the last is active). Raises CodecError."""
    store = jumbf.read(store_bytes)
    if store.uuid != STORE_UUID:
        raise CorruptMedia("the JUMBF data is not a C2PA manifest store")
    manifests = [box for box in store.superboxes() if box.uuid in MANIFEST_UUIDS]
    if not manifests:
        raise CorruptMedia("the C2PA manifest store holds no manifest")
    return manifests


def parse_manifest(manifest: jumbf.SuperBox, store_start: int, store_length: int, count: int,
                   carrier: carriers.Carrier | None = None) -> ReadManifest:
    """One manifest superbox parsed: claim, COSE_Sign1 headers and CBOR assertions. Raises CorruptMedia."""
    claim_bytes = _cbor_content(manifest.child(CLAIM_LABEL) or manifest.child("c2pa.claim"), "claim")
    sign1 = _decode(_cbor_content(manifest.child(SIGNATURE_LABEL), "signature"), "signature")
    if (not isinstance(sign1, cbor2.CBORTag) or sign1.tag != COSE_SIGN1_TAG or not isinstance(sign1.value, list | tuple)
            or len(sign1.value) != 4 or not isinstance(sign1.value[0], bytes) or not isinstance(sign1.value[3], bytes)):
        raise CorruptMedia("the C2PA claim signature is not a COSE_Sign1")
    protected = _decode(sign1.value[0], "protected header") if sign1.value[0] else {}
    claim = _decode(claim_bytes, "claim")
    if not isinstance(protected, dict) or not isinstance(claim, dict):
        raise CorruptMedia("the C2PA claim or its signature header is not a map")
    unprotected = _thawed(sign1.value[1])
    if not isinstance(unprotected, dict):
        unprotected = {}
    assertion_store = manifest.child("c2pa.assertions")
    boxes = {box.label: box for box in (assertion_store.superboxes() if assertion_store else [])}
    assertions = {label: _assertion_value(box) for label, box in boxes.items()}
    return ReadManifest(manifest.label, claim, claim_bytes, assertions, {k: b.raw for k, b in boxes.items()},
                        protected, sign1.value[0], sign1.value[3], store_start, store_length, count, unprotected,
                        carrier)


def _thawed(value: object, depth: int = 0) -> object:
    """cbor2 decodes what a tag holds as frozendict and tuple: back to dict and list, a few levels deep (the
    unprotected header holds the countersignature and the time-stamp container; deeper is left as is)."""
    if depth > _THAW_DEPTH:
        return value
    if isinstance(value, dict | cbor2.frozendict):
        return {key: _thawed(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_thawed(item, depth + 1) for item in value]
    return value


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
    return binding_matches(data, manifest)


def binding_matches(data: bytes, manifest: ReadManifest) -> bool:
    """Whether the hard binding of the file's format (`c2pa.hash.data`, or BMFF's) holds for `data`."""
    carrier = manifest.carrier or carriers.carrier_for(data)
    content = manifest.assertions.get(carrier.binding_label)
    found = carriers.Found(b"", manifest.store_start, manifest.store_length)
    return isinstance(content, dict) and carrier.binding_matches(data, found, content, manifest.claim.get("alg"))


def data_hash_matches(data: bytes, binding: dict, manifest: ReadManifest) -> bool:
    """Whether `c2pa.hash.data` hashes `data` minus its exclusions, which must cover the manifest store."""
    found = carriers.Found(b"", manifest.store_start, manifest.store_length)
    return carriers.data_hash_matches(data, binding, found, manifest.claim.get("alg"))


def assertion_references(manifest: ReadManifest) -> list[dict]:
    """The claim's hashed-URI maps: `created_assertions` + `gathered_assertions` (v2) or `assertions` (v1)."""
    groups = [manifest.claim.get(key) for key in ("created_assertions", "gathered_assertions", "assertions")]
    return [item for group in groups if isinstance(group, list | tuple) for item in group
            if isinstance(item, dict) and isinstance(item.get("url"), str)]


def assertion_hash_matches(manifest: ReadManifest, reference: dict) -> bool | None:
    """Whether the assertion a hashed URI names hashes to its value; None when the manifest lacks it."""
    label = assertion_label(reference["url"], manifest.label)
    raw = manifest.assertion_boxes.get(label) if label else None
    if raw is None:
        return None
    digest = _hasher(reference.get("alg", manifest.claim.get("alg")))
    if digest is None:
        return False
    digest.update(superbox_content(raw))
    return digest.digest() == reference.get("hash")


def assertion_label(url: str, manifest_label: str) -> str | None:
    """The assertion label of `self#jumbf=c2pa.assertions/<label>` or of the absolute form in this manifest."""
    prefixes = ("self#jumbf=c2pa.assertions/", f"self#jumbf=/c2pa/{manifest_label}/c2pa.assertions/")
    return next((url[len(prefix):] for prefix in prefixes if url.startswith(prefix)), None)


def _hasher(alg: object) -> hashlib._Hash | None:
    return hashlib.new(alg) if alg in ("sha256", "sha384", "sha512") else None


def _assertion_hashes(manifest: ReadManifest) -> dict[str, bool]:
    return {reference["url"]: bool(assertion_hash_matches(manifest, reference))
            for reference in assertion_references(manifest)}
