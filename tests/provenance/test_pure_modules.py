"""The crypto/provenance helpers must stay importable without Django."""

from __future__ import annotations

from tests.purity import assert_imports_without_django

PURE_MODULES = [
    "record_format.crypto",
    "record_format.canonical_json",
    "record_format.hashing",
    "record_format.payload",
    "provenance.tokens",
    "core.sealing",
    "core.hkdf",
    "core.secret_ring",
    "verification.summary",
    "provenance.disclosures",
    "provenance.compliance_documents",
]


def test_pure_modules_import_without_loading_django() -> None:
    assert_imports_without_django(PURE_MODULES)
