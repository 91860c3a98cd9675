from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import OTHER_TOKEN, TOKEN
from mutagen import id3 as mutagen_id3
from mutagen.mp3 import MP3, BitrateMode

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, open_media
from media_codecs.audio import base, id3, mpeg
from media_codecs.audio.mp3 import CODEC
from media_codecs.base import SCORE_NONE
from tests import audio
from tests import hostile_media as hm
from tests.waiting import CpuSpent


def _id3_end(data: bytes) -> int:
    return id3.tag_length(data[:10]) or 0


@pytest.mark.parametrize("make", [
    lambda: audio.lame_mp3(audio.tone(0.5)),
    lambda: audio.ffmpeg_mp3(audio.tone(0.5)),
    lambda: audio.tagged_mp3(version=3),
    lambda: audio.tagged_mp3(version=4, id3v1=True),
    lambda: audio.lame_mp3(audio.chirp(0.5, rate=22_050), rate=22_050, kbps=64),
    lambda: audio.lame_mp3(audio.tone(0.5, rate=8_000, channels=1), rate=8_000, kbps=16),
], ids=["bare", "info-frame", "id3v23", "id3v24-and-v1", "mpeg2-mono", "mpeg25"])
def test_mp3_is_detected_and_the_token_round_trips(make) -> None:
    data = make()
    media = open_media(data)
    assert media.codec is CODEC
    signed = CODEC.embed_token(data, TOKEN)
    assert CODEC.extract_token(signed) == TOKEN
    assert CODEC.strip_token(signed) == data
    assert signed[_id3_end(signed) :] == data[_id3_end(data) :]  # the audio, info frame and ID3v1 untouched
    read = MP3(io.BytesIO(signed))
    assert read.tags["TXXX:svc_token"].text == [TOKEN]
    assert read.info.length == pytest.approx(MP3(io.BytesIO(data)).info.length)


def test_random_bytes_and_lone_frame_headers_are_not_claimed() -> None:
    rng = np.random.default_rng(7)
    for _ in range(2000):
        head = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
        assert CODEC.score(b"\xff\xfb" + head[2:]) == SCORE_NONE
    one_frame = hm.mp3_frames(1) + b"\x00" * 100
    assert CODEC.score(one_frame) == SCORE_NONE
    assert CODEC.score(hm.mp3_frames(2)) > SCORE_NONE


def test_other_frames_and_the_id3v1_tag_are_kept() -> None:
    original = audio.tagged_mp3(version=3, id3v1=True)
    signed = CODEC.embed_token(original, TOKEN)
    before, after = id3.parse_tag(original), id3.parse_tag(signed)
    assert after.version == 3 and after.padding == before.padding
    assert [bytes(f.raw) for f in after.frames[:-1]] == [bytes(f.raw) for f in before.frames]
    tags = MP3(io.BytesIO(signed)).tags
    assert str(tags["TIT2"]) == "Test tone" and tags["APIC:cover"].data == audio.JPEG_PICTURE
    assert str(tags["COMM::eng"]) == "a comment"
    assert signed.endswith(original[-128:]) and signed[-128:-125] == b"TAG"


def test_a_file_without_a_tag_gets_an_id3v24_tag_that_strip_removes() -> None:
    original = audio.ffmpeg_mp3(audio.tone(0.5))
    signed = CODEC.embed_token(original, TOKEN)
    assert signed[:4] == b"ID3\x04" and signed.endswith(original)
    assert CODEC.strip_token(signed) == original


def test_embedding_again_replaces_and_strip_does_not_depend_on_the_token() -> None:
    original = audio.tagged_mp3()
    once = CODEC.embed_token(original, OTHER_TOKEN)
    twice = CODEC.embed_token(once, TOKEN)
    assert len(MP3(io.BytesIO(twice)).tags.getall("TXXX:svc_token")) == 1
    assert CODEC.strip_token(twice) == CODEC.strip_token(once) == original


def test_a_utf16_token_frame_written_by_another_tool_is_recognised() -> None:
    buffer = io.BytesIO(audio.tagged_mp3())
    tags = mutagen_id3.ID3(buffer)
    tags.add(mutagen_id3.TXXX(encoding=1, desc="svc_token", text="svc_from_mutagen"))
    buffer.seek(0)
    tags.save(buffer)
    assert CODEC.extract_token(buffer.getvalue()) == "svc_from_mutagen"
    assert "TXXX:svc_token" not in MP3(io.BytesIO(CODEC.strip_token(buffer.getvalue()))).tags


def test_an_unsynchronised_v23_tag_is_rewritten_without_the_scheme() -> None:
    original = audio.tagged_mp3(version=3)
    tag = id3.parse_tag(original)
    body = id3.tag_bytes(tag)[10:]
    unsynced = body.replace(b"\xff", b"\xff\x00")
    data = b"ID3\x03\x00\x80" + id3._to_syncsafe(len(unsynced)) + unsynced + original[_id3_end(original) :]
    signed = CODEC.embed_token(data, TOKEN)
    assert signed[5] & 0x80 == 0 and CODEC.strip_token(signed) == original
    assert MP3(io.BytesIO(signed)).tags["APIC:cover"].data == audio.JPEG_PICTURE


