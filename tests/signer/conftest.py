"""Fixtures for the signer's tests: a real SoftHSMv2 token and a PKCS#11 backend on it."""

import pytest

from tests.softhsm import softhsm_missing, softhsm_token_create


@pytest.fixture(scope="session")
def softhsm_token(tmp_path_factory):
    """One SoftHSMv2 token for the whole test run (SoftHSM reads its configuration once per process)."""
    reason = softhsm_missing()
    if reason:
        pytest.skip(reason)
    return softhsm_token_create(tmp_path_factory.mktemp("softhsm"), label="signer-tests", pin="4721-user",
                                so_pin="9183-so")


@pytest.fixture
def pkcs11_backend(softhsm_token):
    """A PKCS#11 backend on the test token, closed (sessions and login let go) after the test."""
    from signer.backends.pkcs11 import Pkcs11Backend

    backend = Pkcs11Backend(softhsm_token.module_path, softhsm_token.label, softhsm_token.pin)
    yield backend
    backend.close()
