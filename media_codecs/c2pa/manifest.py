"""Build a C2PA manifest store (one manifest, claim v2, COSE_Sign1) and embed it.

The layout and every value come from docs/c2pa-notes (established against c2pa-python 0.38.1):
store `c2pa` > manifest `urn:c2pa:<uuid>` > assertion store, claim `c2pa.claim.v2`, signature.
Order of work: the layout of the file around a store of the size it will have (found with placeholder
signatures), the hard binding over that file, the assertion boxes, their hashed URIs, the claim, its
signature(s) and time stamps, the boxes, the carrier's segments. The unprotected header's `pad` takes
up what the time stamps leave of their reserve, so the store lands exactly in the planned gap.

Two ways to sign (docs/decisions.md, "Hybrid C2PA manifests"): ML-DSA-65 alone (COSE alg -49, which
today's validators report as unsupported), or hybrid: ES256 signs the claim under an X.509 chain that
validators trust, and ML-DSA-65 countersigns the claim and that signature (RFC 9338 COSE_Countersignature,
unprotected header 11). Each signature's RFC 3161 token travels in its unprotected `sigTst2`, over the
bytes c2pa-rs stamps: the CounterSignature structure of the signature's CBOR (C2PA 2.x, v2 time stamps).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import cbor2

from media_codecs import jumbf
from media_codecs.c2pa import carriers, ingredients
from media_codecs.c2pa.carriers import DATA_HASH_LABEL, data_hash_content
from media_codecs.progress import Progress, steps

if TYPE_CHECKING:
    from media_codecs.c2pa.upstream import UpstreamManifest

COSE_ALG_ML_DSA_65 = -49  # RFC 9964
COSE_ALG_ES256 = -7
COSE_ALG, COSE_KID, COSE_X5CHAIN = 1, 4, 33
COSE_COUNTERSIGNATURE = 11  # RFC 9338: COSE_Countersignature, version 2
SIGNATURE_SIZES = {COSE_ALG_ES256: 64, COSE_ALG_ML_DSA_65: 3309}  # r || s; FIPS 204
TIME_STAMP_LABEL = "sigTst2"
PAD_LABEL = "pad"
# Room for the time-stamp tokens, each a few KB with the authority's certificates; a larger one costs a
# second plan of the file, never a failure.
TIME_STAMP_RESERVE = 12 * 1024
_MIN_PAD = 256  # the pad's CBOR header stays 3 bytes from 256 to 65535, so any size within is reachable
HEADER_PUBLIC_KEY = "service_public_key"  # raw 1952-byte ML-DSA-65 key (a private text label)
HEADER_PUBLIC_KEY_URL = "service_public_key_url"
COSE_SIGN1_TAG = 18
PROVENANCE_LABEL = "service.provenance"
SOFT_BINDING_LABEL = "c2pa.soft-binding"
WATERMARK_ALGORITHM = "service.image-watermark.1"
ACTIONS_LABEL = "c2pa.actions.v2"
CLAIM_LABEL = "c2pa.claim.v2"
SIGNATURE_LABEL = "c2pa.signature"
TRAINED_ALGORITHMIC_MEDIA = "http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia"
SIGNATURE_ALGORITHM = "ml-dsa-65"
HYBRID = "hybrid"
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
    digital_source_type: str = TRAINED_ALGORITHMIC_MEDIA  # the IPTC URI the generator declares


Signer = Callable[[bytes], bytes]
# Stamps each message with an RFC 3161 token (None where the authority gave none), all in one round trip.
TimeStamper = Callable[[Sequence[bytes]], Sequence[bytes | None]]


@dataclass(frozen=True)
class CoseKey:
    """One signing key of a manifest: its COSE algorithm, certificate chain (DER, end-entity first) and signer."""

    alg: int
    certificate_chain: tuple[bytes, ...]
    sign: Signer
    kid: str | None = None
    public_key: bytes | None = None  # ML-DSA-65: the raw key, for readers that hold no certificate store
    public_key_url: str | None = None

    @property
    def signature_size(self) -> int:
        return SIGNATURE_SIZES[self.alg]


@dataclass(frozen=True)
class ManifestSigner:
    """Who signs a manifest. `claim` signs the claim (COSE_Sign1); a hybrid manifest's claim key is ES256 and
    `countersign` (ML-DSA-65) signs the same claim and the claim signature in an RFC 9338 countersignature.
    With `time_stamp`, each signature carries an RFC 3161 token in `sigTst2`."""

    claim: CoseKey
    countersign: CoseKey | None = None
    time_stamp: TimeStamper | None = None
    time_stamp_reserve: int = TIME_STAMP_RESERVE


def embed(data: bytes, facts: ManifestFacts, sign: Signer | ManifestSigner,
          parent: UpstreamManifest | None = None, progress: Progress | None = None) -> bytes:
    """Return `data` carrying a signed manifest store for `facts`, replacing any store it had.

    `sign` is a ManifestSigner, or a bare ML-DSA-65 signer (with `facts.certificate_chain`). With a `parent`
    (the upstream manifest kept at sign time, `upstream_from_store`), the store holds its manifests verbatim
    and ours last, with the parent as our `parentOf` ingredient. Nothing may change the file afterwards: the
    hard binding covers every byte but the store's. Raises UnsupportedFormat for a format that carries no
    store, CorruptMedia / MediaTooLarge for a bad file, ValueError when the parent already holds a manifest
    labelled as ours.

    The store is planned before it is signed: its size settles with placeholder signatures (only sizes
    matter to the layout), the file is hashed once, then the real store is padded to exactly that size.
    `progress` (media_codecs/progress.py) hears each step's end: stripped, planned, hashed and signed, joined.
    """
    signer = sign if isinstance(sign, ManifestSigner) else ManifestSigner(_ml_dsa_key(facts, sign))
    report = steps(progress)
    carrier = carriers.carrier_for(data)
    stripped = carrier.strip(data)
    report(0.2)
    reserve = signer.time_stamp_reserve if signer.time_stamp else 0
    for _ in range(2):  # a second plan only when the tokens outgrew the reserve
        layout, size = _plan(carrier, stripped, facts, signer, parent, reserve)
        report(0.4)
        binding = (carrier.binding_label, carrier.binding(layout))
        store, needed = _signed_store(facts, signer, parent, binding, size)
        if store is not None:
            report(0.8)
            joined = layout.join(carrier.wrapped(store))
            report(1.0)
            return joined
        reserve += needed
    raise RuntimeError("the manifest size did not settle")  # cannot happen: the reserve grew by what it lacked


def _ml_dsa_key(facts: ManifestFacts, sign: Signer) -> CoseKey:
    return CoseKey(COSE_ALG_ML_DSA_65, facts.certificate_chain, sign, kid=facts.kid, public_key=facts.public_key,
                   public_key_url=facts.public_key_url)


def _plan(carrier: carriers.Carrier, stripped: bytes, facts: ManifestFacts, signer: ManifestSigner,
          parent: UpstreamManifest | None, reserve: int) -> tuple[carriers.Layout, int]:
    """The layout and store size, found with placeholder hashes and signatures (the size settles in 2-3 passes)."""
    size = 0
    for _ in range(_MAX_PASSES):
        layout = carrier.layout(stripped, size)
        binding = (carrier.binding_label, carrier.binding(layout, placeholder=True))
        store = build_store(facts, _placeholder(signer), binding=binding, parent=parent, pad=_MIN_PAD + reserve)
        if len(store) == size:
            return layout, size
        size = len(store)
    raise RuntimeError("the manifest size did not settle")  # cannot happen: the widths only grow


def _placeholder(signer: ManifestSigner) -> ManifestSigner:
    def blank(key: CoseKey | None) -> CoseKey | None:
        return None if key is None else replace(key, sign=lambda _message, size=key.signature_size: bytes(size))

    return ManifestSigner(blank(signer.claim), blank(signer.countersign))


def _signed_store(facts: ManifestFacts, signer: ManifestSigner, parent: UpstreamManifest | None,
                  binding: tuple[str, dict], size: int) -> tuple[bytes | None, int]:
    """The real store padded to `size` bytes, or (None, bytes lacking) when the tokens did not fit."""
    draft = _draft(facts, signer, binding, parent)
    signed = sign_claim(draft.claim, signer)
    pad = _MIN_PAD + size - len(draft.store(cose_bytes(signed, _MIN_PAD)))
    if pad < _MIN_PAD:
        return None, _MIN_PAD - pad
    store = draft.store(cose_bytes(signed, pad))
    if len(store) != size:
        raise RuntimeError("the padded store missed its planned size")  # cannot happen: pad widths are fixed
    return store, 0


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


def build_store(facts: ManifestFacts, sign: Signer | ManifestSigner, *, binding: tuple[str, dict] | None = None,
                data_hash: bytes | None = None, exclusion: tuple[int, int] | None = None,
                parent: UpstreamManifest | None = None, pad: int = 0) -> bytes:
    """The JUMBF manifest store for `facts` with the hard `binding` (label, content), or a data hash over the
    file minus `exclusion` (start, length). A `parent`'s manifests come first, byte for byte (its own
    ingredients keep resolving), ours last. `pad` zero bytes go in the signature's unprotected header.
    """
    signer = sign if isinstance(sign, ManifestSigner) else ManifestSigner(_ml_dsa_key(facts, sign))
    if binding is None:
        binding = (DATA_HASH_LABEL, data_hash_content(data_hash or bytes(32), exclusion or (0, 0)))
    draft = _draft(facts, signer, binding, parent)
    return draft.store(cose_sign1(draft.claim, signer, pad))


@dataclass(frozen=True)
class _Draft:
    """A manifest but its signature: the assertions and the claim bytes."""

    facts: ManifestFacts
    parent: UpstreamManifest | None
    assertions: list[jumbf.SuperBox]
    claim: bytes

    def store(self, signature: bytes) -> bytes:
        manifest = jumbf.SuperBox(self.facts.manifest_label, MANIFEST_UUID, [
            jumbf.SuperBox("c2pa.assertions", ASSERTION_STORE_UUID, self.assertions),
            jumbf.SuperBox(CLAIM_LABEL, CLAIM_UUID, [jumbf.ContentBox(b"cbor", self.claim)]),
            jumbf.SuperBox(SIGNATURE_LABEL, SIGNATURE_UUID, [jumbf.ContentBox(b"cbor", signature)]),
        ])
        upstream = b"".join(self.parent.manifest_boxes) if self.parent is not None else b""
        description = jumbf.description_box(jumbf.SuperBox("c2pa", STORE_UUID))
        return jumbf.box(jumbf.SUPERBOX, description + upstream + jumbf.write(manifest))


def _draft(facts: ManifestFacts, signer: ManifestSigner, binding: tuple[str, dict],
           parent: UpstreamManifest | None) -> _Draft:
    if parent is not None and facts.manifest_label in _labels(parent):
        raise ValueError("the upstream store already holds a manifest with our label")
    assertions = _assertions(facts, signer, binding, parent)
    return _Draft(facts, parent, assertions, cbor2.dumps(_claim(facts, assertions)))


def _labels(parent: UpstreamManifest) -> set[str]:
    return {jumbf.read(box).label for box in parent.manifest_boxes}


def cbor_assertion(label: str, content: dict) -> jumbf.SuperBox:
    return jumbf.SuperBox(label, CBOR_UUID, [jumbf.ContentBox(b"cbor", cbor2.dumps(content))])


def _assertions(facts: ManifestFacts, signer: ManifestSigner, binding: tuple[str, dict],
                parent: UpstreamManifest | None) -> list[jumbf.SuperBox]:
    """The assertion boxes in store order: the ingredient first (the opened action hashes it), then the rest."""
    created: dict = {"action": "c2pa.created", "digitalSourceType": facts.digital_source_type,
                     "softwareAgent": {"name": facts.claim_generator, "version": facts.claim_generator_version}}
    if facts.created_at:
        created["when"] = facts.created_at
    leading = []
    if parent is not None:
        leading.append(cbor_assertion(ingredients.INGREDIENT_LABEL, ingredients.ingredient_content(parent)))
        created = ingredients.opened_action(created, hashed_uri(leading[0]))
    algorithm = HYBRID if signer.countersign is not None else SIGNATURE_ALGORITHM
    provenance = {"record_id": facts.record_id, "model": facts.model, "generator_id": facts.generator_id,
                  "signature_algorithm": algorithm, "kid": facts.kid, "token": facts.token}
    contents = [(ACTIONS_LABEL, {"actions": [created]}), (PROVENANCE_LABEL, provenance)]
    if facts.watermark_id is not None:
        contents.append((SOFT_BINDING_LABEL, soft_binding(facts.watermark_id)))
    contents.append(binding)
    return leading + [cbor_assertion(label, content) for label, content in contents]


def soft_binding(watermark_id: int) -> dict:
    """Our invisible watermark as a soft binding: the 64-bit mark id, base64, over the whole image."""
    value = base64.b64encode(watermark_id.to_bytes(8, "big")).decode()
    return {"alg": WATERMARK_ALGORITHM, "blocks": [{"scope": {}, "value": value}], "pad": b""}


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


def protected_header(key: CoseKey) -> dict:
    header: dict = {COSE_ALG: key.alg}
    if key.kid is not None:
        header[COSE_KID] = key.kid.encode()
    header[COSE_X5CHAIN] = list(key.certificate_chain)
    if key.public_key is not None:
        header[HEADER_PUBLIC_KEY] = key.public_key
    if key.public_key_url is not None:
        header[HEADER_PUBLIC_KEY_URL] = key.public_key_url
    return header


def sig_structure(protected: bytes, payload: bytes) -> bytes:
    """The bytes COSE_Sign1 signs (RFC 9052 4.4), with the claim as the detached payload."""
    return cbor2.dumps(["Signature1", protected, b"", payload])


def countersign_structure(body_protected: bytes, sign_protected: bytes, payload: bytes, signature: bytes) -> bytes:
    """The bytes an RFC 9338 version-2 countersignature of a COSE_Sign1 signs: the claim and its signature."""
    return cbor2.dumps(["CounterSignatureV2", body_protected, sign_protected, b"", payload, [signature]])


def time_stamp_message(protected: bytes, signature: bytes) -> bytes:
    """What a `sigTst2` token stamps for a signature (c2pa-rs `cose_countersign_data` of the CBOR signature)."""
    return cbor2.dumps(["CounterSignature", protected, b"", cbor2.dumps(signature)])


def time_stamp_header(token: bytes) -> dict:
    return {"tstTokens": [{"val": token}]}


@dataclass(frozen=True)
class SignedClaim:
    """A claim's signatures, ready to be written with any pad."""

    protected: bytes
    signature: bytes
    unprotected: dict


