"""A header that understates its payload is refused (CorruptMedia), never trusted: FLAC STREAMINFO's total
samples against the frames, MP3's Xing/Info/VBRI frame count against the frames present, an MP4 track's
media duration against its sample durations. A payload shorter than declared (a cut file) is read as the
shorter file it is. Files are made here: encoded by `flac`, lame or FFmpeg, then patched."""

import subprocess
import tempfile
from pathlib import Path

import pytest

from media_codecs import CorruptMedia, MediaTooLarge, open_media
from media_codecs.audio import flac
from tests import audio as ta
from tests import hostile_media as hm
from tests import video as tv


def flac_cli(seconds: float, *options: str) -> bytes:
    """A FLAC made by the reference encoder (not the codec's own libsndfile), from noise."""
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "in.wav").write_bytes(ta.wav_bytes(ta.noise(seconds)))
        subprocess.run(["flac", "-s", "-f", *options, f"{tmp}/in.wav", "-o", f"{tmp}/out.flac"], check=True)
        return Path(tmp, "out.flac").read_bytes()


def with_total_samples(data: bytes, total: int) -> bytes:
    """The FLAC with STREAMINFO's 36-bit total sample count replaced (nothing else touched)."""
    at = 4 + 4 + 10  # "fLaC", the block header, then the packed rate/channels/bits/total field
    packed = int.from_bytes(data[at : at + 8], "big")
    packed = packed & ~((1 << 36) - 1) | total
    return data[:at] + packed.to_bytes(8, "big") + data[at + 8 :]


@pytest.mark.parametrize("options", [(), ("--blocksize=1152",), ("-8",), ("--blocksize=192",)],
                         ids=["default", "1152", "best", "192"])
def test_honest_flacs_of_the_reference_encoder_and_libsndfile_are_read(options):
    data = flac_cli(3, *options)
    assert open_media(data).codec.info(data).frames == 3 * ta.RATE
    assert open_media(ta.flac_bytes(ta.noise(3))).codec.format == "flac"


def test_a_flac_whose_streaminfo_understates_its_frames_is_refused():
    data = flac_cli(4)
    with pytest.raises(CorruptMedia, match="more than the 44,100 samples its STREAMINFO declares"):
        open_media(with_total_samples(data, ta.RATE))  # 1 s declared over 4 s of frames


def test_a_flac_with_a_second_stream_appended_is_refused():
    data = flac_cli(2)
    frames = bytes(flac.parse_flac(data).frames)
    with pytest.raises(CorruptMedia, match="after its last frame"):
        open_media(data + frames * 20)  # the frames again (numbered from 0): 40 s behind a 2-s header


def test_a_flac_cut_between_frames_is_a_shorter_flac_and_past_the_limit_by_its_frames():
    data = flac_cli(4)
    assert open_media(data[: len(data) // 2]).codec.format == "flac"  # declares more than it holds
    silent = ta.flac_bytes(ta.tone(60, channels=1) * 0)
    frames = bytes(flac.parse_flac(silent).frames)
    with pytest.raises(CorruptMedia):  # ten hours of frames behind a STREAMINFO of a minute
        open_media(silent + frames * 600)


def test_an_mp3_whose_info_frame_understates_is_refused():
    honest = ta.ffmpeg_mp3(ta.noise(5))
    assert open_media(honest).codec.format == "mp3"
    with pytest.raises(CorruptMedia, match="Xing/Info/VBRI"):
        open_media(hm.mp3_with_xing_frames(2) + hm.mp3_frames(400))
    assert open_media(hm.mp3_with_xing_frames(2) + hm.mp3_frames(1)).codec.format == "mp3"


def _patched_mdhd_duration(data: bytes, divisor: int) -> bytes:
    # Every track's mdhd (version 0: duration at payload offset 16, after version/flags, two times, timescale)
    out, start = bytearray(data), 0
    while (at := data.find(b"mdhd", start)) >= 0:
        start = at + 4
        if data[at + 4] == 0:
            field = at + 4 + 16
            duration = int.from_bytes(data[field : field + 4], "big")
            out[field : field + 4] = (duration // divisor).to_bytes(4, "big")
    return bytes(out)


def test_an_mp4_whose_media_duration_understates_its_samples_is_refused():
    data = tv.make_video("mp4", seconds=4, size=(64, 48))
    assert open_media(data).codec.format == "mp4"
    with pytest.raises(CorruptMedia, match="more than the"):
        open_media(_patched_mdhd_duration(data, 4))


def test_a_lying_header_never_reaches_the_limits_as_the_small_number():
    # Twenty-one minutes of MP3 frames behind an info frame that declares two: refused, not read as 52 ms
    with pytest.raises((CorruptMedia, MediaTooLarge)):
        open_media(hm.mp3_with_xing_frames(2) + hm.mp3_frames(21 * 60 * 44_100 // 1152))
