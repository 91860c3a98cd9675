"""Content-hash format tests."""

from __future__ import annotations

import hashlib

from record_format.hashing import CONTENT_HASH_RE, content_hash_of, is_content_hash


def test_content_hash_is_prefixed_sha3_256_hex() -> None:
    assert content_hash_of(b"abc") == "sha3-256:" + hashlib.sha3_256(b"abc").hexdigest()
    # FIPS 202 known answer for SHA3-256("abc").
    assert content_hash_of(b"abc") == (
        "sha3-256:3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532"
    )


def test_content_hash_matches_its_own_pattern() -> None:
    assert CONTENT_HASH_RE.match(content_hash_of(b"")) is not None
    assert is_content_hash(content_hash_of(b"")) is True


def test_malformed_content_hashes_are_rejected() -> None:
    good = content_hash_of(b"x")
    for bad in [good.upper(), good[:-1], good + "0", "sha256:" + good[9:], good + "\n", "", None, 5]:
        assert is_content_hash(bad) is False
