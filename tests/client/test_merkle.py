"""The client's RFC 9162 verifier against the RFC's recursive definitions (tests/client/fake_log.py)."""

import pytest

from svc_client.merkle import ProofError, leaf_hash, verify_consistency, verify_inclusion
from tests.client.fake_log import leaf, mth, path, proof

LEAVES = [leaf(f"entry {i}".encode()) for i in range(33)]


def test_every_inclusion_proof_of_trees_up_to_33_leaves_verifies():
    for size in range(1, len(LEAVES) + 1):
        root = mth(LEAVES[:size])
        for index in range(size):
            verify_inclusion(LEAVES[index], index, size, path(index, LEAVES[:size]), root)


def test_every_consistency_proof_of_trees_up_to_33_leaves_verifies():
    for second in range(1, len(LEAVES) + 1):
        for first in range(0, second + 1):
            verify_consistency(first, second, proof(first, LEAVES[:second]) if first else [],
                               mth(LEAVES[:first]), mth(LEAVES[:second]))


def test_a_wrong_leaf_index_proof_or_root_fails_inclusion():
    size, index = 13, 6
    good = path(index, LEAVES[:size])
    root = mth(LEAVES[:size])
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index + 1], index, size, good, root)
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index], index + 1, size, good, root)
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index], index, size, [*good[:-1], LEAVES[0]], root)
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index], index, size, good[:-1], root)
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index], index, size, [*good, LEAVES[0]], root)
    with pytest.raises(ProofError):
        verify_inclusion(LEAVES[index], size, size, good, root)


def test_a_forked_history_fails_consistency():
    forked = [*LEAVES[:5], leaf(b"rewritten"), *LEAVES[6:20]]
    with pytest.raises(ProofError, match="does not join"):
        verify_consistency(8, 20, proof(8, forked), mth(LEAVES[:8]), mth(forked))
    with pytest.raises(ProofError):
        verify_consistency(8, 8, [], mth(LEAVES[:8]), mth(forked[:8]))
    with pytest.raises(ProofError):
        verify_consistency(9, 8, [], mth(LEAVES[:9]), mth(LEAVES[:8]))


def test_the_leaf_hash_is_rfc_9162s():
    assert leaf_hash(b"x") == leaf(b"x")
