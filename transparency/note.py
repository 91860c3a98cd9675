"""C2SP signed notes (c2sp.org/signed-note) carrying tlog checkpoints (c2sp.org/tlog-checkpoint).

The log signs each checkpoint twice: Ed25519 (signature type 0x01, as the spec defines it) and
ML-DSA-65, for which signed-note assigns no type. We use the spec's escape, type byte 0xff followed by
a longer identifier (ML_DSA_65_TYPE), in the key id and the vkey alike; the signature is pure
ML-DSA-65 (FIPS 204) with an empty context over the note text, like every signature of the service.

This module must not import Django.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.mldsa import MLDSA65PrivateKey, MLDSA65PublicKey

ED25519_TYPE = b"\x01"
# 0xff: "signature types without an identifier byte assigned by this specification", followed by an
# identifier unlikely to collide (signed-note, Signature types).
ML_DSA_65_TYPE = b"\xff" + b"ml-dsa-65/fips204-pure-empty-context"
SIGNATURE_LINE_PREFIX = "\u2014 "  # em dash, space


@dataclass(frozen=True)
class Checkpoint:
    origin: str
    tree_size: int
    root_hash: bytes

    def text(self) -> str:
        """The note text: origin, tree size, base64 root hash, each line ending in a newline."""
        return f"{self.origin}\n{self.tree_size}\n{base64.b64encode(self.root_hash).decode()}\n"


@dataclass(frozen=True)
class NoteKey:
    """A log key's public part: its name (the origin), signature type and public key, all a verifier (or a
    process that does not hold the private key) knows of it."""

    name: str
    type: bytes
    public_key: bytes

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.type, self.public_key)

    @property
    def vkey(self) -> str:
        """`<name>+<hex key id>+<base64(type || public key)>` (signed-note, Verifier keys)."""
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(self.type + self.public_key).decode()}"


@dataclass(frozen=True)
class NoteSigner(NoteKey):
    """One log key with its private key: signs notes."""

    _private: Ed25519PrivateKey | MLDSA65PrivateKey

    @property
    def public(self) -> NoteKey:
        return NoteKey(self.name, self.type, self.public_key)

    def sign(self, text: bytes) -> bytes:
        return self._private.sign(text)


def key_id(name: str, signature_type: bytes, public_key: bytes) -> bytes:
    """SHA-256(key name || 0x0A || signature type || public key)[:4]."""
    return hashlib.sha256(name.encode() + b"\n" + signature_type + public_key).digest()[:4]


def ed25519_signer(name: str, seed: bytes) -> NoteSigner:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    return NoteSigner(name, ED25519_TYPE, private.public_key().public_bytes_raw(), private)


def ml_dsa_65_signer(name: str, seed: bytes) -> NoteSigner:
    private = MLDSA65PrivateKey.from_seed_bytes(seed)
    return NoteSigner(name, ML_DSA_65_TYPE, private.public_key().public_bytes_raw(), private)


def check_key_name(name: str) -> str:
    """Key names (and so origins) are non-empty, with no spaces or plus. Raises ValueError."""
    if not name or "+" in name or any(ch.isspace() for ch in name) or not name.isprintable():
        raise ValueError(f"{name!r} cannot name a note key: non-empty, no spaces, no '+'")
    return name


class TextSigner(Protocol):
    """What signs a note: a NoteSigner here, or a key held elsewhere (the signer service)."""

    name: str

    @property
    def key_id(self) -> bytes: ...

    def sign(self, text: bytes) -> bytes: ...


def sign_note(text: str, signers: Sequence[TextSigner]) -> str:
    """The signed note: text, a blank line, one signature line per signer. Raises ValueError on bad text."""
    if not text.endswith("\n") or any(ord(ch) < 0x20 and ch != "\n" for ch in text):
        raise ValueError("note text ends in a newline and has no control characters but newlines")
    message = text.encode()
    lines = [f"{SIGNATURE_LINE_PREFIX}{signer.name} "
             f"{base64.b64encode(signer.key_id + signer.sign(message)).decode()}\n" for signer in signers]
    return text + "\n" + "".join(lines)


@dataclass(frozen=True)
class NoteSignature:
    name: str
    key_id: bytes
    signature: bytes


def split_note(note: str) -> tuple[str, list[NoteSignature]]:
    """The text and the signatures of a signed note. Raises ValueError if it is not one."""
    text, separator, block = note.rpartition("\n\n")
    if not separator or not block.endswith("\n"):
        raise ValueError("a signed note is text, a blank line and signature lines")
    signatures = []
    for line in block[:-1].split("\n"):
        if not line.startswith(SIGNATURE_LINE_PREFIX) or line.count(" ") != 2:
            raise ValueError(f"not a signature line: {line[:60]!r}")
        name, encoded = line[len(SIGNATURE_LINE_PREFIX):].split(" ")
        try:
            raw = base64.b64decode(encoded, validate=True)
        except binascii.Error:
            raise ValueError("a signature is not base64") from None
        if len(raw) < 5:
            raise ValueError("a signature is a 4-byte key id and signature bytes")
        signatures.append(NoteSignature(name, raw[:4], raw[4:]))
    return text + "\n", signatures


def verify_note(note: str, vkey: str) -> str:
    """The note text if `vkey` (Ed25519 or our ML-DSA-65) signed it. Raises ValueError otherwise."""
    name, id_hex, encoded = vkey.split("+", 2)
    material = base64.b64decode(encoded, validate=True)
    text, signatures = split_note(note)
    matching = [s for s in signatures if s.name == name and s.key_id.hex() == id_hex]
    if not matching:
        raise ValueError("the note carries no signature by this key")
    for signature_type, load in ((ED25519_TYPE, Ed25519PublicKey.from_public_bytes),
                                 (ML_DSA_65_TYPE, MLDSA65PublicKey.from_public_bytes)):
        if material.startswith(signature_type) and key_id(name, signature_type, material[len(signature_type):]) \
                == bytes.fromhex(id_hex):
            public = load(material[len(signature_type):])
            try:
                for signature in matching:
                    public.verify(signature.signature, text.encode())
            except InvalidSignature:
                raise ValueError("a signature by this key does not verify") from None
            return text
    raise ValueError("unknown signature type or key id")


def parse_checkpoint(text: str) -> Checkpoint:
    """The origin, size and root hash of a checkpoint's note text. Raises ValueError."""
    lines = text.split("\n")
    if len(lines) < 4 or lines[-1] != "" or not all(lines[:-1]):
        raise ValueError("a checkpoint is at least three non-empty lines")
    origin, size, root = lines[0], lines[1], lines[2]
    if not size.isdigit() or (size.startswith("0") and size != "0"):
        raise ValueError("the tree size is a decimal number without leading zeroes")
    root_hash = base64.b64decode(root, validate=True)
    if len(root_hash) != 32:
        raise ValueError("the root hash is 32 bytes")
    return Checkpoint(origin=origin, tree_size=int(size), root_hash=root_hash)
