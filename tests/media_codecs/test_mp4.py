"""MP4 and QuickTime: the `cerv` box (placement, replacement, stripping), what ffprobe and PyAV make of
the output, and the limits checked from the boxes before any decoding."""

import io

import av
import pytest

from media_codecs import CorruptMedia, MediaTooLarge, UnsupportedFormat, detect, get_codec
from media_codecs.video import limits
from tests import hostile_media as hostile
from tests import video
from tests.media_codecs.conftest import OTHER_TOKEN, TOKEN

FORMATS = ["mp4", "mov"]
VARIANTS = {"plain": {}, "faststart": {"faststart": True}, "with audio": {"audio": True}, "rotated": {"rotate": 90}}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_token_goes_in_a_cerv_box_after_the_last_box(fmt, variant) -> None:
    original = video.sample(fmt, **VARIANTS[variant])
    codec = get_codec(fmt)
    signed = codec.embed_token(original, TOKEN)
    assert detect(signed) is codec
    assert signed.startswith(original)  # nothing before it moved: no chunk offset changes
    assert video.top_level_boxes(signed)[-1] == b"cerv"
    assert signed[len(original) + 8 :] == b"\x00\x00\x00\x00" + TOKEN.encode()
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == original


def test_a_faststart_file_stays_faststart() -> None:
    original = video.sample("mp4", faststart=True)
    boxes = video.top_level_boxes(get_codec("mp4").embed_token(original, TOKEN))
    assert boxes.index(b"moov") < boxes.index(b"mdat") and boxes[-1] == b"cerv"


@pytest.mark.parametrize("fmt", FORMATS)
def test_re_signing_replaces_the_box(fmt) -> None:
    codec = get_codec(fmt)
    original = video.sample(fmt)
    resigned = codec.embed_token(codec.embed_token(original, TOKEN), OTHER_TOKEN)
    assert video.top_level_boxes(resigned).count(b"cerv") == 1
    assert codec.extract_token(resigned) == OTHER_TOKEN
    assert codec.strip_token(resigned) == original


@pytest.mark.skipif(not video.has_ffprobe(), reason="ffprobe is not installed")
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_ffprobe_reads_the_signed_file_as_the_original(fmt, variant) -> None:
    original = video.sample(fmt, **VARIANTS[variant])
    signed = get_codec(fmt).embed_token(original, TOKEN)
    before, after = video.ffprobe(original, fmt), video.ffprobe(signed, fmt)
    assert after["format"]["duration"] == before["format"]["duration"]
    assert [(s["codec_name"], s.get("width"), s.get("nb_frames")) for s in after["streams"]] == \
           [(s["codec_name"], s.get("width"), s.get("nb_frames")) for s in before["streams"]]
    assert video.ffprobe_errors(signed, fmt) == ""


@pytest.mark.parametrize("fmt", FORMATS)
def test_pyav_decodes_every_frame_of_the_signed_file(fmt) -> None:
    original = video.sample(fmt, audio=True)
    signed = get_codec(fmt).embed_token(original, TOKEN)
    with av.open(io.BytesIO(signed)) as container:
        assert sum(1 for _ in container.decode(video=0)) == 75


def test_a_last_box_of_size_zero_gets_its_size_before_our_box() -> None:
    original = video.sample("mp4")
    moov = original.rfind(b"moov") - 4  # moov is last in a non-faststart file
    open_ended = original[:moov] + b"\x00\x00\x00\x00" + original[moov + 4 :]
    codec = get_codec("mp4")
    signed = codec.embed_token(open_ended, TOKEN)
    assert codec.extract_token(signed) == TOKEN
    assert codec.strip_token(signed) == codec.strip_token(open_ended) == original


def test_a_cerv_box_before_other_boxes_is_stripped_but_not_re_signed() -> None:
    original = video.sample("mp4")
    planted = original + hostile.box(b"cerv", b"\x00\x00\x00\x00svc_x") + hostile.box(b"free", b"")
    codec = get_codec("mp4")
    assert codec.strip_token(planted) == original + hostile.box(b"free", b"")
    with pytest.raises(UnsupportedFormat):
        codec.embed_token(planted, TOKEN)


