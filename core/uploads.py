"""Multipart uploads with a hard size limit, enforced before and while the body is read."""

from django.core.files.uploadhandler import FileUploadHandler, MemoryFileUploadHandler, TemporaryFileUploadHandler

from core.errors import PayloadTooLarge, ValidationFailed

# Multipart framing and the small form fields around the file.
MULTIPART_OVERHEAD = 64 * 1024
# Every upload route takes one file ("content"); a second one is refused, not silently dropped.
MAX_FILES = 1


class SizeLimitUploadHandler(FileUploadHandler):
    """First in the handler chain: refuses a body whose declared length, or streamed bytes, pass the limit,
    a file over `max_bytes`, and more than `max_files` files."""

    def __init__(self, request=None, *, max_bytes: int, max_files: int = MAX_FILES, max_total_bytes: int | None = None):
        super().__init__(request)
        self.max_bytes, self.max_files = max_bytes, max_files
        self.max_total_bytes = max_total_bytes or max_bytes
        self.received = 0  # all files' bytes
        self.received_in_file = 0
        self.files = 0

    def handle_raw_input(self, input_data, META, content_length, boundary, encoding=None):
        if content_length and content_length > self.max_total_bytes + MULTIPART_OVERHEAD * self.max_files:
            raise PayloadTooLarge(self._too_large())

    def new_file(self, *args, **kwargs):
        self.files += 1
        self.received_in_file = 0
        if self.files > self.max_files:
            raise ValidationFailed(f"Send at most {self.max_files} file{'s' if self.max_files > 1 else ''} "
                                   "per request.")
        super().new_file(*args, **kwargs)

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        self.received_in_file += len(raw_data)
        if self.received_in_file > self.max_bytes or self.received > self.max_total_bytes:
            raise PayloadTooLarge(self._too_large())
        return raw_data

    def file_complete(self, file_size):
        return None

    def _too_large(self) -> str:
        if self.max_files == 1:
            return f"Uploads are limited to {self.max_bytes // (1024 * 1024)} MB."
        return (f"Each file is limited to {self.max_bytes // (1024 * 1024)} MB and the request to "
                f"{self.max_total_bytes // (1024 * 1024)} MB.")


def limit_uploads(request, max_bytes: int) -> None:
    """Install the size-limited handler chain on a Django request before its body is parsed."""
    request.upload_handlers = [SizeLimitUploadHandler(request, max_bytes=max_bytes),
                               MemoryFileUploadHandler(request), TemporaryFileUploadHandler(request)]


def limit_streamed_uploads(request, max_bytes: int, *, max_files: int = MAX_FILES,
                           max_total_bytes: int | None = None) -> None:
    """Install a size-limited chain that streams every file to a temporary file on disk, never into memory
    (uploads kept for a job: jobs/storage/ moves the file, or sends it to S3 in parts)."""
    request.upload_handlers = [SizeLimitUploadHandler(request, max_bytes=max_bytes, max_files=max_files,
                                                      max_total_bytes=max_total_bytes),
                               TemporaryFileUploadHandler(request)]


def uploaded_bytes(request, field: str) -> bytes:
    """The bytes of one uploaded file field. Raises ValidationFailed when it is missing or empty."""
    upload = request.FILES.get(field)
    if upload is None:
        raise ValidationFailed(details={field: ["Upload a file in this multipart field."]})
    data = upload.read()
    if not data:
        raise ValidationFailed(details={field: ["The file is empty."]})
    return data
