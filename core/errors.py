"""The one error envelope: every error the API returns is `{"error", "message", "details"?}`.

Services raise `ApiError` subclasses (one per code of addendum section 1); `api_exception_handler`
translates those and DRF's/Django's own exceptions. Tests assert on `error`, never on `message`.
"""

import json
import logging
import sys
from typing import Any

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.http import Http404, JsonResponse
from django.views import csrf, defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

from core.logs import current_request_id

logger = logging.getLogger(__name__)


class ApiError(Exception):
    status_code = 400
    code = "error"
    message = "The request failed."

    def __init__(self, message: str | None = None, *, details: Any = None, headers: dict | None = None):
        super().__init__(message or self.message)
        self.message = message or self.message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.details is not None:
            body["details"] = self.details
        return body


class ValidationFailed(ApiError):
    status_code, code, message = 400, "validation_error", "The request is invalid."


class InvalidCredentials(ApiError):
    status_code, code, message = 401, "invalid_credentials", "Email or password is incorrect."


class AuthenticationRequired(ApiError):
    status_code, code, message = 401, "authentication_required", "A valid credential is required."


class Forbidden(ApiError):
    status_code, code, message = 403, "forbidden", "You are not allowed to do this."


class EmailNotVerified(ApiError):
    status_code, code, message = 403, "email_not_verified", "The organization owner must verify their email."


class NotFound(ApiError):
    status_code, code, message = 404, "not_found", "Not found."


class IdempotencyConflict(ApiError):
    status_code, code = 409, "idempotency_conflict"
    message = "This Idempotency-Key was used for a different request; use a new key for a new request."


class EmailTaken(ApiError):
    status_code, code, message = 409, "email_taken", "An account with this email already exists."


class AlreadyMember(ApiError):
    status_code, code, message = 409, "already_member", "This email is already a member."


class FormatNotSupported(ApiError):
    status_code, code, message = 400, "format_not_supported", "This format is not supported here."


class GeneratorClientManaged(ApiError):
    status_code, code = 400, "generator_client_managed"
    message = "This generator uses a client-managed keypair; submit records with POST /v1/records."


class GeneratorServerManaged(ApiError):
    status_code, code = 400, "generator_server_managed"
    message = "This generator uses a server-managed keypair; sign content with POST /v1/sign."


class SignatureInvalid(ApiError):
    status_code, code, message = 400, "signature_invalid", "The ML-DSA signature does not verify."


class SignatureLimitReached(ApiError):
    status_code, code = 402, "signature_limit_reached"
    message = "The monthly signature limit of your plan is reached."

    def __init__(self, *, upgrade_url: str, limit: int, current: int, message: str | None = None):
        super().__init__(message)
        self.upgrade_url, self.limit, self.current = upgrade_url, limit, current

    def body(self) -> dict:
        return {**super().body(), "upgrade_url": self.upgrade_url, "limit": self.limit, "current": self.current}


class PlanRequired(ApiError):
    status_code, code, message = 402, "plan_required", "Your plan does not include this feature."


class SeatLimitReached(ApiError):
    status_code, code, message = 402, "seat_limit_reached", "Your plan has no free seat left."


class PayloadTooLarge(ApiError):
    status_code, code, message = 413, "payload_too_large", "The request body is too large."


class UriTooLong(ApiError):
    status_code, code = 414, "uri_too_long"
    message = "The request line is too long: at most 8190 bytes (method, path, query and version)."


class HeaderTooLarge(ApiError):
    status_code, code = 431, "header_too_large"
    message = "A request header field is over 8190 bytes, or the request has more than 100 of them."


class RequestTimeout(ApiError):
    status_code, code, message = 408, "request_timeout", "The request body did not arrive in time."


class OtpInvalid(ApiError):
    status_code, code, message = 401, "otp_invalid", "The one-time code is not valid."


class RecoveryCodeUsed(OtpInvalid):
    """A recovery code that worked once before: the same code as any wrong one, a message that says why."""

    message = "This recovery code was already used."


class TooManyAttempts(ApiError):
    status_code, code, message = 429, "too_many_attempts", "Too many failed attempts; try again later."


class RateLimited(ApiError):
    status_code, code, message = 429, "rate_limited", "Too many requests; slow down."


class LastOwner(ApiError):
    status_code, code, message = 400, "last_owner", "The organization must keep at least one owner."


class CannotRemoveSelf(ApiError):
    status_code, code, message = 400, "cannot_remove_self", "You cannot remove yourself."


class InviteInvalid(ApiError):
    status_code, code, message = 400, "invite_invalid", "This invite has expired or was already used."


