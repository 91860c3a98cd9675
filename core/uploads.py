"""Multipart uploads with a hard size limit, enforced before and while the body is read."""

from django.core.files.uploadhandler import FileUploadHandler, MemoryFileUploadHandler, TemporaryFileUploadHandler

from core.errors import PayloadTooLarge, ValidationFailed

# Multipart framing and the small form fields around the file.
MULTIPART_OVERHEAD = 64 * 1024
# Every upload route takes one file ("content"); a second one is refused, not silently dropped.
MAX_FILES = 1


class SizeLimitUploadHandler(FileUploadHandler):
    """First in the handler chain: refuses a body whose declared length, or streamed bytes, pass the limit,
    and a second file."""

    def __init__(self, request=None, *, max_bytes: int):
        super().__init__(request)
        self.max_bytes = max_bytes
        self.received = 0
        self.files = 0

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.max_bytes + MULTIPART_OVERHEAD:
            raise PayloadTooLarge(f"Uploads are limited to {self.max_bytes // (1024 * 1024)} MB.")

    def new_file(self, *args, **kwargs):
        self.files += 1
        if self.files > MAX_FILES:
            raise ValidationFailed(f"Send at most {MAX_FILES} file per request.")
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > self.max_bytes:
            raise PayloadTooLarge(f"Uploads are limited to {self.max_bytes // (1024 * 1024)} MB.")
        return raw_data

    def file_complete(self, file_size):
        return None


def limit_uploads(request, max_bytes: int) -> None:
    """Install the size-limited handler chain on a Django request before its body is parsed."""
    request.upload_handlers = [SizeLimitUploadHandler(request, max_bytes=max_bytes),
                               MemoryFileUploadHandler(request), TemporaryFileUploadHandler(request)]


def uploaded_bytes(request, field: str) -> bytes:
    """The bytes of one uploaded file field. Raises ValidationFailed when it is missing or empty."""
    upload = request.FILES.get(field)
    if upload is None:
        raise ValidationFailed(details={field: ["Upload a file in this multipart field."]})
    data = upload.read()
    if not data:
        raise ValidationFailed(details={field: ["The file is empty."]})
    return data
