from collections.abc import Callable

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
