"""transparency.note: C2SP signed notes and checkpoints, both signatures checked independently (no database)."""

import base64
import hashlib

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from dilithium_py.ml_dsa import ML_DSA_65

from record_format.canonical_json import canonicalize
from transparency import note
from transparency.entries import entry_bundle, entry_bytes, split_bundle

ORIGIN = "provenance.example/provenance-log"


def _signers():
    return [note.ed25519_signer(ORIGIN, b"\x01" * 32), note.ml_dsa_65_signer(ORIGIN, b"\x02" * 32)]


def _signed_checkpoint() -> str:
    checkpoint = note.Checkpoint(origin=ORIGIN, tree_size=1234, root_hash=hashlib.sha256(b"root").digest())
    return note.sign_note(checkpoint.text(), _signers())


def _parse_by_hand(signed: str) -> tuple[str, dict[str, bytes]]:
    """Split a note the way the spec words it: text, the last blank line, lines of em dash, name, base64."""
    text, _, block = signed.rpartition("\n\n")
    signatures = {}
    for line in block.splitlines():
        dash, name, encoded = line.split(" ")
        assert dash == "\u2014" and name == ORIGIN
        raw = base64.b64decode(encoded)
        signatures[raw[:4].hex()] = raw[4:]
    return text + "\n", signatures


def test_the_checkpoint_is_three_lines_and_two_signature_lines():
    signed = _signed_checkpoint()
    lines = signed.split("\n")
    assert lines[:3] == [ORIGIN, "1234", base64.b64encode(hashlib.sha256(b"root").digest()).decode()]
    assert lines[3] == "" and lines[4].startswith("\u2014 " + ORIGIN + " ") and lines[5].startswith("\u2014 ")
    assert lines[6:] == [""]


def test_the_ed25519_signature_verifies_with_the_standard_key_id():
    ed25519 = _signers()[0]
    text, signatures = _parse_by_hand(_signed_checkpoint())
    expected_id = hashlib.sha256(ORIGIN.encode() + b"\n\x01" + ed25519.public_key).digest()[:4].hex()
    Ed25519PublicKey.from_public_bytes(ed25519.public_key).verify(signatures[expected_id], text.encode())
    material = base64.b64encode(b"\x01" + ed25519.public_key).decode()
    assert ed25519.vkey == f"{ORIGIN}+{expected_id}+{material}"


def test_the_ml_dsa_signature_verifies_with_dilithium_py():
    ml_dsa = _signers()[1]
    text, signatures = _parse_by_hand(_signed_checkpoint())
    expected_id = hashlib.sha256(ORIGIN.encode() + b"\n" + note.ML_DSA_65_TYPE + ml_dsa.public_key).digest()[:4]
    assert ML_DSA_65.verify(ml_dsa.public_key, text.encode(), signatures[expected_id.hex()])
    assert len(ml_dsa.public_key) == 1952 and note.ML_DSA_65_TYPE[0] == 0xFF


@pytest.mark.parametrize("which", [0, 1])
def test_verify_note_accepts_each_key_and_refuses_a_changed_text(which):
    signed, vkey = _signed_checkpoint(), _signers()[which].vkey
    assert note.parse_checkpoint(note.verify_note(signed, vkey)).tree_size == 1234
    with pytest.raises(ValueError):
        note.verify_note(signed.replace("\n1234\n", "\n1235\n"), vkey)


def test_verify_note_refuses_an_unknown_key():
    with pytest.raises(ValueError):
        note.verify_note(_signed_checkpoint(), note.ed25519_signer(ORIGIN, b"\x03" * 32).vkey)


@pytest.mark.parametrize("text", ["a\n4\nAAAA\n", "a\n04\n" + base64.b64encode(b"\0" * 32).decode() + "\n",
                                  "a\n4\n", "a\n\n4\nroot\n"])
def test_malformed_checkpoints_are_refused(text):
    with pytest.raises(ValueError):
        note.parse_checkpoint(text)


@pytest.mark.parametrize("name", ["", "a b", "a+b", "a\tb"])
def test_key_names_without_spaces_or_plus(name):
    with pytest.raises(ValueError):
        note.check_key_name(name)


def test_entry_bundles_are_length_prefixed():
    bundle = entry_bundle([b"abc", b"", b"x" * 300])
    assert bundle[:5] == b"\x00\x03abc" and bundle[5:7] == b"\x00\x00" and bundle[7:9] == b"\x01\x2c"
    assert split_bundle(bundle) == [b"abc", b"", b"x" * 300]
    with pytest.raises(ValueError):
        split_bundle(bundle[:-1])


@pytest.mark.parametrize("text", ["plain", 'quote " backslash \\ slash /', "controls \x00\x01\x1f\x7f \b\f\n\r\t",
                                  "caf\u00e9 \u2028 \u2029 \U0001f600 \ufeff", ""])
def test_entries_are_rfc_8785_canonical_json(text):
    from datetime import UTC, datetime

    moment = datetime(2026, 11, 22, 21, 0, 0, 123000, tzinfo=UTC)
    payload = {"content_hash": "h", "generator_id": "g", "model": text, "watermark_id": text}
    entry = entry_bytes(record_id="r", signed_payload=payload, signature=bytes(range(256)), kid="k", signed_at=moment)
    assert entry == canonicalize({"record_id": "r", "content_hash": "h", "generator_id": "g", "model": text,
                                  "watermark_id": text, "signature": base64.b64encode(bytes(range(256))).decode(),
                                  "kid": "k", "signed_at": "2026-11-22T21:00:00.123000Z"})
