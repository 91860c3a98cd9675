import logging
from collections.abc import Callable
from time import perf_counter

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from core.errors import HeaderTooLarge, UriTooLong, json_error
from core.logs import request_id_from, request_id_var
from core.throttles import client_ip

access_logger = logging.getLogger("access")

# URL arguments that are secrets (an invite's token in /invite/<token>): the access log names the route
# with these replaced, and never logs a query string (emailed links carry ?token=).
SECRET_URL_ARGUMENTS = ("token",)
# Probes every few seconds (orchestrators, load balancers): logged at DEBUG, so they do not drown the log.
PROBE_PATHS = ("/healthz", "/readyz")


class RequestContextMiddleware:
    """A request id for every request (the client's X-Request-Id if sane, else new), in a contextvar for
    the log lines of the request, in the X-Request-Id response header, and one access log line at the end.

    First in the chain, so it sees every response, including the 500 answered for an unhandled error.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        request_id = request_id_from(request.META.get("HTTP_X_REQUEST_ID"))
        request.request_id = request_id
        context = request_id_var.set(request_id)
        started = perf_counter()
        try:
            response = self.get_response(request)
            response["X-Request-Id"] = request_id
            _log_access(request, response, duration_ms=(perf_counter() - started) * 1000)
            return response
        finally:
            request_id_var.reset(context)


def loggable_path(request: HttpRequest) -> str:
    """The request path without its query string and with secret URL arguments replaced."""
    path = request.path
    match = getattr(request, "resolver_match", None)
    for name in SECRET_URL_ARGUMENTS:
        value = match.kwargs.get(name) if match else None
        if isinstance(value, str) and value:
            path = path.replace(value, "[redacted]")
    return path


def _log_access(request: HttpRequest, response: HttpResponse, *, duration_ms: float) -> None:
    org = getattr(request, "org", None)
    path = loggable_path(request)
    level = logging.DEBUG if request.path in PROBE_PATHS else logging.INFO
    access_logger.log(level, "%s %s %s %.1fms", request.method, path, response.status_code, duration_ms, extra={
        "method": request.method, "path": path, "status": response.status_code,
        "duration_ms": round(duration_ms, 1), "org_id": str(org.pk) if org is not None else None,
        "remote_addr": client_ip(request)})


# The request head's limits, the same whichever server reads it: gunicorn.conf.py (limit_request_*) and
# deploy/nginx.conf (large_client_header_buffers) refuse more themselves; the development server allows
# 64 KB lines, so the app refuses the rest here, and a URL that works in development works in production.
MAX_REQUEST_LINE = 8190  # bytes of "METHOD target HTTP/1.1", gunicorn's largest limit_request_line
MAX_HEADER_FIELD = 8190  # bytes of one "Name: value" line
MAX_HEADER_FIELDS = 100


def _head_refusal(meta: dict, method: str, target: str) -> type | None:
    if len(method) + len(target) + len(meta.get("SERVER_PROTOCOL", "HTTP/1.1")) + 2 > MAX_REQUEST_LINE:
        return UriTooLong
    fields = [(name[5:], value) for name, value in meta.items() if name.startswith("HTTP_")]
    fields += [(name, meta[name]) for name in ("CONTENT_TYPE", "CONTENT_LENGTH") if meta.get(name)]
    if len(fields) > MAX_HEADER_FIELDS or any(len(name) + 2 + len(str(value)) > MAX_HEADER_FIELD
                                              for name, value in fields):
        return HeaderTooLarge
    return None


class RequestHeadLimitMiddleware:
    """414 `uri_too_long` / 431 `header_too_large` in the envelope for a request head over the limits above."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        # RAW_URI: the target as gunicorn read it; elsewhere the path as Django re-encodes it, with the query.
        target = request.META.get("RAW_URI") or request.get_full_path()
        refusal = _head_refusal(request.META, request.method or "", target)
        if refusal is not None:
            return json_error(refusal.status_code, refusal.code, refusal.message)
        return self.get_response(request)


class RateLimitHeadersMiddleware:
    """Adds X-RateLimit-* to every response whose request was counted by a rate limiter."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        state = getattr(request, "ratelimit_state", None)
        if state is not None:
            response["X-RateLimit-Limit"] = str(state.limit)
            response["X-RateLimit-Remaining"] = str(state.remaining)
            response["X-RateLimit-Reset"] = str(state.reset_in)
        return response


class ContentSecurityPolicyMiddleware:
    """Sends settings.CONTENT_SECURITY_POLICY on every response that does not set its own.

    Django 5.2 has no CSP support of its own; a header is all the pages need (they use no nonces).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.policy = settings.CONTENT_SECURITY_POLICY

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", self.policy)
        return response