def test_reencoding_keeps_bitrate_mode_rate_and_tags() -> None:
    original = CODEC.embed_token(audio.tagged_mp3(audio.noise(1.0), id3v1=True), TOKEN)
    media = CODEC.open(original)
    samples, _ = CODEC.samples(media)
    changed = CODEC.reencode(media, samples * 0.5)
    before, after = MP3(io.BytesIO(original)), MP3(io.BytesIO(changed))
    assert round(after.info.bitrate / 1000) == round(before.info.bitrate / 1000) == 128
    assert (after.info.mode, after.info.sample_rate, after.info.channels) == (
        before.info.mode, before.info.sample_rate, before.info.channels)
    assert after.info.bitrate_mode in (BitrateMode.CBR, BitrateMode.UNKNOWN)
    assert after.info.length == pytest.approx(before.info.length, abs=0.06)
    assert CODEC.extract_token(changed) == TOKEN and str(after.tags["TIT2"]) == "Test tone"
    assert changed[: _id3_end(original)] == original[: _id3_end(original)] and changed.endswith(original[-128:])
    assert CODEC.samples(changed)[0].shape[1] == 2


@pytest.mark.parametrize("mode", [mpeg.STEREO, mpeg.JOINT_STEREO, mpeg.MONO])
def test_reencoding_keeps_the_channel_mode(mode) -> None:
    channels = 1 if mode == mpeg.MONO else 2
    original = audio.ffmpeg_mp3(audio.tone(0.5, channels=channels), kbps=96, joint=mode == mpeg.JOINT_STEREO)
    media = CODEC.open(original)
    changed = CODEC.reencode(media, CODEC.samples(media)[0])
    after = MP3(io.BytesIO(changed)).info
    assert (after.mode, after.bitrate // 1000, after.channels) == (mode, 96, channels)
    assert mpeg.frame_header(changed, mpeg.frame_header(changed, 0).length).mode == mode


@pytest.mark.skipif(not audio.has_ffprobe(), reason="ffprobe is not installed")
def test_ffprobe_reads_signed_and_reencoded_files_without_errors() -> None:
    signed = CODEC.embed_token(audio.tagged_mp3(id3v1=True), TOKEN)
    media = CODEC.open(signed)
    for data in (signed, CODEC.reencode(media, CODEC.samples(media)[0] * 0.8)):
        errors, stream = audio.ffprobe(data, ".mp3")
        assert errors == ""
        assert (stream["codec_name"], stream["channels"], stream["sample_rate"]) == ("mp3", 2, "44100")


def test_the_duration_comes_from_the_info_frame_or_a_scan() -> None:
    for data in (audio.ffmpeg_mp3(audio.tone(2.0)), audio.lame_mp3(audio.tone(2.0))):
        assert CODEC.info(data).seconds == pytest.approx(2.0, abs=0.1)


# --- limits and hostile files ------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "error"), [
    (hm.id3_tag_only(), CorruptMedia),
    (hm.id3_tag_only()[:200], CorruptMedia),  # the tag runs past the end
    (b"ID3\x04\x00\x00\x00\x00\x00\x00", CorruptMedia),  # an empty tag and nothing else
    (b"ID3\x02\x00\x00\x00\x00\x00\x0a" + bytes(10) + hm.mp3_frames(3), UnsupportedFormat),
    (b"ID3\x04\x00\x00\x00\x00\x00\x00" + hm.mp3_frames(3, layer_bits=0b10), UnsupportedFormat),  # Layer II
    (b"ID3\x04\x00\x00\x00\x00\x00\x00" + hm.mp3_with_xing_frames(10_000_000), MediaTooLarge),
    (hm.mp3_with_xing_frames(10_000_000), MediaTooLarge),
    (hm.id3_with_empty_frames(id3.MAX_FRAMES + 1), MediaTooLarge),
    (b"ID3\x04\x00\x00\x00\x00\x00\x00" + bytes(70_000) + hm.mp3_frames(3), CorruptMedia),  # frames too far
], ids=["tag-only", "tag-past-end", "empty-tag", "id3v2.2", "layer-2", "xing-10M-frames-after-tag",
        "xing-10M-frames", "too-many-frames", "frames-too-far"])
def test_malformed_and_out_of_limit_files_are_refused_by_the_parser(data: bytes, error) -> None:
    assert detect(data) is CODEC
    with pytest.raises(error):
        CODEC.open(data)


def test_a_long_stream_without_an_info_frame_is_measured_by_a_bounded_scan() -> None:
    twenty_one_minutes = 21 * 60 * 44_100 // 1152
    with pytest.raises(MediaTooLarge, match="seconds"):
        CODEC.open(hm.mp3_frames(twenty_one_minutes))


def test_fifty_megabytes_of_the_smallest_frames_are_refused_quickly() -> None:
    data = hm.mp3_smallest_frames(50 * hm.MB)
    CODEC.score(data[:4096])  # modules loaded: only the parse is timed
    with CpuSpent() as spent, pytest.raises(MediaTooLarge, match="seconds"):
        CODEC.open(data)
    assert spent.seconds < 2.0, spent.seconds  # this process's CPU: a busy machine does not stretch it


def test_decoding_stops_at_the_sample_budget(monkeypatch) -> None:
    media = CODEC.open(audio.lame_mp3(audio.tone(1.0)))
    monkeypatch.setattr(base, "MAX_DECODED_SAMPLES", 20_000)
    with pytest.raises(MediaTooLarge):
        CODEC.samples(media)


def test_a_xing_header_that_understates_is_refused_as_lying() -> None:
    # The rule for every container whose header and payload disagree (docs/decisions.md): refused, never
    # read as the shorter stream it declares, nor for the limits
    twenty_one_minutes = 21 * 60 * 44_100 // 1152
    assert CODEC.info(hm.mp3_with_xing_frames(2)).frames == 2 * 1152
    for frames in (200, twenty_one_minutes):
        with pytest.raises(CorruptMedia, match="more than the 2 its Xing"):
            CODEC.open(hm.mp3_with_xing_frames(2) + hm.mp3_frames(frames))
