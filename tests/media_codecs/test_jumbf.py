"""JUMBF boxes: write, read back, and refuse hostile input with CodecError only."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from media_codecs import CodecError, CorruptMedia, MediaTooLarge, jumbf

UUID = b"c2pa" + bytes.fromhex("00110010800000AA00389B71")
CBOR_UUID = b"cbor" + bytes.fromhex("00110010800000AA00389B71")


def _tree() -> jumbf.SuperBox:
    salt = jumbf.ContentBox(b"c2sh", bytes(range(16)))
    assertion = jumbf.SuperBox("c2pa.hash.data", CBOR_UUID, [jumbf.ContentBox(b"cbor", b"\xa0")], private=salt)
    return jumbf.SuperBox("c2pa", UUID, [
        jumbf.SuperBox("c2pa.assertions", UUID, [assertion]),
        jumbf.ContentBox(b"json", b'{"a": 1}'),
        jumbf.SuperBox("numbered", UUID, [], box_id=7, signature=b"s" * 32),
    ])


def test_boxes_round_trip_with_labels_salt_ids_and_content() -> None:
    data = jumbf.write(_tree())
    tree = jumbf.read(data)
    assert tree.raw == data and tree.label == "c2pa" and tree.uuid == UUID and tree.toggles == 0x03
    assertion = tree.child("c2pa.assertions").child("c2pa.hash.data")
    assert assertion.toggles == 0x13 and assertion.private == jumbf.ContentBox(b"c2sh", bytes(range(16)))
    assert assertion.content(b"cbor") == b"\xa0"
    assert tree.content(b"json") == b'{"a": 1}'
    numbered = tree.child("numbered")
    assert numbered.box_id == 7 and numbered.signature == b"s" * 32 and numbered.toggles == 0x0F
    assert jumbf.write(tree) == data  # what was read writes back byte for byte
    assert data[:4] == len(data).to_bytes(4, "big") and data[4:8] == b"jumb" and data[12:16] == b"jumd"


def test_a_box_of_size_zero_runs_to_the_end_and_xlbox_is_read() -> None:
    content = b"\x00\x00\x00\x00cbor\xa0"
    extended = b"\x00\x00\x00\x01cbor" + (17).to_bytes(8, "big") + b"\xa0"
    description = jumbf.description_box(jumbf.SuperBox("x", UUID))
    for child in (content, extended):
        payload = description + child
        tree = jumbf.read(jumbf.box(b"jumb", payload))
        assert tree.content(b"cbor") == b"\xa0"


@pytest.mark.parametrize("data", [
    b"",
    b"\x00\x00\x00\x08jumb",  # no description
    b"\x00\x00\x00\x07jumb",  # smaller than its header
    b"\x00\x00\x00\x10jumb\x00\x00\x00\x08jumd",  # description too short
    b"\xff\xff\xff\xffjumb" + b"\x00" * 40,  # size past the data
    b"\x00\x00\x00\x01jumb" + (2**63).to_bytes(8, "big"),  # XLBox past the data
    b"\x00\x00\x00\x01jumb" + (3).to_bytes(8, "big"),  # XLBox smaller than its header
    b"\x00\x00\x00\x08json",  # not a superbox
])
def test_lying_sizes_and_truncation_are_corrupt(data: bytes) -> None:
    with pytest.raises(CorruptMedia):
        jumbf.read(data)


def test_an_unterminated_label_and_a_truncated_private_box_are_corrupt() -> None:
    for payload in (UUID + b"\x03label-without-end", UUID + b"\x13x\x00\x00\x00\x00\x40c2sh", UUID + b"\x07x\x00\x01"):
        with pytest.raises(CorruptMedia):
            jumbf.read(jumbf.box(b"jumb", jumbf.box(b"jumd", payload)))


def test_deep_nesting_and_many_boxes_are_too_large() -> None:
    nested = jumbf.SuperBox("leaf", UUID)
    for _ in range(jumbf.MAX_DEPTH + 1):
        nested = jumbf.SuperBox("level", UUID, [nested])
    with pytest.raises(MediaTooLarge):
        jumbf.read(jumbf.write(nested))
    wide = jumbf.SuperBox("wide", UUID, [jumbf.ContentBox(b"free", b"")] * (jumbf.MAX_BOXES + 1))
    with pytest.raises(MediaTooLarge):
        jumbf.read(jumbf.write(wide))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 150), st.binary(min_size=1, max_size=8))
def test_mutated_boxes_raise_codec_errors_only(noise: bytes, position: int, patch: bytes) -> None:
    data = bytearray(jumbf.write(_tree()))
    data[position : position + len(patch)] = patch
    for candidate in (bytes(data), noise, b"\x00\x00\x00\x30jumb" + noise):
        with contextlib.suppress(CodecError):
            jumbf.read(candidate)
