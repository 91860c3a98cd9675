"""RFC 9162 Merkle tree hashing and proofs, over subtree hashes read from anywhere.

Leaves hash as SHA-256(0x00 || entry), interior nodes as SHA-256(0x01 || left || right) (RFC 9162
section 2.1.1). Proofs are built from *complete* subtrees: `node(level, index)` returns the hash of the
subtree of 2**level leaves starting at leaf index * 2**level. Where those hashes come from (stored
tiles, a list in a test) is the caller's business, so the proof code never sees a database.

This module must not import Django.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

HASH_BYTES = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()  # MTH({}) (RFC 9162 section 2.1.1)

NodeReader = Callable[[int, int], bytes]


def leaf_hash(entry: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def largest_power_of_two_below(n: int) -> int:
    """k with k < n <= 2k (RFC 9162's split point); n must be at least 2."""
    return 1 << ((n - 1).bit_length() - 1)


def range_hash(start: int, end: int, node: NodeReader) -> bytes:
    """MTH(D[start:end]) for a range the RFC's recursion produces (start aligned to the split)."""
    size = end - start
    if size & (size - 1) == 0 and start % size == 0:
        level = size.bit_length() - 1
        return node(level, start >> level)
    split = largest_power_of_two_below(size)
    return node_hash(range_hash(start, start + split, node), range_hash(start + split, end, node))


def root_hash(size: int, node: NodeReader) -> bytes:
    return EMPTY_ROOT if size == 0 else range_hash(0, size, node)


def inclusion_proof(index: int, size: int, node: NodeReader) -> list[bytes]:
    """PATH(index, D[0:size]) of RFC 9162 section 2.1.3.1, leaf side first. Raises ValueError out of range."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of size {size}")
    proof: list[bytes] = []
    start, end = 0, size
    while end - start > 1:  # walk down from the root, collecting the sibling of each step
        split = largest_power_of_two_below(end - start)
        if index < start + split:
            proof.append(range_hash(start + split, end, node))
            end = start + split
        else:
            proof.append(range_hash(start, start + split, node))
            start += split
    proof.reverse()
    return proof


def consistency_proof(old_size: int, new_size: int, node: NodeReader) -> list[bytes]:
    """PROOF(old_size, D[0:new_size]) of RFC 9162 section 2.1.4.1. Raises ValueError unless 0 <= old <= new."""
    if not 0 <= old_size <= new_size:
        raise ValueError(f"no consistency proof from size {old_size} to {new_size}")
    if old_size in (0, new_size):
        return []
    proof: list[bytes] = []
    start, end, whole_old_tree = 0, new_size, True
    while old_size != end:  # SUBPROOF(m, D[start:end], b), iteratively
        split = largest_power_of_two_below(end - start)
        if old_size <= start + split:
            proof.append(range_hash(start + split, end, node))
            end = start + split
        else:
            proof.append(range_hash(start, start + split, node))
            start += split
            whole_old_tree = False
    if not whole_old_tree:
        proof.append(range_hash(start, end, node))
    proof.reverse()
    return proof


def hashes_root(hashes: list[bytes]) -> bytes:
    """The Merkle root over `hashes` taken as the bottom row (a tile's 2**k hashes, or any count)."""
    row = list(hashes)
    if not row:
        return EMPTY_ROOT
    return range_hash(0, len(row), lambda level, index: _reduce(row[index << level:(index + 1) << level]))


def _reduce(row: list[bytes]) -> bytes:
    while len(row) > 1:
        row = [node_hash(row[i], row[i + 1]) for i in range(0, len(row), 2)]
    return row[0]
