"""POST /v1/sign and /v1/verify on MP4, QuickTime, Matroska and WebM: the token in the container, the
watermark in the frames (confidence high), tampering seen through the content hash; signed with
`watermark=false`, the token alone (confidence medium at best) and copies without the token (a remux, a
re-encode at half the bitrate, a downscale, the first seconds cut) found through the stored set of frame
pHashes; a marked copy without the token found through its mark."""

import functools

import pytest

from media_codecs import detect, get_codec
from provenance.models import Record
from tests import factories, video
from tests.verification import uploads

pytestmark = pytest.mark.django_db
MIME_TYPES = {"mp4": "video/mp4", "mov": "video/quicktime", "mkv": "video/x-matroska", "webm": "video/webm"}


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image", "video"])


_sign = functools.partial(uploads.sign, model="video-gen")
_verify = uploads.verify


@pytest.mark.parametrize("fmt", MIME_TYPES)
def test_signed_video_comes_back_in_its_container_and_verifies_from_its_token(api_client, key_client, org,
                                                                              generator, fmt):
    original = video.sample(fmt, seconds=1.0)
    response = _sign(key_client(org), generator, original, format="video", watermark="false")
    assert response.status_code == 201, response.content[:300]
    assert response["Content-Type"] == MIME_TYPES[fmt] and response["X-Service-Format"] == "video"
    codec = detect(response.content)
    assert codec.format == fmt and response.content.startswith(original)
    assert codec.extract_token(response.content) == response["X-Service-Token"]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert (record.format, record.watermark_id, record.fingerprint_kind) == ("video", "none", "video-phash")
    assert record.phash == codec.fingerprint(original)
    result = _verify(api_client, response.content)
    assert result == {"authentic": True, "tampered": False, "confidence": "medium", "token_source": "metadata",
                      "signals": {"watermark_found": False, "record_found": True, "signature_valid": True},
                      "provenance": {"org": org.name, "model": "video-gen",
                                     "signed_at": result["provenance"]["signed_at"]},
                      "summary": uploads.unchanged_unmarked_summary(result),
                      "record_id": response["X-Service-Record-Id"], "log": {"status": "pending"},
                      "signature_timestamp": None, "c2pa": None, "disclosure": uploads.default_disclosure(result)}


def test_a_changed_byte_of_mdat_with_the_token_kept_is_tampered(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, video.sample("mp4", seconds=1.0)).content
    middle = signed.index(b"mdat") + 2_000
    altered = signed[:middle] + bytes([signed[middle] ^ 0x01]) + signed[middle + 1 :]
    assert get_codec("mp4").extract_token(altered) == get_codec("mp4").extract_token(signed)
    result = _verify(api_client, altered)
    assert (result["authentic"], result["tampered"], result["reason"]) == (False, True, "content_tampered")
    assert (result["token_source"], result["confidence"]) == ("metadata", "low")


def test_a_changed_byte_of_a_cluster_with_the_trailer_kept_is_tampered(api_client, key_client, org, generator):
    signed = _sign(key_client(org), generator, video.sample("webm", seconds=1.0)).content
    middle = len(signed) // 2
    altered = signed[:middle] + bytes([signed[middle] ^ 0x01]) + signed[middle + 1 :]
    result = _verify(api_client, altered)
    assert (result["authentic"], result["tampered"], result["token_source"]) == (False, True, "metadata")


def test_video_over_the_header_limits_is_refused_before_decoding(key_client, org, generator):
    from tests import hostile_media

    response = _sign(key_client(org), generator, hostile_media.mp4_declaring_seconds(video.sample("mp4"), 601))
    assert (response.status_code, response.json()["error"]) == (413, "payload_too_large")


def test_a_malformed_video_is_a_validation_error(key_client, org, generator):
    sample = video.sample("mp4", seconds=1.0)
    response = _sign(key_client(org), generator, sample + b"\xff\xff\xff\xffskip", format="video")
    assert (response.status_code, response.json()["error"]) == (400, "validation_error")


def test_an_audio_only_mp4_is_not_signed_as_video(key_client, org, generator):
    response = _sign(key_client(org), generator, video.make_audio_only("mp4"), format="video")
    assert (response.status_code, response.json()["error"]) == (400, "format_not_supported")


