"""Build a C2PA manifest store (one manifest, claim v2, COSE_Sign1 with ML-DSA-65) and embed it.

The layout and every value come from docs/c2pa-notes (established against c2pa-python 0.38.1):
store `c2pa` > manifest `urn:c2pa:<uuid>` > assertion store, claim `c2pa.claim.v2`, signature.
Order of work: the data hash (SHA-256 of the file with any old store stripped, since the exclusion
is exactly the inserted bytes), the assertion boxes, their hashed URIs, the claim, its signature,
the boxes, the segments. Only the exclusion `length` depends on the result, through the width of
its CBOR integer, so the store is rebuilt until that length settles (two passes in practice).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import cbor2

from media_codecs import jumbf
from media_codecs.c2pa import carriers, ingredients

if TYPE_CHECKING:
    from media_codecs.c2pa.upstream import UpstreamManifest

COSE_ALG_ML_DSA_65 = -49  # RFC 9964
COSE_ALG, COSE_KID, COSE_X5CHAIN = 1, 4, 33
HEADER_PUBLIC_KEY = "service_public_key"  # raw 1952-byte ML-DSA-65 key (a private text label)
HEADER_PUBLIC_KEY_URL = "service_public_key_url"
COSE_SIGN1_TAG = 18
PROVENANCE_LABEL = "service.provenance"
SOFT_BINDING_LABEL = "c2pa.soft-binding"
WATERMARK_ALGORITHM = "service.image-watermark.1"
ACTIONS_LABEL = "c2pa.actions.v2"
DATA_HASH_LABEL = "c2pa.hash.data"
CLAIM_LABEL = "c2pa.claim.v2"
SIGNATURE_LABEL = "c2pa.signature"
TRAINED_ALGORITHMIC_MEDIA = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
SIGNATURE_ALGORITHM = "ml-dsa-65"
_MAX_PASSES = 5


def _uuid(prefix: bytes) -> bytes:
    return prefix + bytes.fromhex("00110010800000AA00389B71")


STORE_UUID = _uuid(b"c2pa")
MANIFEST_UUID = _uuid(b"c2ma")
UPDATE_MANIFEST_UUID = _uuid(b"c2um")
MANIFEST_UUIDS = (MANIFEST_UUID, UPDATE_MANIFEST_UUID)
ASSERTION_STORE_UUID = _uuid(b"c2as")
CBOR_UUID = _uuid(b"cbor")
CLAIM_UUID = _uuid(b"c2cl")
SIGNATURE_UUID = _uuid(b"c2cs")


@dataclass(frozen=True)
class ManifestFacts:
    """What the manifest says about one signed record."""

    record_id: str
    model: str
    generator_id: str
    kid: str  # the generator key's id, also in the COSE protected header
    token: str  # the provenance token our XMP carries
    certificate_chain: tuple[bytes, ...]  # DER, end-entity first: c2pa readers refuse a signature without one
    public_key: bytes | None = None
    public_key_url: str | None = None
    watermark_id: int | None = None  # registered as a `c2pa.soft-binding` assertion when set
    instance_id: str = field(default_factory=lambda: f"xmp:iid:{uuid.uuid4()}")
    manifest_label: str = field(default_factory=lambda: f"urn:c2pa:{uuid.uuid4()}")
    claim_generator: str = "Provenance Service"
    claim_generator_version: str = "1.0"
    created_at: str | None = None  # ISO 8601, the action's `when`


Signer = Callable[[bytes], bytes]


def embed(data: bytes, facts: ManifestFacts, sign: Signer, parent: UpstreamManifest | None = None) -> bytes:
    """Return JPEG or PNG `data` carrying a signed manifest store for `facts`, replacing any store it had.

    `sign(message) -> signature` is the generator's ML-DSA-65 signer. With a `parent` (the upstream
    manifest kept at sign time, `upstream_from_store`), the store holds its manifests verbatim and ours
    last, with the parent as our `parentOf` ingredient. Nothing may change the file afterwards: the data
    hash covers every byte but the store's. Raises UnsupportedFormat for other formats, CorruptMedia /
    MediaTooLarge for a bad file, ValueError when the parent already holds a manifest labelled as ours.
    """
    carrier = carriers.carrier_for(data)
    stripped = carrier.strip(data)
    offset = carrier.insert_offset(stripped)
    data_hash = hashlib.sha256(stripped).digest()
    length = 0
    for _ in range(_MAX_PASSES):
        store = build_store(facts, sign, data_hash=data_hash, exclusion=(offset, length), parent=parent)
        wrapped_size = carrier.wrapped_size(len(store))
        if wrapped_size == length:
            return carriers.splice(stripped, offset, carrier.wrapped(store))
        length = wrapped_size
    raise RuntimeError("the manifest size did not settle")  # cannot happen: the width only grows


def embed_jpeg(data: bytes, store: bytes) -> bytes:
    """Splice a ready store into a JPEG as APP11 segments, replacing any store. Raises CodecError."""
    carrier = carriers.JPEG_CARRIER
    stripped = carrier.strip(data)
    return carriers.splice(stripped, carrier.insert_offset(stripped), carrier.wrapped(store))


def embed_png(data: bytes, store: bytes) -> bytes:
    """Splice a ready store into a PNG as a `caBX` chunk before IDAT, replacing any store. Raises CodecError."""
    carrier = carriers.PNG_CARRIER
    stripped = carrier.strip(data)
    return carriers.splice(stripped, carrier.insert_offset(stripped), carrier.wrapped(store))


def strip_manifest(data: bytes) -> bytes:
    """`data` without its C2PA manifest store. Raises UnsupportedFormat, CorruptMedia, MediaTooLarge."""
    return carriers.carrier_for(data).strip(data)


def build_store(facts: ManifestFacts, sign: Signer, *, data_hash: bytes, exclusion: tuple[int, int],
                parent: UpstreamManifest | None = None) -> bytes:
    """The JUMBF manifest store for `facts`, with a data hash over the file minus `exclusion` (start, length).

    A `parent`'s manifests come first, byte for byte (its own ingredients keep resolving), ours last.
    """
    if parent is not None and facts.manifest_label in _labels(parent):
        raise ValueError("the upstream store already holds a manifest with our label")
    assertions = _assertions(facts, data_hash, exclusion, parent)
    claim = cbor2.dumps(_claim(facts, assertions))
    signature = cose_sign1(claim, _protected_header(facts), sign)
    manifest = jumbf.SuperBox(facts.manifest_label, MANIFEST_UUID, [
        jumbf.SuperBox("c2pa.assertions", ASSERTION_STORE_UUID, assertions),
        jumbf.SuperBox(CLAIM_LABEL, CLAIM_UUID, [jumbf.ContentBox(b"cbor", claim)]),
        jumbf.SuperBox(SIGNATURE_LABEL, SIGNATURE_UUID, [jumbf.ContentBox(b"cbor", signature)]),
    ])
    upstream = b"".join(parent.manifest_boxes) if parent is not None else b""
    description = jumbf.description_box(jumbf.SuperBox("c2pa", STORE_UUID))
    return jumbf.box(jumbf.SUPERBOX, description + upstream + jumbf.write(manifest))


def _labels(parent: UpstreamManifest) -> set[str]:
    return {jumbf.read(box).label for box in parent.manifest_boxes}


def cbor_assertion(label: str, content: dict) -> jumbf.SuperBox:
    return jumbf.SuperBox(label, CBOR_UUID, [jumbf.ContentBox(b"cbor", cbor2.dumps(content))])


def _assertions(facts: ManifestFacts, data_hash: bytes, exclusion: tuple[int, int],
                parent: UpstreamManifest | None) -> list[jumbf.SuperBox]:
    """The assertion boxes in store order: the ingredient first (the opened action hashes it), then the rest."""
    created: dict = {"action": "c2pa.created", "digitalSourceType": TRAINED_ALGORITHMIC_MEDIA,
                     "softwareAgent": {"name": facts.claim_generator, "version": facts.claim_generator_version}}
    if facts.created_at:
        created["when"] = facts.created_at
    leading = []
    if parent is not None:
        leading.append(cbor_assertion(ingredients.INGREDIENT_LABEL, ingredients.ingredient_content(parent)))
        created = ingredients.opened_action(created, hashed_uri(leading[0]))
    provenance = {"record_id": facts.record_id, "model": facts.model, "generator_id": facts.generator_id,
                  "signature_algorithm": SIGNATURE_ALGORITHM, "kid": facts.kid, "token": facts.token}
    contents = [(ACTIONS_LABEL, {"actions": [created]}), (PROVENANCE_LABEL, provenance)]
    if facts.watermark_id is not None:
        contents.append((SOFT_BINDING_LABEL, soft_binding(facts.watermark_id)))
    contents.append((DATA_HASH_LABEL, data_hash_content(data_hash, exclusion)))
    return leading + [cbor_assertion(label, content) for label, content in contents]


def soft_binding(watermark_id: int) -> dict:
    """Our invisible watermark as a soft binding: the 64-bit mark id, base64, over the whole image."""
    value = base64.b64encode(watermark_id.to_bytes(8, "big")).decode()
    return {"alg": WATERMARK_ALGORITHM, "blocks": [{"scope": {}, "value": value}], "pad": b""}


def data_hash_content(data_hash: bytes, exclusion: tuple[int, int]) -> dict:
    """`c2pa.hash.data`, keys in c2pa-rs's order; `pad` is required even when empty."""
    start, length = exclusion
    return {"exclusions": [{"start": start, "length": length}], "name": "jumbf manifest", "alg": "sha256",
            "hash": data_hash, "pad": b""}