class KeyUnavailable(ApiError):
    """A secret the service sealed does not unseal (its KEY_ENCRYPTION_KEY id was removed, or the blob is
    damaged): the operator's to fix, so 503, and the details go to the log, not to the caller."""

    status_code, code = 503, "key_unavailable"
    message = "The service cannot use this generator's private key right now; the operator has been alerted."


class ServiceUnavailable(ApiError):
    """A backing service (PostgreSQL, Redis) is unreachable: nothing was done; the client may retry."""

    status_code, code, message = 503, "service_unavailable", "The service is briefly unavailable; try again."


# Seconds a client should wait before retrying a 503: a restarting PostgreSQL takes a few.
RETRY_AFTER_UNAVAILABLE = 5


def backend_unavailable(exc: BaseException | None) -> ServiceUnavailable | None:
    """The 503 for a lost database or Redis connection (`exc` from the driver), else None.

    Django wraps the driver's errors: OperationalError (connection refused, server terminated the
    connection, deadlock or serialization failure) and InterfaceError (a connection already closed).
    Every one is worth retrying and none is the client's fault.
    """
    from django.db import InterfaceError, OperationalError
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    if not isinstance(exc, OperationalError | InterfaceError | RedisConnectionError | RedisTimeoutError):
        return None
    # The driver's message names host and port, never a password; no traceback (a restart logs hundreds).
    logger.warning("Backing service unavailable: %s: %s", type(exc).__name__, str(exc).strip()[:300])
    return ServiceUnavailable(headers={"Retry-After": str(RETRY_AFTER_UNAVAILABLE)})


class TokenInvalid(ValidationFailed):
    """A single-use email token (verification, password reset) that is unknown, expired or used."""

    message = "The token is invalid, expired or already used."


def _validation_details(detail: Any) -> Any:
    """DRF's ErrorDetail tree as plain JSON: field -> list of messages."""
    if isinstance(detail, dict):
        return {key: _validation_details(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_validation_details(item) for item in detail]
    return str(detail)


def _translate(exc: Exception) -> ApiError | None:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, drf.ValidationError):
        details = _validation_details(exc.detail)
        if not isinstance(details, dict):
            details = {"non_field_errors": details if isinstance(details, list) else [details]}
        return ValidationFailed(details=details)
    if isinstance(exc, drf.ParseError):
        return ValidationFailed(f"Malformed request body: {exc.detail}")
    if isinstance(exc, RequestDataTooBig):
        return PayloadTooLarge()
    if isinstance(exc, SuspiciousOperation):
        # Too many multipart fields or files, odd framing, ...: the request, not the service, is at fault.
        # Logged where Django logs those it catches itself.
        logging.getLogger(f"django.security.{type(exc).__name__}").warning("%s", exc)
        return ValidationFailed("The request body was refused.")
    if isinstance(exc, drf.NotAuthenticated | drf.AuthenticationFailed):
        return AuthenticationRequired(str(exc.detail) if isinstance(exc, drf.AuthenticationFailed) else None)
    if isinstance(exc, drf.Throttled):
        wait = max(1, int(exc.wait or 1))
        return RateLimited(headers={"Retry-After": str(wait)})
    if isinstance(exc, Http404 | drf.NotFound):
        return NotFound()
    if isinstance(exc, PermissionDenied | drf.PermissionDenied):
        return Forbidden()
    if unavailable := backend_unavailable(exc):
        return unavailable
    if isinstance(exc, drf.APIException):
        error = ApiError(str(exc.detail))
        error.status_code, error.code = exc.status_code, exc.default_code
        return error
    return None


def api_exception_handler(exc: Exception, context: dict) -> Response:
    """DRF's EXCEPTION_HANDLER: every error becomes the envelope; unknown ones a logged 500."""
    from rest_framework.views import set_rollback  # imported late: DRF's views import our parser

    error = _translate(exc)
    set_rollback()
    if error is None:
        view = context.get("view")
        logger.exception("Unhandled error in %s", type(view).__name__ if view else "view", exc_info=exc)
        return Response(server_error_body(500, {"error": "internal_error", "message": "Internal server error."}),
                        status=500)
    headers = dict(error.headers)
    if error.status_code == 401:
        headers.setdefault("WWW-Authenticate", 'Bearer realm="api"')
    return Response(server_error_body(error.status_code, error.body()), status=error.status_code, headers=headers)


def server_error_body(status: int, body: dict) -> dict:
    """A 5xx envelope names the request id, which every log line of the request carries too, so a
    user's report can be matched to the logs (also in the X-Request-Id header)."""
    request_id = current_request_id()
    if status >= 500 and request_id is not None:
        return {**body, "request_id": request_id}
    return body