def test_an_image_only_generator_does_not_sign_video(key_client, org):
    image_only = factories.make_generator(org=org, name="images", formats=["image"])
    response = _sign(key_client(org), image_only, video.sample("mp4", seconds=1.0))
    assert (response.status_code, response.json()["error"]) == (400, "format_not_supported")



@pytest.fixture(scope="module")
def clip():
    """Six seconds of moving content with a keyframe every second: what a generator hands in."""
    return video.make_video("mp4", size=(480, 272), seconds=6.0, keyint=25, bitrate=800_000)


@pytest.mark.parametrize("copy", ["remux to mkv", "half the bitrate", "scaled down", "first 2 s cut"])
def test_a_copy_without_the_token_is_found_through_the_frame_fingerprints(api_client, key_client, org, generator,
                                                                          clip, copy):
    signed = _sign(key_client(org), generator, clip, watermark="false")
    assert signed.status_code == 201
    record = Record.objects.get(pk=signed["X-Service-Record-Id"])
    assert record.more_fingerprints.count() >= 4  # the first frame's pHash on the record, later frames beside it
    made = {"remux to mkv": lambda: video.remux(signed.content, "mp4", "mkv"),
            "half the bitrate": lambda: video.reencode(signed.content, "mp4", bitrate=400_000),
            "scaled down": lambda: video.reencode(signed.content, "mp4", height=180),
            "first 2 s cut": lambda: video.reencode(signed.content, "mp4", start=2.0)}[copy]()
    assert get_codec(detect(made).format).extract_token(made) is None
    result = _verify(api_client, made)
    assert (result["token_source"], result["record_id"]) == ("phash", str(record.pk))
    assert result["signals"]["record_found"] and result["confidence"] in ("medium", "low")
    assert result["tampered"] is True  # other bytes than were signed: found, never called authentic


def test_an_unrelated_video_finds_nothing(api_client, key_client, org, generator, clip):
    assert _sign(key_client(org), generator, clip).status_code == 201
    other = video.make_video("mp4", size=(480, 272), seconds=2.0, picture=_checkerboard)
    result = _verify(api_client, other)
    assert (result["token_source"], result["reason"]) == ("none", "no_provenance_found")


def test_a_black_video_is_never_found_through_another_black_videos_frames(api_client, key_client, org, generator):
    def black(index, width, height):
        return video.moving_gradient(index, width, height) * 0

    signed = _sign(key_client(org), generator, video.make_video("mp4", seconds=1.0, picture=black), format="video")
    assert signed.status_code == 201 and Record.objects.get(pk=signed["X-Service-Record-Id"]).phash is None
    other = video.make_video("webm", size=(256, 144), seconds=1.0, picture=black)
    result = _verify(api_client, other)
    assert (result["reason"], result["token_source"], result["record_id"]) == ("no_provenance_found", "none", None)


