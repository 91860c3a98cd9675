"""Exceptions of the client: one per kind of service error, each carrying the envelope's `error` code.

The service answers every error as `{"error": code, "message": text, "details"?}` (addendum 1); the class
is chosen from the status, the code is kept as is, so callers branch on `error.code` for what the status
does not say (`signature_limit_reached` against `plan_required`, both 402).
"""

from __future__ import annotations

from typing import Any


class ClientError(Exception):
    """Base class of everything this package raises on purpose."""


class ServiceUnavailable(ClientError):
    """The service could not be reached, or kept failing after the retries (connection, timeout)."""


class ForkDetected(ClientError):
    """The log showed a checkpoint that does not extend one it showed before (svc log monitor)."""


class ServiceError(ClientError):
    """The service answered with an error envelope."""

    def __init__(self, status: int, code: str, message: str, body: dict[str, Any] | None = None,
                 retry_after: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.body = body or {}
        self.retry_after = retry_after
        # records_submit: what the batches before the failing one stored (RecordCreated, in input order).
        self.stored: list = []

    @property
    def details(self) -> Any:
        return self.body.get("details")


class ValidationError(ServiceError):
    """400: a field, a format or a signature the service refuses (`validation_error`, `signature_invalid`...)."""


class AuthenticationError(ServiceError):
    """401: no API key, or a revoked or mistyped one."""


class QuotaError(ServiceError):
    """402: `signature_limit_reached` (with `upgrade_url`, `limit`, `current`) or `plan_required`."""


class PermissionDenied(ServiceError):
    """403: the generator belongs to another organization, or the email is not verified."""


class NotFound(ServiceError):
    """404: no such record or generator (or a revoked generator, when signing)."""


class PayloadTooLarge(ServiceError):
    """413: over the 50 MB upload, the 10 MB batch body or a codec's limits."""


class RateLimited(ServiceError):
    """429 after the retries: `retry_after` is the service's Retry-After in seconds."""


class ServerError(ServiceError):
    """5xx: the service failed (after the retries, for idempotent calls)."""


_BY_STATUS: dict[int, type[ServiceError]] = {
    400: ValidationError, 401: AuthenticationError, 402: QuotaError, 403: PermissionDenied, 404: NotFound,
    413: PayloadTooLarge, 429: RateLimited,
}


def error_for(status: int, body: object, retry_after: float | None = None) -> ServiceError:
    """The exception for an error response: its status's class, the envelope's code and message."""
    envelope = body if isinstance(body, dict) else {}
    code = str(envelope.get("error") or f"http_{status}")
    message = str(envelope.get("message") or "the service gave no message")
    cls = ServerError if status >= 500 else _BY_STATUS.get(status, ServiceError)
    return cls(status, code, message, envelope, retry_after)