def sign_claim(claim: bytes, signer: ManifestSigner) -> SignedClaim:
    """The claim signature, the countersignature when hybrid, and their time stamps (one round trip)."""
    protected = cbor2.dumps(protected_header(signer.claim))
    signature = signer.claim.sign(sig_structure(protected, claim))
    unprotected: dict = {}
    stamped = [(unprotected, protected, signature)]
    if signer.countersign is not None:
        counter_protected = cbor2.dumps(protected_header(signer.countersign))
        counter_signature = signer.countersign.sign(
            countersign_structure(protected, counter_protected, claim, signature))
        counter_unprotected: dict = {}
        unprotected[COSE_COUNTERSIGNATURE] = [counter_protected, counter_unprotected, counter_signature]
        stamped.append((counter_unprotected, counter_protected, counter_signature))
    if signer.time_stamp is not None:
        tokens = signer.time_stamp([time_stamp_message(p, sig) for _, p, sig in stamped])
        for (header, _, _), token in zip(stamped, tokens, strict=True):
            if token is not None:
                header[TIME_STAMP_LABEL] = time_stamp_header(token)
    return SignedClaim(protected, signature, unprotected)


def cose_bytes(signed: SignedClaim, pad: int) -> bytes:
    """COSE_Sign1 (tag 18), payload detached (nil), with `pad` zero bytes in the unprotected header."""
    unprotected = {**signed.unprotected, PAD_LABEL: bytes(pad)} if pad else signed.unprotected
    return cbor2.dumps(cbor2.CBORTag(COSE_SIGN1_TAG, [signed.protected, unprotected, None, signed.signature]))


def cose_sign1(claim: bytes, signer: ManifestSigner, pad: int = 0) -> bytes:
    return cose_bytes(sign_claim(claim, signer), pad)
