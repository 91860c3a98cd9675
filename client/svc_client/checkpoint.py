"""Log checkpoints: C2SP signed notes (c2sp.org/signed-note) of tlog checkpoints (c2sp.org/tlog-checkpoint).

The log signs each checkpoint with Ed25519 (signature type 0x01) and ML-DSA-65 (type 0xff followed by the
identifier below, signed-note's escape for types it does not assign). Verifier keys are in the signed-note
`vkey` form `<name>+<hex key id>+<base64(type || public key)>`. A checkpoint is accepted only when every
pinned key signed it: a log whose Ed25519 key leaked still cannot forge one without the ML-DSA-65 key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PublicKey

from svc_client.errors import ClientError

ED25519_TYPE = b"\x01"
ML_DSA_65_TYPE = b"\xff" + b"ml-dsa-65/fips204-pure-empty-context"
SIGNATURE_PREFIX = "\u2014 "  # em dash, space
_LOADERS = {ED25519_TYPE: Ed25519PublicKey.from_public_bytes, ML_DSA_65_TYPE: MLDSA65PublicKey.from_public_bytes}


class CheckpointError(ClientError):
    """A checkpoint that is malformed, or not signed by every pinned log key."""


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    tree_size: int
    root_hash: bytes
    note: str  # the whole signed note, as received


@dataclass(frozen=True)
class LogKey:
    name: str
    key_id: bytes
    type: bytes
    public_key: bytes

    @classmethod
    def from_vkey(cls, vkey: str) -> LogKey:
        """Raises CheckpointError for a vkey that is malformed, of an unknown type or with a wrong key id."""
        try:
            name, id_hex, encoded = vkey.strip().split("+", 2)
            material = base64.b64decode(encoded, validate=True)
            key_id = bytes.fromhex(id_hex)
        except (ValueError, binascii.Error):
            raise CheckpointError(f"not a verifier key: {vkey[:60]!r}") from None
        for signature_type in _LOADERS:
            public = material[len(signature_type):]
            if material.startswith(signature_type) and _key_id(name, signature_type, public) == key_id:
                return cls(name=name, key_id=key_id, type=signature_type, public_key=public)
        raise CheckpointError(f"verifier key {name}+{id_hex}: unknown signature type or wrong key id")

    def verifies(self, message: bytes, signature: bytes) -> bool:
        try:
            _LOADERS[self.type](self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True

    @property
    def algorithm(self) -> str:
        return "ed25519" if self.type == ED25519_TYPE else "ml-dsa-65"


def _key_id(name: str, signature_type: bytes, public_key: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + signature_type + public_key).digest()[:4]


def log_keys_from_document(document: Any) -> list[LogKey]:
    """The log keys of a pinned document: GET /v1/log/keys as JSON (`{"keys": [...]}` of vkey strings or of
    objects with a `vkey`), a bare list, or vkey lines. Raises CheckpointError when it holds none."""
    if isinstance(document, str):
        stripped = document.strip()
        try:
            document = json.loads(stripped)
        except ValueError:
            document = [line for line in stripped.splitlines() if line.strip()]
    items = document.get("keys", document.get("vkeys")) if isinstance(document, dict) else document
    if not isinstance(items, list) or not items:
        raise CheckpointError("the pinned log keys document lists no keys")
    return [LogKey.from_vkey(item["vkey"] if isinstance(item, dict) else str(item)) for item in items]


def load_log_keys(path: str | Path) -> list[LogKey]:
    try:
        return log_keys_from_document(Path(path).read_text())
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read ({error})") from None


def checkpoint_verify(note: str, keys: list[LogKey]) -> Checkpoint:
    """Parse a signed checkpoint and check that every key in `keys` signed it. Raises CheckpointError."""
    text, signatures = _split(note)
    if not keys:
        raise CheckpointError("no pinned log keys to check the checkpoint with")
    for key in keys:
        candidates = [sig for name, key_id, sig in signatures if name == key.name and key_id == key.key_id]
        if not candidates:
            raise CheckpointError(f"the checkpoint carries no signature by the pinned {key.algorithm} key "
                                  f"{key.name}+{key.key_id.hex()}")
        if not any(key.verifies(text.encode(), sig) for sig in candidates):
            raise CheckpointError(f"the checkpoint's {key.algorithm} signature by {key.name} does not verify")
    checkpoint = _parse_body(text, note)
    if any(checkpoint.origin != key.name for key in keys):
        raise CheckpointError(f"the checkpoint's origin {checkpoint.origin!r} is not the pinned log's")
    return checkpoint


def _split(note: str) -> tuple[str, list[tuple[str, bytes, bytes]]]:
    text, separator, block = note.rpartition("\n\n")
    if not separator or not block.endswith("\n"):
        raise CheckpointError("not a signed note: text, a blank line, signature lines")
    signatures = []
    for line in block[:-1].split("\n"):
        if not line.startswith(SIGNATURE_PREFIX) or line.count(" ") != 2:
            raise CheckpointError(f"not a signature line: {line[:60]!r}")
        name, encoded = line[len(SIGNATURE_PREFIX):].split(" ")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise CheckpointError("a checkpoint signature is not base64") from None
        if len(raw) > 4:
            signatures.append((name, raw[:4], raw[4:]))
    return text + "\n", signatures


def _parse_body(text: str, note: str) -> Checkpoint:
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "" or not all(lines[:-1]):
        raise CheckpointError("a checkpoint is origin, tree size and root hash lines")
    origin, size, root = lines[:3]
    if not size.isdigit() or (size.startswith("0") and size != "0"):
        raise CheckpointError("the checkpoint's tree size is not a decimal number")
    try:
        root_hash = base64.b64decode(root, validate=True)
    except binascii.Error:
        root_hash = b""
    if len(root_hash) != 32:
        raise CheckpointError("the checkpoint's root hash is not 32 bytes of base64")
    return Checkpoint(origin=origin, tree_size=int(size), root_hash=root_hash, note=note)
