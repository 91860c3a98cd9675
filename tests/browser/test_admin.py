"""The staff admin in a real browser: log in, open an organization, change its plan through the form."""

import pytest

from accounts.models import Organization, User
from audit.models import AuditEvent
from tests import factories
from tests.browser.screenshots import shoot

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_log_in_and_change_a_plan_from_the_organization_page(page):
    User.objects.create_superuser("staff@example.com", "staff-password")
    org = factories.make_org(name="Acme Labs")
    factories.make_user(org=org, email="owner@acme.example")
    factories.set_usage(org, 420)

    page.goto("/admin/login/?next=/admin/accounts/organization/")
    page.fill("#id_username", "staff@example.com")
    page.fill("#id_password", "staff-password")
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list")
    shoot(page, "admin-organizations")

    page.click("text=Acme Labs")
    assert "420 of 500 signatures" in page.inner_text("#content")
    shoot(page, "admin-organization")
    page.click("text=Change plan")
    shoot(page, "admin-set-plan")
    page.select_option("#id_plan", "starter")
    page.click("input[type=submit][value='Change plan']")
    assert "Plan set to starter" in page.inner_text(".messagelist")

    assert Organization.objects.get(pk=org.pk).plan == "starter"
    assert AuditEvent.objects.get(org=org, type="billing.plan_changed").metadata["actor"] == "staff@example.com"
