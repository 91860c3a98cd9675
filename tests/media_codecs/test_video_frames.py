"""The video fingerprints: the first frame's pHash is imagehash's on the decoded, upright frame; the set
holds the frames at fixed offsets and later keyframes; remuxes, re-encodes, downscales and cuts of a
clip are found within the lookup's distance (verification/selectors.py, PHASH_MAX_DISTANCE = 7)."""

import io
import re
import shutil
import subprocess
import tempfile

import av
import imagehash
import pytest
from PIL import Image

from media_codecs import CorruptMedia, get_codec
from media_codecs.video import frames
from provenance.phash_bands import hamming
from tests import video
from tests.media_codecs.conftest import TOKEN
from verification.selectors import PHASH_MAX_DISTANCE

FORMATS = ["mp4", "mov", "mkv", "webm"]


def _first_frame(data: bytes) -> av.VideoFrame:
    with av.open(io.BytesIO(data)) as container:
        return next(container.decode(video=0))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_fingerprint_is_imagehash_phash_of_the_first_frame(fmt) -> None:
    signed = get_codec(fmt).embed_token(video.sample(fmt), TOKEN)
    frame = _first_frame(signed)
    assert frame.key_frame and frame.pict_type == 1  # AV_PICTURE_TYPE_I
    assert get_codec(fmt).fingerprint(signed) == str(imagehash.phash(frame.to_image()))


def test_the_fingerprint_is_taken_on_the_upright_frame() -> None:
    rotated = video.sample("mp4", rotate=90)
    frame = _first_frame(rotated)
    assert frame.rotation == 90
    upright = frame.to_image().rotate(90, expand=True)  # counter-clockwise, as FFmpeg's autorotate
    assert get_codec("mp4").fingerprint(rotated) == str(imagehash.phash(upright))
    assert get_codec("mp4").fingerprint(rotated) != str(imagehash.phash(frame.to_image()))


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")
def test_the_upright_frame_is_the_one_ffmpeg_shows() -> None:
    rotated = video.sample("mp4", rotate=90)
    with tempfile.TemporaryDirectory() as folder:
        with open(f"{folder}/in.mp4", "wb") as file:
            file.write(rotated)
        subprocess.run(["ffmpeg", "-v", "error", "-i", f"{folder}/in.mp4", "-frames:v", "1", f"{folder}/out.png"],
                       check=True, timeout=600)
        shown = Image.open(f"{folder}/out.png")
        shown.load()
    assert shown.size == (240, 320)
    assert hamming(get_codec("mp4").fingerprint(rotated), str(imagehash.phash(shown))) <= 2


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_set_starts_with_the_fingerprint_and_holds_the_frames_at_each_second(fmt) -> None:
    sample = video.sample(fmt, seconds=6.0)
    values = get_codec(fmt).fingerprints(sample)
    assert values[0] == get_codec(fmt).fingerprint(sample)
    assert 1 < len(values) <= frames.MAX_FINGERPRINTS and len(set(values)) == len(values)
    assert all(re.fullmatch(r"[0-9a-f]{16}", value) for value in values)
    with av.open(io.BytesIO(sample)) as container:
        at = {round(frame.time, 3): str(imagehash.phash(frame.to_image())) for frame in container.decode(video=0)}
    assert values[1:5] == [at[1.0], at[2.0], at[3.0], at[4.0]]


def test_later_keyframes_complete_the_set() -> None:
    sample = video.sample("mp4", seconds=9.0, keyint=125)  # keyframes at 0 s and 5 s
    values = get_codec("mp4").fingerprints(sample)
    with av.open(io.BytesIO(sample)) as container:
        keyframe = next(frame for frame in container.decode(video=0) if frame.time >= 5 and frame.key_frame)
    assert values[5] == str(imagehash.phash(keyframe.to_image()))


def test_the_fingerprints_do_not_depend_on_the_token() -> None:
    codec = get_codec("webm")
    sample = video.sample("webm")
    assert codec.fingerprints(codec.embed_token(sample, TOKEN)) == codec.fingerprints(sample)


def _distance_to_set(query: bytes, source: str, original: bytes) -> int:
    value = frames.first_frame_phash(query, video.DEMUXERS[source])
    return min(hamming(value, stored) for stored in get_codec("mp4").fingerprints(original))


@pytest.mark.parametrize(("name", "transform", "source"), [
    ("remux to mkv", lambda d: video.remux(d, "mp4", "mkv"), "mkv"),
    ("half the bitrate", lambda d: video.reencode(d, "mp4", bitrate=150_000), "mp4"),
    ("downscaled", lambda d: video.reencode(d, "mp4", height=120, crf=30), "mp4"),
    ("first 2 s cut, re-encoded", lambda d: video.reencode(d, "mp4", start=2.0, crf=26), "mp4"),
    ("cut at a keyframe, remuxed", lambda d: video.remux(d, "mp4", "mp4", start=4.5), "mp4"),
])
def test_copies_without_the_token_are_within_the_lookup_distance(name, transform, source) -> None:
    original = video.sample("mp4", seconds=9.0, keyint=125, bitrate=300_000)
    assert _distance_to_set(transform(original), source, original) <= PHASH_MAX_DISTANCE


