from decimal import Decimal
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Organization
from accounts.plans import PLANS, plan_allows, upgrade_url
from tests import factories
from tests.purity import assert_imports_without_django

PROJECT = Path(__file__).resolve().parents[2]
# addendum section 6, row by row: monthly, annual per month, annual total, included, overage, seats, admin
ADDENDUM_TABLE = {
    "free": ("0", "0", "0", 500, "0", 2, False),
    "starter": ("49", "39", "468", 5000, "0.008", 5, False),
    "growth": ("199", "159", "1908", 50000, "0.005", 15, True),
    "scale": ("799", "639", "7668", 250000, "0.003", 50, True),
    "enterprise": ("0", "0", "0", None, "0", None, True),
}
RATE_LIMITS = {"free": 100, "starter": 500, "growth": 1000, "scale": 2000, "enterprise": None}


@pytest.mark.parametrize("name", list(ADDENDUM_TABLE))
def test_the_plan_table_matches_the_addendum(name):
    plan = PLANS[name]
    monthly, annual_monthly, annual_total, included, overage, seats, admin = ADDENDUM_TABLE[name]
    assert plan.monthly_price == Decimal(monthly) and plan.annual_monthly_price == Decimal(annual_monthly)
    assert plan.annual_total == Decimal(annual_total) and plan.included_signatures == included
    assert plan.overage_rate == Decimal(overage) and plan.max_members == seats and plan.admin_role is admin
    assert plan.requests_per_minute == RATE_LIMITS[name]
    assert plan.blocks_at_limit is (name == "free")


def test_growth_and_above_pass_the_gates():
    assert [name for name in PLANS if plan_allows(name, "webhooks")] == ["growth", "scale", "enterprise"]


def test_upgrade_url_follows_the_addendum():
    assert upgrade_url("https://x.test/", "growth") == "https://x.test/dashboard/billing?plan=growth"


def test_the_plan_table_imports_without_django(tmp_path, monkeypatch):
    # Started from a folder whose own `billing` package pulls Django in: the check must import ours
    # whatever the working directory (`python -c` imports from its working directory first).
    (tmp_path / "billing").mkdir()
    (tmp_path / "billing" / "__init__.py").write_text("import django\n")
    monkeypatch.chdir(tmp_path)
    assert_imports_without_django(["accounts.plans", "billing.periods", "accounts.credentials",
                                   "provenance.c2pa_json", "provenance.phash_bands"])


@pytest.mark.django_db
def test_the_public_catalogue_lists_every_plan(api_client):
    response = api_client.get("/v1/billing/plans")
    assert response.status_code == 200
    plans = response.json()["plans"]
    assert [p["plan"] for p in plans] == list(PLANS)
    starter = plans[1]
    assert starter == {"plan": "starter", "label": "Starter", "monthly_price": 49.0, "annual_monthly_price": 39.0,
                       "annual_total": 468.0, "included_signatures": 5000, "overage_rate": 0.008,
                       "max_members": 5, "upgrade_url": "http://127.0.0.1:8000/dashboard/billing?plan=starter"}
    assert plans[-1]["included_signatures"] is None


@pytest.mark.django_db
def test_set_plan_by_org_id_and_by_owner_email(owner, org):
    call_command("set_plan", str(org.pk), "growth", "--interval", "annual")
    org.refresh_from_db()
    assert (org.plan, org.billing_interval) == ("growth", "annual")
    call_command("set_plan", owner.email.upper(), "scale")
    org.refresh_from_db()
    assert (org.plan, org.billing_interval) == ("scale", "annual")


@pytest.mark.django_db
def test_set_plan_refuses_unknown_orgs_and_plans(owner):
    with pytest.raises(CommandError):
        call_command("set_plan", "nobody@example.com", "growth")
    with pytest.raises(CommandError):
        call_command("set_plan", owner.email, "platinum")
    assert Organization.objects.get(pk=owner.org_id).plan == "free"


@pytest.mark.django_db
def test_set_plan_refuses_a_member_email(org):
    member = factories.make_user(org=org, role="user")
    with pytest.raises(CommandError):
        call_command("set_plan", member.email, "growth")
