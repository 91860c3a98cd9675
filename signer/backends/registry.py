"""The key backends this signer process is configured with, made once per process on first use.

`sealed` is always there (keys sealed in the database under KEY_ENCRYPTION_KEY, unsealed here only); the
others exist when their settings are set: SIGNER_PKCS11_MODULE (a PKCS#11 token), SIGNER_AWS_KMS_REGION
(AWS KMS), SIGNER_GCP_KMS_KEY_RING (Google Cloud KMS). SIGNER_KEY_BACKEND names the one new keys are made in.
"""

import threading
from collections.abc import Callable

from django.conf import settings

from signer.backends.base import BackendError, BackendNotConfigured, KeyBackend

SEALED = "sealed"

_made: dict[str, KeyBackend] = {}
_lock = threading.Lock()


def default_backend_name() -> str:
    """Where new generator keys are made unless the request names a backend (SIGNER_KEY_BACKEND)."""
    return settings.SIGNER_KEY_BACKEND or SEALED


def configured_backend_names() -> list[str]:
    """`sealed` and each backend whose settings are set."""
    return [SEALED, *(name for name, (configured, _) in _FACTORIES.items() if configured())]


def backend_named(name: str) -> KeyBackend:
    """The backend `name`, made on first use. Raises BackendNotConfigured (a KeyError and a BackendError) for
    one that is not configured here, and for `sealed`, which is no KeyBackend (sealed keys are the
    database's, read by generators.services); BackendError when its settings do not make one."""
    backend = _made.get(name)
    if backend is not None:
        return backend
    configured, make = _FACTORIES.get(name, (lambda: False, None))
    if not configured():
        raise BackendNotConfigured(name)
    with _lock:
        if name not in _made:
            try:
                _made[name] = make()
            except ValueError as error:  # a malformed setting (a key ring's name, a region)
                raise BackendError(f"the {name} backend's settings do not hold: {error}") from None
        return _made[name]


def close_backends() -> None:
    with _lock:
        for backend in _made.values():
            backend.close()
        _made.clear()


def _pkcs11() -> KeyBackend:
    from signer.backends.pkcs11 import Pkcs11Backend

    return Pkcs11Backend(settings.SIGNER_PKCS11_MODULE, settings.SIGNER_PKCS11_TOKEN, settings.SIGNER_PKCS11_PIN)


def _aws_kms() -> KeyBackend:
    from signer.backends.aws_kms import AwsCredentials, AwsKmsBackend

    credentials = AwsCredentials(settings.SIGNER_AWS_ACCESS_KEY_ID, settings.SIGNER_AWS_SECRET_ACCESS_KEY,
                                 settings.SIGNER_AWS_SESSION_TOKEN or None)
    return AwsKmsBackend(region=settings.SIGNER_AWS_KMS_REGION, credentials=credentials,
                         endpoint_url=settings.SIGNER_AWS_KMS_ENDPOINT or None)


def _gcp_kms() -> KeyBackend:
    from signer.backends.gcp_kms import DEFAULT_BASE_URL, GcpKmsBackend, MetadataServerToken, TokenFile

    token_file = settings.SIGNER_GCP_KMS_TOKEN_FILE
    tokens = TokenFile(token_file) if token_file else MetadataServerToken()
    return GcpKmsBackend(key_ring=settings.SIGNER_GCP_KMS_KEY_RING, token_provider=tokens,
                         base_url=settings.SIGNER_GCP_KMS_ENDPOINT or DEFAULT_BASE_URL)


_FACTORIES: dict[str, tuple[Callable[[], bool], Callable[[], KeyBackend]]] = {
    "pkcs11": (lambda: bool(settings.SIGNER_PKCS11_MODULE), _pkcs11),
    "aws-kms": (lambda: bool(settings.SIGNER_AWS_KMS_REGION), _aws_kms),
    "gcp-kms": (lambda: bool(settings.SIGNER_GCP_KMS_KEY_RING), _gcp_kms),
}
