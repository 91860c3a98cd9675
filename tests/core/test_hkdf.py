"""HKDF-SHA256 key derivation (core/hkdf.py): pure, no Django."""

import pytest

from core.hkdf import derive_key


def test_derive_key_is_deterministic_32_bytes_and_separated_by_purpose() -> None:
    key = derive_key("configured-secret", "private-key-encryption")
    assert len(key) == 32
    assert key == derive_key("configured-secret", "private-key-encryption")
    assert key != derive_key("configured-secret", "record-token")
    assert key != derive_key("other-secret", "private-key-encryption")


def test_derived_keys_never_change() -> None:
    # Sealed private keys and issued tokens depend on these bytes: salt, info and length are frozen.
    expected = "401777d6be27734c780b42690846c323d19ac533a8f7554935f213f273131c36"
    assert derive_key("configured-secret", "svc-token").hex() == expected


@pytest.mark.parametrize(("secret", "purpose"), [("", "p"), ("s", "")])
def test_derive_key_refuses_empty_inputs(secret: str, purpose: str) -> None:
    with pytest.raises(ValueError):
        derive_key(secret, purpose)