def test_a_stream_without_frames_is_corrupt() -> None:
    sample = video.sample("mkv")
    codec = get_codec("mkv")
    media = codec.open(sample)
    cut = media.data[: media.container.elements[1].start + 600]  # headers only: the clusters are gone
    with pytest.raises(CorruptMedia):
        frames.first_frame_phash(cut + b"\x00" * 10, "matroska")


def _fade_in(index: int, width: int, height: int):
    """Black for the first second (25 frames), then the moving gradient."""
    return video.moving_gradient(index, width, height) * (index >= 25)


def test_a_flat_first_frame_is_no_fingerprint_but_the_frames_with_a_picture_are() -> None:
    data = video.make_video("mp4", seconds=3.0, picture=_fade_in)
    codec = get_codec("mp4")
    assert codec.fingerprint(data) is None
    stored = codec.fingerprints(data)
    assert stored and all(re.fullmatch("[0-9a-f]{16}", value) for value in stored)
    assert all(value not in ("0000000000000000", "8000000000000000") for value in stored)


def test_a_video_flat_throughout_has_no_fingerprint_at_all() -> None:
    data = video.make_video("mp4", seconds=2.0, picture=lambda index, width, height: _fade_in(0, width, height))
    codec = get_codec("mp4")
    assert codec.fingerprint(data) is None
    assert codec.fingerprints(data) == []


def _turned_clockwise(quarters: int):
    """The moving gradient as a viewer sees it turned `quarters` quarter turns clockwise, drawn in the pixels."""
    import numpy as np

    def picture(index: int, width: int, height: int):
        upright = video.moving_gradient(index, *((height, width) if quarters % 2 else (width, height)))
        return np.ascontiguousarray(np.rot90(upright, -quarters))
    return picture


@pytest.mark.parametrize("fmt", ["mp4", "mov"])
@pytest.mark.parametrize("clockwise", [90, 180, 270])
def test_a_turn_written_only_in_the_display_matrix_reads_both_as_shown_and_as_stored(fmt, clockwise) -> None:
    upright = video.make_video(fmt, size=(320, 192), seconds=1.0)
    turned = video.with_display_matrix(upright, clockwise)
    quarters = clockwise // 90
    size = (192, 320) if quarters % 2 else (320, 192)
    drawn_turned = video.make_video(fmt, size=size, seconds=1.0, picture=_turned_clockwise(quarters))
    if video.has_ffprobe():  # FFmpeg's own reading of the matrix: counter-clockwise degrees
        [side_data] = video.ffprobe(turned, fmt)["streams"][0]["side_data_list"]
        assert side_data["rotation"] % 360 == (-clockwise) % 360
    codec = get_codec(fmt)
    shown, stored = codec.query_fingerprints(turned)
    assert stored == codec.fingerprint(upright)  # a rotation in the headers alone still finds the upright file
    assert hamming(shown, codec.fingerprint(drawn_turned)) <= 2  # and the file that was turned in its pixels
    assert codec.fingerprints(turned)[:2] == [shown, stored]


def test_an_upright_file_is_looked_up_by_one_value() -> None:
    sample = video.sample("mp4")
    assert get_codec("mp4").query_fingerprints(sample) == [get_codec("mp4").fingerprint(sample)]


def _barcode(index: int, width: int, height: int):
    import numpy as np

    bars = (np.arange(width) * 7919 % 13 < 6) & (np.arange(height)[:, None] < height * 0.8)
    return np.where(bars[..., None], np.uint8(60), np.uint8(200)).repeat(3, axis=2).astype(np.uint8)


def _gradient(index: int, width: int, height: int):
    import numpy as np

    ramp = np.linspace(20, 230, width, dtype=np.float32)[None, :] + np.linspace(0, 10, height)[:, None]
    return np.repeat(ramp[..., None], 3, axis=2).astype(np.uint8)


@pytest.mark.parametrize("picture", [_barcode, _gradient])
def test_a_plain_picture_identifies_nothing_though_it_is_not_flat(picture) -> None:
    data = video.make_video("mp4", seconds=1.0, picture=picture)
    first = _first_frame(data).to_image()
    darkest, brightest = first.convert("L").getextrema()
    assert brightest - darkest > 100  # far from flat
    assert frames.identifying_phash_hex(first) is None
    assert get_codec("mp4").fingerprint(data) is None and get_codec("mp4").fingerprints(data) == []
