"""Per-client-IP rate limits (public verification, unauthenticated auth routes) on `config.ratelimit`.

Infrastructure every app uses, like the limiter itself; the per-plan limit, which reads the plan
table, is `billing.throttles.OrgPlanThrottle` on the same `WindowThrottle`.
"""

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from config import ratelimit


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

    def charge(self, request, extra: int) -> None:
        """Count `extra` more requests (a batch of N costs N); raise Throttled when that passes the limit."""
        if extra > 0 and not self._record(request, self._hit(request, cost=extra)):
            raise Throttled(wait=self.wait())

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
