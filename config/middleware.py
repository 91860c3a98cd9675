from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


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