def _checkerboard(index: int, width: int, height: int):
    import numpy as np

    yy, xx = np.mgrid[0:height, 0:width]
    cells = ((xx + index) // 40 + yy // 40) % 2
    return np.stack([cells * 230, 255 - cells * 200, np.full_like(cells, 90)], axis=-1).astype(np.uint8)


def test_a_signed_video_record_verifies_with_dilithium_py_from_public_endpoints(api_client, key_client, org,
                                                                              generator, clip):
    import base64
    import json

    from dilithium_py.ml_dsa import ML_DSA_65

    record_id = _sign(key_client(org), generator, clip)["X-Service-Record-Id"]
    record = api_client.get(f"/v1/records/{record_id}").json()
    assert record["format"] == "video" and len(record["watermark_id"]) == len(record["phash"]) == 16
    keys = api_client.get(f"/v1/keys/{record['generator_id']}").json()["public_keys"]
    public_key = base64.b64decode(next(k["key"] for k in keys if k["kid"] == record["kid"]))
    message = json.dumps(record["signed_payload"], sort_keys=True, separators=(",", ":")).encode()
    assert ML_DSA_65.verify(public_key, message, base64.b64decode(record["signature"]))


def _whole_second_phashes(data: bytes) -> list:
    import io

    import av
    import imagehash

    with av.open(io.BytesIO(data)) as container:
        return [imagehash.phash(frame.to_image()) for frame in container.decode(video=0)
                if abs(frame.time - round(frame.time)) < 1e-3]


def test_a_fade_of_like_gradients_is_not_named_after_another_fade(api_client, key_client, org, generator):
    """Two generated fades (each fading in over its own gradient) whose frames' pHashes come within the lookup's
    7 bits: the first frame of the second named the first's record before plain frames stopped identifying."""
    from tests import video_scenes

    signed_fade = video_scenes.scene("fade", 1006).clip(4.2)
    other_fade = video_scenes.scene("fade", 41).clip(1.0)
    [first] = _whole_second_phashes(other_fade)
    assert min(first - stored for stored in _whole_second_phashes(signed_fade)) <= 7
    assert _sign(key_client(org), generator, signed_fade).status_code == 201
    result = _verify(api_client, other_fade)
    assert (result["token_source"], result["record_id"], result["reason"]) == ("none", None, "no_provenance_found")


@pytest.mark.parametrize(("fmt", "clockwise"), [("mp4", 90), ("mp4", 180), ("mp4", 270), ("mov", 90)])
def test_a_copy_turned_only_in_its_display_matrix_finds_the_upright_original(api_client, key_client, org, generator,
                                                                             fmt, clockwise):
    upright = video.make_video(fmt, size=(320, 192), seconds=5.0, keyint=25)
    signed = _sign(key_client(org), generator, upright)
    assert signed.status_code == 201
    turned = video.with_display_matrix(upright, clockwise)  # the unsigned bytes: no token to find it by
    result = _verify(api_client, turned)
    assert (result["token_source"], result["record_id"]) == ("phash", signed["X-Service-Record-Id"])


def test_an_original_turned_in_its_display_matrix_is_found_from_a_copy_that_lost_the_matrix(api_client, key_client,
                                                                                           org, generator):
    upright = video.make_video("mp4", size=(320, 192), seconds=5.0, keyint=25)
    signed = _sign(key_client(org), generator, video.with_display_matrix(upright, 90))
    assert signed.status_code == 201
    result = _verify(api_client, upright)
    assert (result["token_source"], result["record_id"]) == ("phash", signed["X-Service-Record-Id"])


@pytest.mark.parametrize("fmt", ["mp4", "webm"])
def test_a_marked_video_verifies_with_its_mark_and_keeps_its_streams(api_client, key_client, org, generator, fmt):
    original = video.make_video(fmt, size=(320, 240), seconds=1.0, audio=True, rotate=90)
    response = _sign(key_client(org), generator, original, format="video")
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    codec = detect(response.content)
    assert codec.extract_watermark(response.content) == int(record.watermark_id, 16)
    if video.has_ffprobe():
        before, after = video.ffprobe(original, fmt), video.ffprobe(response.content, fmt)
        assert [s["codec_type"] for s in after["streams"]] == [s["codec_type"] for s in before["streams"]]
        assert video.rotation(after) == video.rotation(before) == 90
    result = _verify(api_client, response.content)
    assert (result["confidence"], result["token_source"], result["signals"]["watermark_found"]) == (
        "high", "metadata", True)


def test_a_marked_copy_without_the_token_is_found_through_its_mark(api_client, key_client, org, generator, clip):
    signed = _sign(key_client(org), generator, clip)
    record = Record.objects.get(pk=signed["X-Service-Record-Id"])
    copy = video.reencode(signed.content, "mp4", bitrate=400_000)
    assert get_codec("mp4").extract_token(copy) is None
    result = _verify(api_client, copy)
    assert (result["token_source"], result["record_id"]) == ("watermark", str(record.pk))
    assert result["signals"]["watermark_found"] and result["tampered"] is True


def test_watermark_false_signs_a_video_with_its_token_alone(key_client, org, generator):
    original = video.sample("mp4", seconds=1.0)
    response = _sign(key_client(org), generator, original, watermark="false")
    assert response.status_code == 201 and response.content.startswith(original)
    assert Record.objects.get(pk=response["X-Service-Record-Id"]).watermark_id == "none"
