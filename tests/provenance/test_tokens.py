"""Record-token tests: format, authentication, rotation and rejection of any alteration."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import uuid

import pytest

from provenance import tokens
from provenance.tokens import InvalidToken, key_tag, mint_token, parse_token

KEY = b"k" * 32
OLD_KEY = b"o" * 32
OTHER_KEY = b"x" * 32
RECORD_ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def test_token_round_trips_to_the_same_record_id() -> None:
    assert parse_token(mint_token(RECORD_ID, KEY), [KEY]) == RECORD_ID


def test_random_record_ids_round_trip() -> None:
    for _ in range(50):
        record_id = uuid.uuid4()
        assert parse_token(mint_token(record_id, KEY), [KEY]) == record_id


def test_token_has_prefix_charset_and_length_limit() -> None:
    token = mint_token(uuid.uuid4(), KEY)
    assert token.startswith("svc_")
    assert len(token) <= 128
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", token)


def test_token_is_deterministic_for_a_record_and_key() -> None:
    assert mint_token(RECORD_ID, KEY) == mint_token(RECORD_ID, KEY)
    assert mint_token(RECORD_ID, KEY) != mint_token(RECORD_ID, OTHER_KEY)


def _v1_token(record_id: uuid.UUID, key: bytes) -> str:
    """A token exactly as releases before key rings minted it (version 1, no key tag)."""
    header = b"\x01" + record_id.bytes
    payload = header + hmac.new(key, header, hashlib.sha256).digest()[:16]
    return "svc_" + base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def test_token_layout_matches_the_documented_bytes() -> None:
    token = mint_token(RECORD_ID, KEY)
    payload = base64.urlsafe_b64decode(token[4:] + "=" * (-len(token[4:]) % 4))
    tag = hmac.new(KEY, b"svc-token key tag", hashlib.sha256).digest()[:3]
    header = b"\x02" + RECORD_ID.bytes + tag
    assert len(token) == 52 and key_tag(KEY) == tag
    assert payload == header + hmac.new(KEY, header, hashlib.sha256).digest()[:16]


def test_the_record_id_sits_where_clients_read_it_in_both_versions() -> None:
    for token in (mint_token(RECORD_ID, KEY), _v1_token(RECORD_ID, KEY)):
        raw = base64.urlsafe_b64decode(token[4:] + "=" * (-len(token[4:]) % 4))
        assert uuid.UUID(bytes=raw[1:17]) == RECORD_ID


def test_version_1_tokens_still_verify_under_any_key_of_the_ring() -> None:
    old = _v1_token(RECORD_ID, OLD_KEY)
    assert len(old) == 48
    assert parse_token(old, [KEY, OLD_KEY]) == RECORD_ID
    with pytest.raises(InvalidToken):
        parse_token(old, [KEY])


def test_a_version_2_token_is_checked_only_with_the_key_its_tag_names(monkeypatch) -> None:
    token = mint_token(RECORD_ID, OLD_KEY)
    macs: list[bytes] = []
    real_mac = tokens._mac
    monkeypatch.setattr(tokens, "_mac", lambda key, header: macs.append(key) or real_mac(key, header))
    assert parse_token(token, [KEY, OTHER_KEY, OLD_KEY]) == RECORD_ID
    assert macs == [OLD_KEY]  # no trial of the other keys


def test_a_tag_of_no_configured_key_is_rejected() -> None:
    token = mint_token(RECORD_ID, OLD_KEY)
    with pytest.raises(InvalidToken):
        parse_token(token, [KEY, OTHER_KEY])


def test_a_tag_changed_to_another_configured_key_is_rejected() -> None:
    payload = bytearray(base64.urlsafe_b64decode(mint_token(RECORD_ID, OLD_KEY)[4:]))
    payload[17:20] = key_tag(KEY)  # claims KEY signed it; the MAC covers the tag and is OLD_KEY's
    forged = "svc_" + base64.urlsafe_b64encode(bytes(payload)).rstrip(b"=").decode()
    with pytest.raises(InvalidToken):
        parse_token(forged, [KEY, OLD_KEY])


def test_every_single_character_alteration_is_rejected() -> None:
    token = mint_token(RECORD_ID, KEY)
    replacements = BASE64URL_ALPHABET + ".=+/ "
    for position, original in enumerate(token):
        for replacement in replacements:
            if replacement == original:
                continue
            altered = token[:position] + replacement + token[position + 1 :]
            with pytest.raises(InvalidToken):
                parse_token(altered, [KEY])


def test_deleting_or_appending_a_character_is_rejected() -> None:
    token = mint_token(RECORD_ID, KEY)
    for position in range(len(token)):
        with pytest.raises(InvalidToken):
            parse_token(token[:position] + token[position + 1 :], [KEY])
    for suffix in ["A", "=", "==", ".", "\n"]:
        with pytest.raises(InvalidToken):
            parse_token(token + suffix, [KEY])


def test_wrong_key_is_rejected() -> None:
    with pytest.raises(InvalidToken):
        parse_token(mint_token(RECORD_ID, KEY), [OTHER_KEY])


def test_rotated_keys_accept_tokens_minted_with_any_listed_key() -> None:
    old_token = mint_token(RECORD_ID, OLD_KEY)
    new_token = mint_token(RECORD_ID, KEY)
    assert parse_token(old_token, [KEY, OLD_KEY]) == RECORD_ID
    assert parse_token(new_token, [KEY, OLD_KEY]) == RECORD_ID
    with pytest.raises(InvalidToken):
        parse_token(old_token, [KEY])


@pytest.mark.parametrize("version, tail", [(0x03, b""), (0x00, b""), (0x02, b""), (0x01, b"tag")])
def test_unknown_version_or_a_length_of_another_version_is_rejected_even_with_a_valid_mac(version, tail) -> None:
    header = bytes([version]) + RECORD_ID.bytes + tail
    payload = header + hmac.new(KEY, header, hashlib.sha256).digest()[:16]
    token = "svc_" + base64.urlsafe_b64encode(payload).rstrip(b"=").decode()
    with pytest.raises(InvalidToken):
        parse_token(token, [KEY])


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "svc_",
        "svc_" + "A" * 44,
        "svc_" + "A" * 43,
        "svc_" + "A" * 48,
        "svc_" + "A" * 46,
        "svc_" + "A" * 200,
        "tok_" + "A" * 44,
        "SVC_" + "A" * 44,
        "svc_" + "A" * 42 + "==",
        "svc_" + "+" * 44,
        "svc_" + "é" * 44,
        "svc_" + "\x00" * 44,
        "x" * 10_000,
    ],
)
def test_garbage_strings_are_rejected(garbage: str) -> None:
    with pytest.raises(InvalidToken):
        parse_token(garbage, [KEY])


@pytest.mark.parametrize("value", [None, 123, b"svc_AAAA", ["svc_"], uuid.uuid4()])
def test_non_string_input_is_rejected(value: object) -> None:
    with pytest.raises(InvalidToken):
        parse_token(value, [KEY])  # type: ignore[arg-type]


def test_empty_key_list_is_a_configuration_error() -> None:
    with pytest.raises(ValueError):
        parse_token(mint_token(RECORD_ID, KEY), [])


def test_short_or_non_bytes_keys_are_refused() -> None:
    with pytest.raises(ValueError):
        mint_token(RECORD_ID, b"short")
    with pytest.raises(TypeError):
        mint_token(RECORD_ID, "k" * 32)  # type: ignore[arg-type]


def test_mint_requires_a_uuid() -> None:
    with pytest.raises(TypeError):
        mint_token(str(RECORD_ID), KEY)  # type: ignore[arg-type]
