"""python manage.py set_plan <org_id or owner email> <plan> [--interval monthly|annual]"""

import uuid

from django.core.management.base import BaseCommand, CommandError

from accounts.models import Organization, Role, User, normalize_email
from accounts.plans import BILLING_INTERVALS, PLAN_NAMES
from billing.services import plan_change


class Command(BaseCommand):
    help = "Change an organization's plan (addendum section 6)."

    def add_arguments(self, parser):
        parser.add_argument("org", help="organization id, or the email of one of its owners")
        parser.add_argument("plan", choices=PLAN_NAMES)
        parser.add_argument("--interval", choices=BILLING_INTERVALS, default=None)

    def handle(self, *args, org: str, plan: str, interval: str | None, **options):
        organization = _find_org(org)
        plan_change(org=organization, plan=plan, billing_interval=interval, actor="manage.py set_plan")
        organization.refresh_from_db()
        self.stdout.write(f"{organization.name} ({organization.pk}): plan {organization.plan}, "
                          f"billing {organization.billing_interval}")


def _find_org(ref: str) -> Organization:
    try:
        return Organization.objects.get(pk=uuid.UUID(ref))
    except (ValueError, Organization.DoesNotExist):
        pass
    owner = User.objects.select_related("org").filter(email=normalize_email(ref), role=Role.OWNER).first()
    if owner is None:
        raise CommandError(f"No organization with id {ref!r} and no owner with that email.")
    return owner.org
