"""The plan table of addendum section 6: the one place every quota, price, seat and gate comes from.

Pure module (no Django): plain values in, plain values out.
"""

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class Plan:
    name: str
    label: str
    rank: int  # order for "Growth or above" gates
    monthly_price: Decimal
    annual_monthly_price: Decimal
    annual_total: Decimal
    included_signatures: int | None  # None: unlimited
    overage_rate: Decimal  # USD per signature beyond the allowance
    max_members: int | None  # None: unlimited
    admin_role: bool
    requests_per_minute: int | None  # None: not rate-limited
    blocks_at_limit: bool  # free stops at its allowance; paid plans count overage

    def is_at_least(self, other: str) -> bool:
        return self.rank >= PLANS[other].rank


def _plan(name, label, rank, monthly, annual_monthly, annual_total, included, overage, seats, admin, rpm, blocks):
    return Plan(name, label, rank, Decimal(monthly), Decimal(annual_monthly), Decimal(annual_total), included,
                Decimal(overage), seats, admin, rpm, blocks)


PLANS: dict[str, Plan] = {
    plan.name: plan
    for plan in (
        _plan("free", "Free", 0, "0", "0", "0", 500, "0", 2, False, 100, True),
        _plan("starter", "Starter", 1, "49", "39", "468", 5000, "0.008", 5, False, 500, False),
        _plan("growth", "Growth", 2, "199", "159", "1908", 50000, "0.005", 15, True, 1000, False),
        _plan("scale", "Scale", 3, "799", "639", "7668", 250000, "0.003", 50, True, 2000, False),
        _plan("enterprise", "Enterprise", 4, "0", "0", "0", None, "0", None, True, None, False),
    )
}

PLAN_NAMES: tuple[str, ...] = tuple(PLANS)
BILLING_INTERVALS: tuple[str, ...] = ("monthly", "annual")
DEFAULT_PLAN = "free"

# Features that need Growth or above (spec, Limits: plan gates).
GATED_FEATURES: dict[str, str] = {
    "batch_records": "growth",
    "batch_sign": "growth",
    "c2pa_embed": "growth",
    "webhooks": "growth",
    "admin_invites": "growth",
    "audit_export": "growth",
    "compliance_export": "growth",  # the compliance report as CSV or PDF (JSON on every plan)
}


def get_plan(name: str) -> Plan:
    """The plan called `name`; KeyError for an unknown name."""
    return PLANS[name]


def plan_allows(plan_name: str, feature: str) -> bool:
    """Whether `plan_name` includes a gated `feature` (a key of GATED_FEATURES)."""
    return PLANS[plan_name].is_at_least(GATED_FEATURES[feature])


def upgrade_url(base_url: str, plan_name: str) -> str:
    """The upgrade link of addendum section 6."""
    return f"{base_url.rstrip('/')}/dashboard/billing?plan={plan_name}"
