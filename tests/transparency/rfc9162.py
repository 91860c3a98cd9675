"""An independent RFC 9162 reference for the log tests: the tree hash by its recursive definition
(section 2.1.1) and proof verification by the algorithms of sections 2.1.3.2 and 2.1.4.2, written
from the RFC text and sharing no code with transparency.merkle."""

import hashlib


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf(entry: bytes) -> bytes:
    return sha256(b"\x00" + entry)


def mth(leaf_hashes: list[bytes]) -> bytes:
    """MTH(D[n]) given the leaf hashes: the split is the largest power of two smaller than n."""
    n = len(leaf_hashes)
    if n == 0:
        return sha256(b"")
    if n == 1:
        return leaf_hashes[0]
    k = 1
    while k * 2 < n:
        k *= 2
    return sha256(b"\x01" + mth(leaf_hashes[:k]) + mth(leaf_hashes[k:]))


def verify_inclusion(leaf_index: int, tree_size: int, leaf_hash: bytes, proof: list[bytes], root: bytes) -> bool:
    if leaf_index >= tree_size:
        return False
    fn, sn, r = leaf_index, tree_size - 1, leaf_hash
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = sha256(b"\x01" + p + r)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            r = sha256(b"\x01" + r + p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(first: int, second: int, first_hash: bytes, second_hash: bytes, proof: list[bytes]) -> bool:
    if first > second:
        return False
    if first == second:
        return proof == [] and first_hash == second_hash
    if first == 0:
        return proof == []
    if first & (first - 1) == 0:
        proof = [first_hash, *proof]
    if not proof:
        return False
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = proof[0]
    for c in proof[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = sha256(b"\x01" + c + fr)
            sr = sha256(b"\x01" + c + sr)
            if not fn & 1:
                while not fn & 1 and fn != 0:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = sha256(b"\x01" + sr + c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0
