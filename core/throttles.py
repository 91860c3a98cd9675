"""Per-client-IP rate limits (public verification, unauthenticated auth routes) on `core.ratelimit`.

Infrastructure every app uses, like the limiter itself; the per-plan limit, which reads the plan
table, is `billing.throttles.OrgPlanThrottle` on the same `WindowThrottle`.
"""

from collections.abc import Callable

from django.conf import settings
from rest_framework.throttling import BaseThrottle

from core import ratelimit
from core.errors import RateLimited


def client_ip(request) -> str:
    """The caller's IP: REMOTE_ADDR, or the address the trusted proxies saw (TRUSTED_PROXY_COUNT)."""
    proxies = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    if proxies and forwarded:
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if len(hops) >= proxies:
            return hops[-proxies]
    return request.META.get("REMOTE_ADDR", "unknown")


class WindowThrottle(BaseThrottle):
    """A DRF throttle on one fixed-window counter; its state feeds the X-RateLimit-* headers."""

    state: ratelimit.WindowState | None = None

    def _record(self, request, state: ratelimit.WindowState) -> bool:
        self.state = state
        request._request.ratelimit_state = state
        return state.allowed

    def wait(self) -> float | None:
        return self.state.reset_in if self.state else None


class IpThrottle(WindowThrottle):
    """Requests a minute per client IP; the limit comes from the setting named by `rate_setting`."""

    rate_setting = "VERIFY_RATE_PER_MINUTE"
    scope = "ip"

    def allow_request(self, request, view) -> bool:
        return self._record(request, self._hit(request, cost=1))

    def count(self, request, cost: int = 1) -> ratelimit.WindowState:
        """Count a request made outside DRF (a dashboard page) as `cost` requests; the caller refuses it
        when not allowed."""
        return self._hit(request, cost=cost)

    def _hit(self, request, cost: int) -> ratelimit.WindowState:
        return ratelimit.hit(f"{self.scope}:{client_ip(request)}", getattr(settings, self.rate_setting), cost=cost)


class VerifyIpThrottle(IpThrottle):
    rate_setting, scope = "VERIFY_RATE_PER_MINUTE", "verify"


class AuthIpThrottle(IpThrottle):
    """Unauthenticated auth routes (login, register, password reset): slows guessing from one address."""

    rate_setting, scope = "AUTH_RATE_PER_MINUTE", "auth"


def verification_charge(request) -> Callable[[int], None]:
    """The per-IP verification limit charged a request's cost in verifications (a file's units, a batch's
    sum), beyond the one the request was already counted as: by VerifyIpThrottle on the API, by the
    public form on the verify page. Takes a DRF or a Django request; past the limit raises RateLimited
    with Retry-After, which the API and the pages answer alike."""
    django_request = getattr(request, "_request", request)

    def charge(cost: int) -> None:
        if cost <= 1:
            return
        state = VerifyIpThrottle().count(django_request, cost=cost - 1)
        django_request.ratelimit_state = state  # X-RateLimit-* headers (core.middleware)
        if not state.allowed:
            raise RateLimited(headers={"Retry-After": str(state.reset_in)})

    return charge
