"""core/uploads.py: the size-limited handler refuses while the body streams, per file and in all."""

import pytest

from core.errors import PayloadTooLarge, ValidationFailed
from core.uploads import MULTIPART_OVERHEAD, SizeLimitUploadHandler


def _handler(**limits) -> SizeLimitUploadHandler:
    return SizeLimitUploadHandler(None, **limits)


def _file(handler: SizeLimitUploadHandler, size: int) -> None:
    handler.new_file("content", "f.bin", "application/octet-stream", size)
    for _ in range(size // 10):
        handler.receive_data_chunk(b"x" * 10, 0)


def test_one_file_over_its_limit_is_refused_while_it_streams():
    with pytest.raises(PayloadTooLarge):
        _file(_handler(max_bytes=50), 60)


def test_several_files_each_within_the_limit_pass_until_their_total_is_over():
    handler = _handler(max_bytes=50, max_files=5, max_total_bytes=100)
    _file(handler, 50)
    _file(handler, 50)
    with pytest.raises(PayloadTooLarge):
        _file(handler, 10)


def test_one_file_more_than_allowed_is_a_validation_error_before_its_bytes():
    handler = _handler(max_bytes=50, max_files=2, max_total_bytes=100)
    _file(handler, 10)
    _file(handler, 10)
    with pytest.raises(ValidationFailed):
        handler.new_file("content", "f.bin", "application/octet-stream", 10)


def test_a_declared_length_over_the_total_and_its_framing_is_refused_before_reading():
    handler = _handler(max_bytes=50, max_files=2, max_total_bytes=100)
    handler.handle_raw_input(None, {}, 100 + 2 * MULTIPART_OVERHEAD, b"boundary")
    with pytest.raises(PayloadTooLarge):
        handler.handle_raw_input(None, {}, 101 + 2 * MULTIPART_OVERHEAD, b"boundary")
