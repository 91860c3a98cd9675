"""The family base of C2PA carriers: where a format's files hold a manifest store, and how it is bound.

A carrier finds, strips and places a store, keeping every other byte of the file. Placing is planned
before the store exists (`layout`): the file around the store (head and tail, views into the stripped file
where they are unchanged, fresh bytes where a size field or an offset table moves) for a store of a given
size. Only sizes depend on the store, never its content, so the hard binding can be computed over the final
file before the store is signed, and the store then drops into the planned gap (docs/c2pa-notes, section 4).

The hard binding is `c2pa.hash.data` by default: SHA-256 of the final file minus the one range the
wrapped store occupies. A format with its own binding (ISO BMFF: `c2pa.hash.bmff.v3`) overrides `binding`
and `binding_matches`.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from media_codecs.errors import MediaTooLarge

DATA_HASH_LABEL = "c2pa.hash.data"
MAX_STORE_BYTES = 32 * 1024 * 1024  # our manifests are ~20 KB; a thumbnail-laden one a few hundred KB
MAX_EXCLUSIONS = 64
_DIGEST_BYTES = 32
_HASHES = ("sha256", "sha384", "sha512")

Piece = bytes | memoryview


@dataclass(frozen=True)
class Found:
    """A store found in a file: its bytes, and the range of the file that carries it (the exclusion)."""

    store: bytes
    start: int
    length: int


@dataclass(frozen=True)
class Layout:
    """The output file planned around a store: `head`, the wrapped store (`wrapped_size` bytes), `tail`."""

    head: tuple[Piece, ...]
    tail: tuple[Piece, ...]
    wrapped_size: int

    @property
    def start(self) -> int:
        """Where the wrapped store begins in the output file."""
        return sum(len(piece) for piece in self.head)

    @property
    def hashed(self) -> tuple[Piece, ...]:
        """The file minus the store: what `c2pa.hash.data` covers."""
        return (*self.head, *self.tail)

    def join(self, wrapped: bytes) -> bytes:
        """The output file with the wrapped store in its gap."""
        if len(wrapped) != self.wrapped_size:
            raise ValueError(f"the wrapped store is {len(wrapped)} bytes, the layout planned {self.wrapped_size}")
        return b"".join((*self.head, wrapped, *self.tail))


class Carrier(ABC):
    """How one format's files carry a C2PA manifest store. Methods raise CodecError subclasses for bad files."""

    mime_type: ClassVar[str]
    binding_label: ClassVar[str] = DATA_HASH_LABEL

    @abstractmethod
    def find(self, data: bytes) -> Found | None:
        """The store in `data` and the range that carries it, or None."""

    @abstractmethod
    def strip(self, data: bytes) -> bytes:
        """`data` without any store (the same bytes when there is none)."""

    @abstractmethod
    def wrapped(self, store: bytes) -> bytes:
        """The store as the format's segments, chunk, frame or box. Raises MediaTooLarge."""

    @abstractmethod
    def wrapped_size(self, store_size: int) -> int:
        """The length of `wrapped` for a store of `store_size` bytes."""

    def insert_offset(self, stripped: bytes) -> int:
        """Where the store goes in the stripped file, for carriers whose other bytes stay as they are."""
        raise NotImplementedError

    def layout(self, stripped: bytes, store_size: int) -> Layout:
        """The output file around a store of `store_size` bytes. By default the store is inserted at
        `insert_offset` and nothing else changes, so the file minus the store is the stripped file."""
        offset, view = self.insert_offset(stripped), memoryview(stripped)
        return Layout((view[:offset],), (view[offset:],), self.wrapped_size(store_size))

    def binding(self, layout: Layout, *, placeholder: bool = False) -> dict:
        """The hard-binding assertion content for the planned file. With `placeholder`, the same size with
        no hashing: for sizing the store before the file is hashed."""
        digest = bytes(_DIGEST_BYTES) if placeholder else parts_digest(layout.hashed)
        return data_hash_content(digest, (layout.start, layout.wrapped_size))

    def binding_matches(self, data: bytes, found: Found, content: dict, default_alg: object) -> bool:
        """Whether the binding assertion `content` holds for `data`, whose store lies at `found`."""
        return data_hash_matches(data, content, found, default_alg)

    def check_store_size(self, size: int) -> None:
        if size > MAX_STORE_BYTES:
            raise MediaTooLarge("the C2PA manifest store is larger than 32 MB")


def parts_digest(parts: Sequence[Piece], alg: str = "sha256") -> bytes:
    digest = hashlib.new(alg)
    for part in parts:
        digest.update(part)
    return digest.digest()


def data_hash_content(data_hash: bytes, exclusion: tuple[int, int]) -> dict:
    """`c2pa.hash.data`, keys in c2pa-rs's order; `pad` is required even when empty."""
    start, length = exclusion
    return {"exclusions": [{"start": start, "length": length}], "name": "jumbf manifest", "alg": "sha256",
            "hash": data_hash, "pad": b""}


def data_hash_matches(data: bytes, binding: dict, found: Found, default_alg: object) -> bool:
    """Whether `c2pa.hash.data` hashes `data` minus its exclusions, which must cover the store."""
    alg = binding.get("alg", default_alg)
    exclusions = binding.get("exclusions") or []
    if alg not in _HASHES or not isinstance(exclusions, list | tuple) or len(exclusions) > MAX_EXCLUSIONS:
        return False
    try:
        ranges = sorted((int(item["start"]), int(item["length"])) for item in exclusions)
    except (KeyError, TypeError, ValueError, OverflowError):
        return False
    digest, position, view = hashlib.new(alg), 0, memoryview(data)
    for start, length in ranges:
        if start < position or length < 0 or start + length > len(data):
            return False
        digest.update(view[position:start])
        position = start + length
    digest.update(view[position:])
    # The store itself must lie inside the exclusions, or it would be hashing itself.
    covered = any(s <= found.start and found.start + found.length <= s + n for s, n in ranges)
    return covered and digest.digest() == binding.get("hash")
