"""Rate limits: per organization by plan (session and key calls alike), and per client IP."""

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from billing.plans import get_plan
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


class _WindowThrottle(BaseThrottle):
    state: ratelimit.WindowState | None = None

    def _record(self, request, state: ratelimit.WindowState) -> bool:
        self.state = state
        request._request.ratelimit_state = state
        return state.allowed

    def wait(self) -> float | None:
        return self.state.reset_in if self.state else None


class OrgPlanThrottle(_WindowThrottle):
    """Requests a minute per organization from its plan; enterprise is not limited."""

    def allow_request(self, request, view) -> bool:
        org = getattr(request, "org", None)
        if org is None:
            return True
        limit = get_plan(org.plan).requests_per_minute
        if limit is None:
            return True
        return self._record(request, ratelimit.hit(f"org:{org.pk}", limit))


class IpThrottle(_WindowThrottle):
    """Requests a minute per client IP; the limit comes from the setting named by `rate_setting`."""

    rate_setting = "VERIFY_RATE_PER_MINUTE"
    scope = "ip"

    def allow_request(self, request, view) -> bool:
        return self._record(request, self._hit(request, cost=1))

    def charge(self, request, extra: int) -> None:
        """Count `extra` more requests (a batch of N costs N); raise Throttled when that passes the limit."""
        if extra > 0 and not self._record(request, self._hit(request, cost=extra)):
            raise Throttled(wait=self.wait())

    def _hit(self, request, cost: int) -> ratelimit.WindowState:
        return ratelimit.hit(f"{self.scope}:{client_ip(request)}", getattr(settings, self.rate_setting), cost=cost)


class VerifyIpThrottle(IpThrottle):
    rate_setting, scope = "VERIFY_RATE_PER_MINUTE", "verify"


class AuthIpThrottle(IpThrottle):
    """Unauthenticated auth routes (login, register, password reset): slows guessing from one address."""

    rate_setting, scope = "AUTH_RATE_PER_MINUTE", "auth"
