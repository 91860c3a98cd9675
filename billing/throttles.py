"""The per-plan rate limit: requests a minute per organization (session and key calls alike).

The per-IP limits are infrastructure, not billing: `core.throttles`.
"""

from typing import TYPE_CHECKING

from accounts.plans import get_plan
from core import ratelimit
from core.throttles import WindowThrottle

if TYPE_CHECKING:
    from accounts.models import Organization


class OrgPlanThrottle(WindowThrottle):
    """Requests a minute per organization from its plan; enterprise is not limited."""

    def allow_request(self, request, view) -> bool:
        org = getattr(request, "org", None)
        state = plan_rate_hit(org) if org is not None else None
        return True if state is None else self._record(request, state)


def plan_rate_hit(org: "Organization") -> ratelimit.WindowState | None:
    """Count one request of `org` against its plan's limit (the API's and the dashboard's, one counter).

    None when the plan is not rate-limited (enterprise).
    """
    limit = get_plan(org.plan).requests_per_minute
    return None if limit is None else ratelimit.hit(f"org:{org.pk}", limit)
