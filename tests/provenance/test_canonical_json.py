"""RFC 8785 (JCS) canonicalization tests, mostly taken from the RFC's own examples."""

from __future__ import annotations

import json
import math
import struct

import pytest

from record_format.canonical_json import canonicalize
from record_format.payload import signed_payload_bytes

# RFC 8785 section 3.2.2 sample input (kept verbatim as JSON text so the escapes are the RFC's).
RFC_SAMPLE_INPUT = r"""{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}"""
RFC_SAMPLE_OUTPUT = (
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
    '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
)

# RFC 8785 section 3.2.3 sorting example, plus U+00E9 from our brief.
RFC_SORTING_INPUT = r"""{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis",
  "\u00e9": "Latin Small Letter E With Acute"
}"""
RFC_SORTED_VALUES = [
    "Carriage Return",
    "One",
    "Control",
    "Latin Small Letter E With Acute",
    "Latin Small Letter O With Diaeresis",
    "Euro Sign",
    "Emoji: Grinning Face",
    "Hebrew Letter Dalet With Dagesh",
]

# RFC 8785 appendix B: IEEE-754 bit patterns and their required ECMAScript spelling.
RFC_NUMBER_VECTORS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def _double_from_hex(bits: str) -> float:
    return struct.unpack(">d", bytes.fromhex(bits))[0]


def test_rfc_8785_sample_is_canonicalized_exactly() -> None:
    assert canonicalize(json.loads(RFC_SAMPLE_INPUT)) == RFC_SAMPLE_OUTPUT.encode("utf-8")


def test_rfc_8785_sample_output_is_a_fixed_point() -> None:
    assert canonicalize(json.loads(RFC_SAMPLE_OUTPUT)) == RFC_SAMPLE_OUTPUT.encode("utf-8")


def test_keys_are_sorted_by_utf16_code_units_as_in_rfc_8785() -> None:
    canonical = canonicalize(json.loads(RFC_SORTING_INPUT))
    assert list(json.loads(canonical).values()) == RFC_SORTED_VALUES


def test_astral_keys_sort_by_surrogates_not_code_points() -> None:
    # U+1F600 is D83D DE00 in UTF-16, so it sorts before U+FB33 although its code point is larger.
    assert canonicalize({"\ufb33": 1, "\U0001f600": 2}) == '{"\U0001f600":2,"\ufb33":1}'.encode()


@pytest.mark.parametrize(("bits", "expected"), RFC_NUMBER_VECTORS)
def test_numbers_follow_ecmascript_serialization(bits: str, expected: str) -> None:
    assert canonicalize(_double_from_hex(bits)) == expected.encode()


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1.0, "1"),
        (-1.5, "-1.5"),
        (100.0, "100"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e21, "1.5e+21"),
        (1e-6, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (1e-7, "1e-7"),
        (0.1, "0.1"),
        (123.456, "123.456"),
    ],
)
def test_number_layout_switches_notation_at_the_ecmascript_boundaries(number: float, expected: str) -> None:
    assert canonicalize(number) == expected.encode()


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf, _double_from_hex("7fffffffffffffff")])
def test_nan_and_infinity_are_rejected(number: float) -> None:
    with pytest.raises(ValueError):
        canonicalize({"n": [number]})


def test_integers_are_written_plainly_within_the_exact_double_range() -> None:
    assert canonicalize([0, -7, 2**53, -(2**53)]) == b"[0,-7,9007199254740992,-9007199254740992]"


def test_integers_beyond_two_to_the_53_are_rejected() -> None:
    with pytest.raises(ValueError):
        canonicalize(2**53 + 1)


def test_literals_and_nesting_have_no_whitespace() -> None:
    value = {"b": [True, False, None, {"z": [], "a": {}}], "a": ()}
    assert canonicalize(value) == b'{"a":[],"b":[true,false,null,{"a":{},"z":[]}]}'


def test_strings_use_only_the_mandatory_escapes() -> None:
    text = "\"\\\b\f\n\r\t\x00\x1f\x7f/é€\U0001f600<>&'"
    expected = '"\\"\\\\\\b\\f\\n\\r\\t\\u0000\\u001f\x7f/é€\U0001f600<>&\'"'
    assert canonicalize(text) == expected.encode("utf-8")


def test_control_characters_use_lowercase_hex_escapes() -> None:
    assert canonicalize("\x0b\x1a") == b'"\\u000b\\u001a"'


def test_non_ascii_is_emitted_as_raw_utf8() -> None:
    assert canonicalize({"k": "é"}) == b'{"k":"\xc3\xa9"}'


def test_lone_surrogates_are_rejected() -> None:
    with pytest.raises(ValueError):
        canonicalize("\ud800")


def test_non_string_keys_are_rejected() -> None:
    with pytest.raises(TypeError):
        canonicalize({1: "x"})


@pytest.mark.parametrize("value", [b"bytes", {1, 2}, object(), 1j])
def test_unsupported_types_are_rejected(value: object) -> None:
    with pytest.raises(TypeError):
        canonicalize(value)


def test_signed_payload_is_sorted_compact_utf8_json_of_exactly_four_keys() -> None:
    payload = signed_payload_bytes(
        watermark_id="wm-é", model="m", generator_id="g-1", content_hash="sha3-256:" + "0" * 64
    )
    assert payload == (
        '{"content_hash":"sha3-256:' + "0" * 64 + '","generator_id":"g-1","model":"m","watermark_id":"wm-é"}'
    ).encode("utf-8")


def test_signed_payload_rejects_non_string_fields() -> None:
    with pytest.raises(TypeError):
        signed_payload_bytes(content_hash="h", generator_id=1, model="m", watermark_id="w")  # type: ignore[arg-type]