def test_the_brand_decides_between_mp4_and_quicktime() -> None:
    assert detect(video.sample("mp4")).format == "mp4"
    assert detect(video.sample("mov")).format == "mov"
    heif = hostile.box(b"ftyp", b"heic\x00\x00\x00\x00mif1heic")
    assert get_codec("mp4").score(heif) == get_codec("mov").score(heif) == 0


def test_the_headers_are_read_without_decoding() -> None:
    info = get_codec("mp4").info(video.sample("mp4", audio=True))
    assert [(t.kind, t.width, t.height) for t in info.tracks] == [("video", 320, 240), ("audio", 0, 0)]
    assert 2.9 < info.seconds < 3.1


# --- limits and malformed boxes --------------------------------------------------------------------

@pytest.mark.parametrize(("make", "error"), [
    (lambda d: hostile.mp4_with_streams(d, limits.MAX_STREAMS + 1), MediaTooLarge),
    (lambda d: hostile.mp4_declaring_size(d, 4097, 240), MediaTooLarge),
    (lambda d: hostile.mp4_declaring_size(d, 4096, 4096), MediaTooLarge),
    (lambda d: hostile.mp4_declaring_size(d, 0, 0), CorruptMedia),
    (lambda d: hostile.mp4_declaring_seconds(d, limits.MAX_SECONDS + 1), MediaTooLarge),
    (lambda d: hostile.mp4_patched(d, (b"moov", b"mvhd"), 12, b"\x00" * 4), CorruptMedia),  # timescale 0
])
def test_header_limits_are_checked_before_decoding(make, error) -> None:
    with pytest.raises(error):
        get_codec("mp4").open(make(video.sample("mp4")))


def test_the_limits_allow_dci_4k_and_ten_minutes() -> None:
    sample = hostile.mp4_declaring_seconds(hostile.mp4_declaring_size(video.sample("mp4"), 4096, 2160), 600)
    assert get_codec("mp4").open(sample).container.info.seconds == 600


def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize(("make", "error"), [
    (_truncated, CorruptMedia),  # moov (last) is cut off
    (lambda d: _truncated(video.sample("mp4", faststart=True)), CorruptMedia),  # mdat is cut short
    (lambda d: d + hostile.box(b"free")[:6], CorruptMedia),  # a header cut short
    (lambda d: d + b"\x00\x00\x00\x01free" + (2**64 - 1).to_bytes(8, "big"), CorruptMedia),  # 2^64 bytes
    (lambda d: hostile.mp4_with_moov_payload(d, b"\x00\x00\x00\x01trak" + (2**64 - 1).to_bytes(8, "big")),
     CorruptMedia),
    (lambda d: d + b"\xff\xff\xff\xffskip", CorruptMedia),  # size past the end
    (lambda d: d + b"\x00\x00\x00\x04skip", CorruptMedia),  # size smaller than its header
    (lambda d: hostile.mp4_with_moov_payload(d, b"\x00\x00\x00\x00udta"), CorruptMedia),  # size 0 nested
    (lambda d: hostile.mp4_nested(d, 50), CorruptMedia),
    (lambda d: d + hostile.box(b"free") * 5000, MediaTooLarge),
    (lambda d: d + hostile.box(b"moov"), CorruptMedia),  # two moov
    (lambda d: d.replace(b"mdat", b"free"), CorruptMedia),  # no media data
    (lambda d: d + hostile.box(b"moof"), UnsupportedFormat),  # fragmented
    (lambda d: video.make_audio_only("mp4"), UnsupportedFormat),  # no video stream
])
def test_malformed_boxes_are_refused_with_a_codec_error(make, error) -> None:
    with pytest.raises(error):
        get_codec("mp4").open(make(video.sample("mp4")))


def test_a_fragmented_mp4_is_refused_clearly() -> None:
    fragmented = video.make_video("mp4", seconds=1.0, movflags="frag_keyframe+empty_moov")
    with pytest.raises(UnsupportedFormat, match="fragmented"):
        get_codec("mp4").open(fragmented)
