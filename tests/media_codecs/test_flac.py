from __future__ import annotations

import io
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
from conftest import OTHER_TOKEN, TOKEN
from mutagen.flac import FLAC

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, open_media
from media_codecs.audio import base, flac
from media_codecs.audio.flac import CODEC, MAX_BLOCKS
from tests import audio
from tests import hostile_media as hm


def _blocks(data: bytes) -> list[tuple[int, bool, bytes]]:
    """(type, is last, payload) of every metadata block, checking the last-block flag is on the last only."""
    assert data[:4] == b"fLaC"
    position, found = 4, []
    while True:
        header = data[position]
        length = int.from_bytes(data[position + 1 : position + 4], "big")
        found.append((header & 0x7F, bool(header & 0x80), data[position + 4 : position + 4 + length]))
        position += 4 + length
        if header & 0x80:
            break
    assert [is_last for _, is_last, _ in found] == [False] * (len(found) - 1) + [True]
    assert data[position : position + 2] in (b"\xff\xf8", b"\xff\xf9")
    return found


@pytest.mark.parametrize(("bits", "channels", "rate"), [(8, 1, 8_000), (16, 2, 44_100), (24, 2, 96_000),
                                                        (16, 6, 48_000), (24, 1, 192_000)])
def test_each_layout_decodes_signs_and_reencodes_exactly(bits, channels, rate) -> None:
    samples = audio.noise(0.05, rate, channels)
    data = audio.flac_bytes(samples, rate, bits)
    media = open_media(data)
    assert media.codec is CODEC
    assert CODEC.info(media) == base.StreamInfo(rate, channels, len(samples), bits)
    decoded, _ = CODEC.samples(media)
    assert np.abs(decoded - samples).max() <= 1 / (1 << (bits - 1))
    reencoded = CODEC.reencode(media, decoded)
    assert np.array_equal(CODEC.samples(reencoded)[0], decoded)  # lossless: sample for sample
    signed = CODEC.embed_token(data, TOKEN)
    assert CODEC.extract_token(signed) == TOKEN and CODEC.strip_token(signed) == data


def test_the_token_joins_the_existing_comments_and_every_other_block_is_kept() -> None:
    original = audio.tagged_flac()
    signed = CODEC.embed_token(original, TOKEN)
    before, after = _blocks(original), _blocks(signed)
    assert [kind for kind, _, _ in after] == [kind for kind, _, _ in before]
    for (kind, _, old), (_, _, new) in zip(before, after, strict=True):
        if kind != flac.VORBIS_COMMENT:
            assert new == old
    old_comment = flac.parse_comment(next(p for k, _, p in before if k == flac.VORBIS_COMMENT))
    new_comment = flac.parse_comment(next(p for k, _, p in after if k == flac.VORBIS_COMMENT))
    assert new_comment.vendor == old_comment.vendor
    assert new_comment.fields == (*old_comment.fields, b"SVC_TOKEN=" + TOKEN.encode())
    tags = FLAC(io.BytesIO(signed))
    assert tags["SVC_TOKEN"] == [TOKEN] and tags["TITLE"] == ["Test tone"] and tags["ARTIST"] == ["Ada"]
    assert tags.pictures[0].data == audio.JPEG_PICTURE and tags.info.length == pytest.approx(0.5)


def test_a_file_without_comments_gets_a_block_that_strip_removes() -> None:
    original = audio.flac_bytes(audio.tone(0.2))
    without = flac.assemble([block for block in flac.parse_flac(original).blocks if block.type != flac.VORBIS_COMMENT],
                            flac.parse_flac(original).frames)
    signed = CODEC.embed_token(without, TOKEN)
    assert [kind for kind, _, _ in _blocks(signed)] == [flac.STREAMINFO, flac.VORBIS_COMMENT]
    assert CODEC.extract_token(signed) == TOKEN
    assert CODEC.strip_token(signed) == without


