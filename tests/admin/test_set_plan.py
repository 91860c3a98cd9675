"""Staff change a plan from the organization's page, through billing's plan_change (audited, not a field edit)."""

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission

from accounts.models import Organization, User
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def _url(org) -> str:
    return f"/admin/accounts/organization/{org.pk}/set-plan/"


def test_staff_change_the_plan_through_the_billing_service(staff_client, staff, org):
    page = staff_client.get(_url(org))
    assert page.status_code == 200 and b'name="plan"' in page.content and b"0 of 500 signatures" in page.content

    response = staff_client.post(_url(org), {"plan": "growth", "billing_interval": "annual"})

    assert response.status_code == 302 and response["Location"] == f"/admin/accounts/organization/{org.pk}/change/"
    org.refresh_from_db()
    assert (org.plan, org.billing_interval) == ("growth", "annual")
    event = AuditEvent.objects.get(org=org, type="billing.plan_changed")
    assert event.metadata == {"plan": "growth", "billing_interval": "annual", "previous_plan": "free",
                              "previous_billing_interval": "monthly", "actor": staff.email}
    assert LogEntry.objects.get(object_id=str(org.pk)).change_message == "Plan set to growth, billed annual."
    assert b"Plan set to growth" in staff_client.get(response["Location"]).content


def test_an_unknown_plan_changes_nothing(staff_client, org):
    response = staff_client.post(_url(org), {"plan": "platinum", "billing_interval": "monthly"})
    assert response.status_code == 200 and b"Select a valid choice" in response.content
    assert Organization.objects.get(pk=org.pk).plan == "free"
    assert not AuditEvent.objects.filter(type="billing.plan_changed").exists()


def test_staff_without_the_change_permission_cannot_change_a_plan(client, org):
    viewer = User.objects.create_user("viewer@example.com", "pw-123456789", org=org, is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_organization"))
    client.force_login(viewer)
    assert client.get(f"/admin/accounts/organization/{org.pk}/change/").status_code == 200
    assert client.post(_url(org), {"plan": "growth", "billing_interval": "monthly"}).status_code == 403
    assert Organization.objects.get(pk=org.pk).plan == "free"


def test_an_unknown_organization_is_404(staff_client):
    assert staff_client.get("/admin/accounts/organization/00000000-0000-0000-0000-000000000000/set-plan/"
                            ).status_code == 404
