"""Tests for the RIFF chunk list WAV and WebP share (pure module: run with ``-p no:django``)."""

import pytest

from media_codecs import riff
from media_codecs.errors import CorruptMedia

FORM = riff.Form(b"TEST", "test", "the RIFF size is past the end", "the chunk {fourcc!r} is past the end")


def _file(*chunks: bytes, trailer: bytes = b"") -> bytes:
    return riff.assemble(b"TEST", chunks, trailer)


def _walk(data: bytes) -> list[riff.Chunk]:
    return list(riff.chunks(memoryview(data), riff.HEADER_BYTES, riff.payload_end(data, FORM), FORM))


def test_chunks_are_read_in_order_with_their_payloads():
    data = _file(riff.make_chunk(b"abcd", b"12").raw, riff.make_chunk(b"efgh", b"345").raw)
    chunks = _walk(data)
    assert [(chunk.fourcc, chunk.payload) for chunk in chunks] == [(b"abcd", b"12"), (b"efgh", b"345")]
    assert bytes(chunks[1].payload_view) == b"345" and chunks[1].head(2) == b"34"


def test_an_odd_payload_gets_a_pad_byte_that_is_not_part_of_it():
    chunk = riff.make_chunk(b"odd ", b"abc")
    assert chunk.raw == b"odd \x03\x00\x00\x00abc\x00" and chunk.size == 3 and chunk.payload == b"abc"


def test_the_riff_size_counts_the_form_type_and_every_chunk_but_not_the_trailer():
    data = _file(riff.make_chunk(b"abcd", b"xyz").raw, trailer=b"tail")
    assert int.from_bytes(data[riff.SIZE_AT : riff.SIZE_AT + 4], "little") == 4 + 12
    assert riff.is_form(data, b"TEST") and not riff.is_form(data, b"WAVE")
    assert riff.payload_end(data, FORM) == len(data) - 4


def test_a_last_chunk_without_its_pad_byte_is_read_and_padded_on_request():
    data = _file(b"last\x03\x00\x00\x00abc")
    (chunk,) = _walk(data)
    assert chunk.payload == b"abc" and bytes(chunk.padded) == b"last\x03\x00\x00\x00abc\x00"


@pytest.mark.parametrize(("data", "message"), [
    (_file(b"abcd\xff\x00\x00\x00short"), "the chunk b'abcd' is past the end"),  # a lying chunk length
    (_file(b"abcd\x02\x00\x00\x00xy", b"ef"), "a test chunk header is truncated"),
])
def test_a_chunk_past_the_riff_payload_is_corrupt(data, message):
    with pytest.raises(CorruptMedia, match=message):
        _walk(data)


def test_a_chunk_past_the_riff_end_is_corrupt_even_with_bytes_after_it():
    # the RIFF size says 4 + 12 bytes; the chunk claims 8 more, which are there but in the trailer
    data = _file(b"abcd\x0c\x00\x00\x00abcd", trailer=b"efghijkl")
    with pytest.raises(CorruptMedia, match="past the end"):
        _walk(data)


@pytest.mark.parametrize("size", [0xFFFF_FFFF, 100, 3])
def test_a_riff_size_past_the_file_or_under_the_header_is_corrupt(size):
    data = b"RIFF" + size.to_bytes(4, "little") + b"TEST"
    with pytest.raises(CorruptMedia, match="the RIFF size is past the end"):
        riff.payload_end(data, FORM)