def test_embedding_again_replaces_and_strip_does_not_depend_on_the_token() -> None:
    original = audio.tagged_flac()
    once = CODEC.embed_token(original, OTHER_TOKEN)
    twice = CODEC.embed_token(once, TOKEN)
    comment = flac.parse_comment(next(p for k, _, p in _blocks(twice) if k == flac.VORBIS_COMMENT))
    assert [field for field in comment.fields if field.upper().startswith(b"SVC_TOKEN=")] == [
        b"SVC_TOKEN=" + TOKEN.encode()]
    assert CODEC.strip_token(twice) == CODEC.strip_token(once) == CODEC.strip_token(original) == original


def test_a_token_field_in_another_case_is_ours_too() -> None:
    tags = FLAC(io.BytesIO(audio.tagged_flac()))
    buffer = io.BytesIO(audio.tagged_flac())
    tags["svc_token"] = "forged"
    tags.save(buffer)
    assert CODEC.extract_token(buffer.getvalue()) == "forged"
    assert "SVC_TOKEN" not in FLAC(io.BytesIO(CODEC.strip_token(buffer.getvalue())))


def test_reencoding_keeps_rate_depth_channels_and_metadata() -> None:
    original = CODEC.embed_token(audio.tagged_flac(audio.chirp(0.5, channels=2), bits=24), TOKEN)
    media = CODEC.open(original)
    samples, _ = CODEC.samples(media)
    changed = CODEC.reencode(media, samples * 0.5)
    assert CODEC.info(changed) == CODEC.info(media)
    assert CODEC.extract_token(changed) == TOKEN
    tags = FLAC(io.BytesIO(changed))
    assert tags["TITLE"] == ["Test tone"] and tags.pictures[0].data == audio.JPEG_PICTURE
    assert tags.info.bits_per_sample == 24 and tags.info.sample_rate == 44_100
    assert np.abs(CODEC.samples(changed)[0] - samples * 0.5).max() <= 2**-23


@pytest.mark.skipif(not audio.has_ffprobe(), reason="ffprobe is not installed")
def test_ffprobe_reads_the_signed_file_without_errors() -> None:
    errors, stream = audio.ffprobe(CODEC.embed_token(audio.tagged_flac(), TOKEN), ".flac")
    assert errors == ""
    assert (stream["codec_name"], stream["channels"], stream["sample_rate"]) == ("flac", 2, "44100")


@pytest.mark.skipif(shutil.which("flac") is None, reason="the flac tool is not installed")
def test_the_reference_decoder_tests_the_signed_and_reencoded_files() -> None:
    signed = CODEC.embed_token(audio.tagged_flac(), TOKEN)
    media = CODEC.open(signed)
    for data in (signed, CODEC.reencode(media, CODEC.samples(media)[0] * 0.9)):
        with tempfile.NamedTemporaryFile(suffix=".flac") as file:
            file.write(data)
            file.flush()
            result = subprocess.run(["flac", "--test", "--silent", file.name], capture_output=True, timeout=600)
        assert result.returncode == 0, result.stderr


# --- limits and hostile files ------------------------------------------------------------------------

def _with_streaminfo(data: bytes, streaminfo: bytes) -> bytes:
    return data[:4] + data[4:5] + len(streaminfo).to_bytes(3, "big") + streaminfo + data[42:]


