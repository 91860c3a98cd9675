"""RFC 9162 proof verification (section 2.1.3.2 inclusion, 2.1.4.2 consistency), written for the client.

Independent of the log's own code on purpose: a verifier that shares the prover's code shares its bugs.
"""

from __future__ import annotations

import hashlib


class ProofError(ValueError):
    """A proof that does not lead to the root it should (or is malformed)."""


def leaf_hash(entry: bytes) -> bytes:
    """SHA-256(0x00 || entry)."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """SHA-256(0x01 || left || right)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(leaf: bytes, index: int, tree_size: int, proof: list[bytes], root: bytes) -> None:
    """Check that `leaf` (a leaf hash) is entry `index` of the tree of `tree_size` with `root`.

    RFC 9162 2.1.3.2, step by step. Raises ProofError when it is not.
    """
    if not 0 <= index < tree_size:
        raise ProofError(f"index {index} is outside a tree of size {tree_size}")
    fn, sn, r = index, tree_size - 1, leaf
    for p in proof:
        if sn == 0:
            raise ProofError("the inclusion proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the inclusion proof is shorter than the tree is deep")
    if r != root:
        raise ProofError("the inclusion proof does not lead to the checkpoint's root hash")


def verify_consistency(first_size: int, second_size: int, proof: list[bytes], first_root: bytes,
                       second_root: bytes) -> None:
    """Check that the tree of `second_size` with `second_root` extends the one of `first_size`/`first_root`.

    RFC 9162 2.1.4.2. Raises ProofError when it does not (a fork, or a bad proof).
    """
    if not 0 <= first_size <= second_size:
        raise ProofError(f"a tree of size {second_size} cannot extend one of size {first_size}")
    if first_size == second_size:
        if proof:
            raise ProofError("a proof between equal sizes is empty")
        if first_root != second_root:
            raise ProofError("two different root hashes for the same tree size")
        return
    if first_size == 0:
        if proof:
            raise ProofError("a proof from the empty tree is empty")
        return
    if not proof:
        raise ProofError("the consistency proof is empty")
    if first_size & (first_size - 1) == 0:  # a power of two: the first tree is a node of the proof
        proof = [first_root, *proof]
    fn, sn = first_size - 1, second_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            raise ProofError("the consistency proof is longer than the tree is deep")
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError("the consistency proof is shorter than the tree is deep")
    if fr != first_root or sr != second_root:
        raise ProofError("the consistency proof does not join the two root hashes")
