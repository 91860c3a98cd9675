"""The per-plan rate limit: requests a minute per organization (session and key calls alike).

The per-IP limits are infrastructure, not billing: `config.throttles`.
"""

from billing.plans import get_plan
from config import ratelimit
from config.throttles import WindowThrottle


class OrgPlanThrottle(WindowThrottle):
    """Requests a minute per organization from its plan; enterprise is not limited."""

    def allow_request(self, request, view) -> bool:
        org = getattr(request, "org", None)
        if org is None:
            return True
        limit = get_plan(org.plan).requests_per_minute
        if limit is None:
            return True
        return self._record(request, ratelimit.hit(f"org:{org.pk}", limit))