def test_broken_headers_are_refused() -> None:
    valid = audio.flac_bytes(audio.tone(0.1))
    streaminfo = valid[8:42]
    cases = {
        "truncated-streaminfo": (_with_streaminfo(valid, streaminfo[:20]), CorruptMedia),
        "zero-rate": (_with_streaminfo(valid, streaminfo[:10] + b"\x00\x00\x0f" + streaminfo[13:]), CorruptMedia),
        "block-size-under-16": (_with_streaminfo(valid, b"\x00\x08\x00\x08" + streaminfo[4:]), CorruptMedia),
        "unknown-length": (hm.flac_declaring(total_samples=0), UnsupportedFormat),
        "comment-first": (b"fLaC\x84\x00\x00\x08" + bytes(8) + valid[4:], CorruptMedia),
        "block-past-end": (valid[:42] + b"\x84\xff\xff\xff" + valid[42:100], CorruptMedia),
        "metadata-truncated": (valid[:30], CorruptMedia),
        "no-frames": (valid[:4] + bytes([valid[4] | 0x80]) + valid[5:42], CorruptMedia),
        "two-comment-blocks": (valid[:42] + b"\x04\x00\x00\x08" + bytes(8) + valid[42:], CorruptMedia),
        "over-20-minutes": (hm.flac_declaring(total_samples=44_100 * (base.MAX_SECONDS + 1)), MediaTooLarge),
        "over-192kHz": (hm.flac_declaring(total_samples=1000, sample_rate=384_000), MediaTooLarge),
        "under-8kHz": (hm.flac_declaring(total_samples=1000, sample_rate=4_000), UnsupportedFormat),
        "too-many-blocks": (hm.flac_with_empty_blocks(MAX_BLOCKS + 1), MediaTooLarge),
    }
    for name, (data, error) in cases.items():
        assert detect(data) is CODEC
        with pytest.raises(error):
            CODEC.open(data)
            pytest.fail(name)


def test_a_comment_block_with_lying_lengths_is_corrupt() -> None:
    valid = audio.flac_bytes(audio.tone(0.1))
    comment = (5).to_bytes(4, "little") + b"abcde" + (3).to_bytes(4, "little") + (1000).to_bytes(4, "little")
    data = valid[:4] + bytes([valid[4] & 0x7F]) + valid[5:42] + b"\x84" + len(comment).to_bytes(3, "big") + comment
    data += valid[valid.index(b"\xff\xf8") :]
    for call in (CODEC.extract_token, CODEC.strip_token, lambda d: CODEC.embed_token(d, TOKEN)):
        with pytest.raises(CorruptMedia):
            call(data)


def test_frames_shorter_than_declared_are_corrupt_when_decoded() -> None:
    valid = audio.flac_bytes(audio.noise(0.5))
    media = CODEC.open(valid[: len(valid) // 2])  # the header is intact: only decoding finds out
    with pytest.raises(CorruptMedia):
        CODEC.samples(media)


def test_an_id3_tag_in_front_is_read_and_kept() -> None:
    """Where c2pa-rs puts a FLAC's manifest store: the tag is kept by token surgery, the FLAC read behind it,
    also when the tag is longer than the detection head."""
    plain = audio.flac_bytes(audio.tone(0.1))
    for padding in (10, 10_000):
        tag = b"ID3\x04\x00\x00" + bytes([0, 0, padding >> 7, padding & 0x7F]) + bytes(padding)
        media = open_media(tag + plain)
        assert media.codec is CODEC and media.container.info == CODEC.open(plain).container.info
        signed = CODEC.embed_token(media, TOKEN)
        assert signed.startswith(tag) and CODEC.extract_token(signed) == TOKEN
        assert CODEC.strip_token(signed) == tag + plain


def test_an_id3_tag_in_front_of_something_else_is_not_flac() -> None:
    with pytest.raises(UnsupportedFormat):
        CODEC.open(b"ID3\x04\x00\x00\x00\x00\x00\x0a" + bytes(10) + b"RIFF" + bytes(100))


def test_bit_depths_libsndfile_cannot_write_are_not_reencoded() -> None:
    data = audio.flac_bytes(audio.tone(0.1), bits=24)
    packed = int.from_bytes(data[18:26], "big") & ~(0x1F << 36) | (20 - 1) << 36
    media = CODEC.open(data[:18] + packed.to_bytes(8, "big") + data[26:])
    with pytest.raises(UnsupportedFormat, match="20-bit"):
        CODEC.reencode(media, np.zeros((10, 2)))
