"""Large files for the storage tests: written on disk, and read through a wrapper that notes every read's size."""

import hashlib
import os
from pathlib import Path


class RecordingFile:
    """A file on disk that notes the size of every read asked of it."""

    closed = False

    def __init__(self, path: Path):
        self.file = path.open("rb")
        self.reads: list[int] = []

    def read(self, size: int = -1) -> bytes:
        self.reads.append(size)
        return self.file.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def tell(self) -> int:
        return self.file.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True


def large_file(path: Path, size: int) -> str:
    """Random bytes of `size` at `path`, written a MiB at a time; returns their SHA-256."""
    digest = hashlib.sha256()
    with path.open("wb") as out:
        for start in range(0, size, 1024 * 1024):
            block = os.urandom(min(1024 * 1024, size - start))
            digest.update(block)
            out.write(block)
    return digest.hexdigest()