def json_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse(server_error_body(status, {"error": code, "message": message}), status=status)


def _is_api(request) -> bool:
    return request.path.startswith("/v1/")


def handler404(request, exception=None):
    """JSON under /v1, Django's page elsewhere (dashboard and admin)."""
    if _is_api(request):
        return json_error(404, "not_found", "Not found.")
    return defaults.page_not_found(request, exception)


def handler500(request):
    if _is_api(request):
        # Django calls this inside its `except` block: a lost database or Redis outside a DRF view
        # (middleware, the URL resolver) is still a 503.
        if unavailable := backend_unavailable(sys.exc_info()[1]):
            response = json_error(unavailable.status_code, unavailable.code, unavailable.message)
            for name, value in unavailable.headers.items():
                response[name] = value
            return response
        return json_error(500, "internal_error", "Internal server error.")
    return defaults.server_error(request)


def handler400(request, exception=None):
    if _is_api(request):
        return json_error(400, "validation_error", "The request is invalid.")
    return defaults.bad_request(request, exception)


def handler403(request, exception=None):
    if _is_api(request):
        return json_error(403, "forbidden", "You are not allowed to do this.")
    return defaults.permission_denied(request, exception)


def csrf_failure(request, reason: str = "") -> JsonResponse:
    """CSRF_FAILURE_VIEW: /v1 is a bearer-token API, so a refusal there is JSON; Django's page elsewhere."""
    if _is_api(request):
        return json_error(403, "forbidden", "You are not allowed to do this.")
    return csrf.csrf_failure(request, reason)


@csrf_exempt  # /v1 takes bearer tokens, never cookies: every method on an unknown path is a 404
def api_not_found(request, *args, **kwargs) -> JsonResponse:
    """Catch-all for unknown /v1 paths, so they are JSON even with DEBUG on."""
    return handler404(request)


# What the HTTP server itself refuses before the application sees a request (gunicorn, or the development
# server): a request line or header over its limits, a malformed head. In the envelope like the rest.
SERVER_REFUSALS = {
    400: ("validation_error", "The request is malformed."),
    403: ("forbidden", "You are not allowed to do this."),
    414: (UriTooLong.code, UriTooLong.message),
    417: ("expectation_failed", "Only `Expect: 100-continue` is understood."),
    431: (HeaderTooLarge.code, HeaderTooLarge.message),
    500: ("internal_error", "Internal server error."),
    501: ("not_implemented", "This transfer coding is not supported."),
}


def server_refusal_body(status: int) -> bytes:
    code, message = SERVER_REFUSALS.get(status) or (("validation_error", "The request is invalid.") if status < 500
                                                    else ("internal_error", "Internal server error."))
    return json.dumps({"error": code, "message": message}).encode()


def _write_gunicorn_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error, answering in the envelope instead of an HTML page."""
    from gunicorn import util

    body = server_refusal_body(status_int)
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    util.write_nonblock(sock, head.encode("latin1") + body)


def _send_runserver_error(handler, code: int, message: str | None = None, explain: str | None = None) -> None:
    """http.server's send_error for the development server, answering in the envelope."""
    body = server_refusal_body(int(code))
    if message is None:
        message = handler.responses.get(int(code), ("Error",))[0]
    handler.log_error("code %d, message %s", int(code), message)
    handler.send_response(code, message)
    handler.send_header("Connection", "close")
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    if handler.command != "HEAD":
        handler.wfile.write(body)
    if int(code) in (414, 431):
        _linger(handler.connection)


# A client refused for a long head may still be sending it; closing with its bytes unread would reset the
# connection and could discard the answer before the client reads it. Read on a little, as nginx does.
LINGER_BYTES = 1024 * 1024
LINGER_SECONDS = 2


def _linger(sock) -> None:
    import socket

    try:
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(LINGER_SECONDS)
        received = 0
        while received < LINGER_BYTES and (chunk := sock.recv(65536)):
            received += len(chunk)
    except OSError:
        pass


def install_server_refusals() -> None:
    """Make the servers' own refusals JSON envelopes (called once Django is set up, in the serving process).

    Neither server has a setting for its error pages: gunicorn writes every refusal through
    `gunicorn.util.write_error` (from whatever worker class), the development server through
    `send_error` of its request handler. Both are replaced; nothing else of either changes.
    """
    if "gunicorn.util" in sys.modules:
        sys.modules["gunicorn.util"].write_error = _write_gunicorn_error
    from django.core.servers.basehttp import WSGIRequestHandler

    WSGIRequestHandler.send_error = _send_runserver_error
