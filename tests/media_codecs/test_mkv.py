"""Matroska and WebM: the sentinel trailer (placement, replacement, stripping), what ffprobe and PyAV make
of the output, and the limits checked from the EBML headers before any decoding."""

import io

import av
import pytest

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, get_codec
from media_codecs.video import limits
from media_codecs.video.mkv import SENTINEL
from tests import hostile_media as hostile
from tests import video
from tests.media_codecs.conftest import OTHER_TOKEN, TOKEN

CASES = {"mkv h264": ("mkv", {}), "mkv vp9 with audio": ("mkv", {"codec": "libvpx-vp9", "audio": True}),
         "webm vp9": ("webm", {}), "webm with audio": ("webm", {"audio": True})}


def _sample(case: str) -> tuple[str, bytes]:
    fmt, options = CASES[case]
    return fmt, video.sample(fmt, **options)


@pytest.mark.parametrize("case", CASES)
def test_the_token_goes_in_a_void_trailer_after_the_segment(case) -> None:
    fmt, original = _sample(case)
    codec = get_codec(fmt)
    signed = codec.embed_token(original, TOKEN)
    assert detect(signed) is codec
    assert signed.startswith(original)
    assert signed[len(original) :] == b"\xec\x01" + (len(SENTINEL) + len(TOKEN)).to_bytes(7, "big") + SENTINEL + \
        TOKEN.encode()
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == original


@pytest.mark.parametrize("fmt", ["mkv", "webm"])
def test_re_signing_replaces_the_trailer(fmt) -> None:
    codec = get_codec(fmt)
    original = video.sample(fmt)
    resigned = codec.embed_token(codec.embed_token(original, TOKEN), OTHER_TOKEN)
    assert resigned.count(SENTINEL) == 1
    assert codec.extract_token(resigned) == OTHER_TOKEN
    assert codec.strip_token(resigned) == original


@pytest.mark.skipif(not video.has_ffprobe(), reason="ffprobe is not installed")
@pytest.mark.parametrize("case", CASES)
def test_ffprobe_reads_the_signed_file_as_the_original(case) -> None:
    fmt, original = _sample(case)
    signed = get_codec(fmt).embed_token(original, TOKEN)
    before, after = video.ffprobe(original, fmt), video.ffprobe(signed, fmt)
    assert after["format"]["duration"] == before["format"]["duration"]
    assert [(s["codec_name"], s.get("width")) for s in after["streams"]] == \
           [(s["codec_name"], s.get("width")) for s in before["streams"]]
    assert video.ffprobe_errors(signed, fmt) == ""


@pytest.mark.parametrize("case", CASES)
def test_pyav_decodes_every_frame_of_the_signed_file(case) -> None:
    fmt, original = _sample(case)
    signed = get_codec(fmt).embed_token(original, TOKEN)
    with av.open(io.BytesIO(signed)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 75


def test_the_doctype_decides_between_matroska_and_webm() -> None:
    assert detect(video.sample("mkv")).format == "mkv"
    assert detect(video.sample("webm")).format == "webm"


def test_the_headers_are_read_without_decoding() -> None:
    info = get_codec("webm").info(video.sample("webm", audio=True))
    assert [(t.kind, t.width, t.height) for t in info.tracks] == [("video", 320, 240), ("audio", 0, 0)]
    assert 2.9 < info.seconds < 3.1


# --- limits and malformed elements -------------------------------------------------------------------

@pytest.mark.parametrize(("make", "error"), [
    (lambda d: hostile.mkv_with_tracks(d, limits.MAX_STREAMS + 1), MediaTooLarge),
    (lambda d: hostile.mkv_declaring_width(d, 4097), MediaTooLarge),
    (lambda d: hostile.mkv_declaring_width(d, 0), CorruptMedia),
    (lambda d: hostile.mkv_declaring_seconds(d, limits.MAX_SECONDS + 1), MediaTooLarge),
    (lambda d: hostile.mkv_declaring_seconds(d, float("nan")), CorruptMedia),
])
def test_header_limits_are_checked_before_decoding(make, error) -> None:
    with pytest.raises(error):
        get_codec("mkv").open(make(video.sample("mkv")))


def test_the_track_copies_are_read_when_within_the_limit() -> None:
    info = get_codec("mkv").info(hostile.mkv_with_tracks(video.sample("mkv"), limits.MAX_STREAMS))
    assert len(info.tracks) == limits.MAX_STREAMS


@pytest.mark.parametrize(("make", "error"), [
    (lambda d: d[: len(d) // 2], CorruptMedia),  # truncated: the Segment's size lies
    (lambda d: d[:30], CorruptMedia),
    (lambda d: hostile.mkv_with_segment_size(d, b"\x01" + b"\xff" * 7), UnsupportedFormat),  # unknown size
    (lambda d: hostile.mkv_with_segment_size(d, b"\x01" + (2**56 - 2).to_bytes(7, "big")), CorruptMedia),  # lies
    (lambda d: d + b"\xec\xff", UnsupportedFormat),  # a Void of unknown size after the Segment
    (lambda d: d + b"\xec\x88", CorruptMedia),  # a Void claiming 8 bytes with none left
    (lambda d: d + b"\x00\x81\x00", CorruptMedia),  # an ID with no length marker
    (lambda d: d + b"\xec\x80" * 100, MediaTooLarge),  # too many top-level elements
    (lambda d: d + d[d.index(b"\x18\x53\x80\x67") :], UnsupportedFormat),  # two Segments
    (lambda d: video.make_audio_only("mkv"), UnsupportedFormat),  # no video stream
])
def test_malformed_elements_are_refused_with_a_codec_error(make, error) -> None:
    with pytest.raises(error):
        get_codec("mkv").open(make(video.sample("mkv")))


def test_a_webm_is_not_opened_as_matroska() -> None:
    with pytest.raises(UnsupportedFormat):
        get_codec("mkv").open(video.sample("webm"))
