"""Plan gates and the email-verified gate, for services that gate mid-flow (a batch) or up front."""

from accounts.models import Organization, Role, User
from accounts.plans import GATED_FEATURES, plan_allows
from core.errors import EmailNotVerified, PlanRequired


def owner_email_verified(org: Organization) -> bool:
    return User.objects.filter(org=org, role=Role.OWNER, email_verified=True).exists()


def require_feature(org: Organization, feature: str) -> None:
    """Raise PlanRequired when the org's plan lacks `feature`, EmailNotVerified when its owner is unverified."""
    if not plan_allows(org.plan, feature):
        raise PlanRequired(f"This needs the {GATED_FEATURES[feature].title()} plan or above.")
    if not owner_email_verified(org):
        raise EmailNotVerified()

