"""The VP8 key-frame quantiser and the quality estimated from it, on files libwebp writes."""

import pytest
from conftest import encode, photo

from media_codecs.image import vp8, webp


def _vp8_payload(data: bytes) -> bytes:
    return next(chunk.payload for chunk in webp.parse_chunks(data)[0] if chunk.fourcc == b"VP8 ")


@pytest.mark.parametrize("name", ["astronaut", "coffee", "camera"])
@pytest.mark.parametrize("quality", [30, 50, 75, 85, 90, 95, 100])
def test_the_estimate_lands_within_eight_points_of_the_written_quality(name, quality):
    estimate = vp8.estimated_quality(_vp8_payload(encode(photo(name), "WEBP", quality=quality)))
    assert abs(estimate - quality) <= 8


def test_finer_files_have_smaller_quantisers():
    coarse, fine = (vp8.segment_quantisers(_vp8_payload(encode(photo("coffee"), "WEBP", quality=q))) for q in (40, 90))
    assert len(coarse) == len(fine) == 4 and min(coarse) > max(fine)


@pytest.mark.parametrize("payload", [b"", b"\x00" * 9, b"\x01" + b"\x00" * 40, b"\x00\x00\x00garbage!" * 4])
def test_a_payload_that_is_not_a_key_frame_is_a_value_error(payload):
    with pytest.raises(ValueError):
        vp8.segment_quantisers(payload)


def test_a_truncated_header_still_gives_a_quality_in_range():
    payload = _vp8_payload(encode(photo("coffee"), "WEBP", quality=80))[:14]
    assert 0 <= vp8.estimated_quality(payload) <= 100
