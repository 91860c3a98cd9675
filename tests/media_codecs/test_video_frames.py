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
