import logging
from collections.abc import Callable
from time import perf_counter

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from config.logs import request_id_from, request_id_var
from config.throttles import client_ip

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