def hashed_uri(assertion: jumbf.SuperBox) -> dict:
    """A hashed URI: SHA-256 over the assertion superbox minus its own header (C2PA 2.2 8.4.2.3)."""
    return {"url": f"self#jumbf=c2pa.assertions/{assertion.label}", "alg": "sha256",
            "hash": hashlib.sha256(superbox_content(jumbf.write(assertion))).digest()}


def superbox_content(raw: bytes) -> bytes:
    """A box's bytes after its LBox/TBox (and XLBox) header."""
    return raw[16:] if raw[:4] == b"\x00\x00\x00\x01" else raw[8:]


def _claim(facts: ManifestFacts, assertions: list[jumbf.SuperBox]) -> dict:
    return {
        "instanceID": facts.instance_id,
        "claim_generator_info": {"name": facts.claim_generator, "version": facts.claim_generator_version},
        "signature": f"self#jumbf=/c2pa/{facts.manifest_label}/{SIGNATURE_LABEL}",
        "created_assertions": [hashed_uri(assertion) for assertion in assertions],
        "alg": "sha256",
    }


def _protected_header(facts: ManifestFacts) -> dict:
    header: dict = {COSE_ALG: COSE_ALG_ML_DSA_65, COSE_KID: facts.kid.encode(),
                    COSE_X5CHAIN: list(facts.certificate_chain)}
    if facts.public_key is not None:
        header[HEADER_PUBLIC_KEY] = facts.public_key
    if facts.public_key_url is not None:
        header[HEADER_PUBLIC_KEY_URL] = facts.public_key_url
    return header


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    """The bytes COSE_Sign1 signs (RFC 9052 4.4), with the claim as the detached payload."""
    return cbor2.dumps(["Signature1", protected, b"", payload])


def cose_sign1(claim: bytes, header: dict, sign: Signer) -> bytes:
    """COSE_Sign1 (tag 18) over the claim bytes, payload detached (nil), empty unprotected header."""
    protected = cbor2.dumps(header)
    signature = sign(sig_structure(protected, claim))
    return cbor2.dumps(cbor2.CBORTag(COSE_SIGN1_TAG, [protected, {}, None, signature]))
