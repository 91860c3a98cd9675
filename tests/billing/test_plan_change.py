import pytest
from django.core.management import call_command
from django.utils import timezone

from audit.models import AuditEvent
from billing.models import UsageCounter
from billing.periods import period_start
from billing.services import plan_change
from tests import factories

pytestmark = pytest.mark.django_db


def test_a_plan_change_is_audited_with_who_asked(org):
    plan_change(org=org, plan="starter", actor="staff@example.com")
    event = AuditEvent.objects.get(org=org)
    assert event.type == "billing.plan_changed"
    assert event.metadata == {"plan": "starter", "billing_interval": "monthly", "previous_plan": "free",
                              "previous_billing_interval": "monthly", "actor": "staff@example.com"}


def test_the_set_plan_command_goes_through_the_service(org, owner):
    call_command("set_plan", owner.email, "growth", "--interval", "annual")
    org.refresh_from_db()
    assert (org.plan, org.billing_interval) == ("growth", "annual")
    assert AuditEvent.objects.get(org=org, type="billing.plan_changed").metadata["actor"] == "manage.py set_plan"


def test_a_new_plan_rearms_this_periods_quota_limit_announcement(org):
    factories.set_usage(org, 500)
    UsageCounter.objects.update(limit_announced=True)  # the free plan's limit was announced
    plan_change(org=org, plan="starter")
    assert not UsageCounter.objects.get(org=org, period_start=period_start(timezone.now())).limit_announced


def test_the_same_plan_again_keeps_the_announcement(org):
    factories.set_usage(org, 500)
    UsageCounter.objects.update(limit_announced=True)
    plan_change(org=org, plan="free", billing_interval="annual")
    assert UsageCounter.objects.get().limit_announced
