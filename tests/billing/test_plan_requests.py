"""Plan requests: the owner asks on the billing page, staff are emailed and apply it from the admin through
the billing service (audited), the owner sees it pending and may cancel it; nobody else may ask."""

import pytest
from django.contrib.admin.models import LogEntry
from django.core import mail

from accounts.models import Organization, User
from audit.models import AuditEvent
from billing.models import PlanRequest
from billing.services import plan_request_apply, plan_request_cancel, plan_request_create
from core.errors import Forbidden, NotFound, ValidationFailed
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db) -> User:
    return User.objects.create_superuser("staff@example.com", "staff-password")


def _ask(org, owner, plan="growth", interval="annual", capture=None) -> PlanRequest:
    if capture is None:
        return plan_request_create(org=org, actor=owner, plan=plan, billing_interval=interval)
    with capture(execute=True):
        return plan_request_create(org=org, actor=owner, plan=plan, billing_interval=interval)


# --- the service ---------------------------------------------------------------------------------------

def test_the_owners_request_is_recorded_pending_and_emailed_to_the_billing_contact(
        org, owner, settings, django_capture_on_commit_callbacks):
    settings.BILLING_CONTACT_EMAIL = "sales@provenance.example"
    wanted = _ask(org, owner, capture=django_capture_on_commit_callbacks)
    assert (wanted.plan, wanted.billing_interval, wanted.status, wanted.requested_by_email) == (
        "growth", "annual", "pending", owner.email)
    assert Organization.objects.get(pk=org.pk).plan == "free"  # nothing changes until staff apply it
    [message] = mail.outbox
    assert message.to == ["sales@provenance.example"] and org.name in message.subject
    assert f"/admin/billing/planrequest/{wanted.pk}/change/" in message.body
    assert owner.email in message.body and "Growth" in message.body and "annual" in message.body
    html = next(content for content, mimetype in message.alternatives if mimetype == "text/html")
    assert f"/admin/billing/planrequest/{wanted.pk}/change/" in html


def test_a_refused_request_sends_no_email(org, member, django_capture_on_commit_callbacks):
    with pytest.raises(Forbidden), django_capture_on_commit_callbacks(execute=True):
        plan_request_create(org=org, actor=member, plan="growth", billing_interval="monthly")
    assert mail.outbox == [] and not PlanRequest.objects.exists()


@pytest.mark.parametrize("role", ["admin", "user"])
def test_only_the_owner_may_ask(growth_org, role):
    someone = factories.make_user(org=growth_org, role=role)
    with pytest.raises(Forbidden):
        plan_request_create(org=growth_org, actor=someone, plan="scale", billing_interval="monthly")


@pytest.mark.parametrize(("plan", "interval"), [("platinum", "monthly"), ("growth", "weekly"), ("free", "monthly")])
def test_an_unknown_plan_or_the_current_one_is_refused(org, owner, plan, interval):
    with pytest.raises(ValidationFailed):
        plan_request_create(org=org, actor=owner, plan=plan, billing_interval=interval)
    assert not PlanRequest.objects.exists()


def test_the_same_plan_billed_otherwise_may_be_asked(org, owner):
    assert _ask(org, owner, plan="free", interval="annual").is_pending


def test_a_new_request_replaces_the_pending_one(org, owner):
    first = _ask(org, owner, plan="growth")
    second = _ask(org, owner, plan="scale")
    first.refresh_from_db()
    assert first.status == "cancelled" and second.is_pending
    assert PlanRequest.objects.filter(org=org, status="pending").get() == second


def test_the_owner_cancels_a_pending_request(org, owner):
    wanted = _ask(org, owner)
    plan_request_cancel(org=org, actor=owner, request_id=wanted.pk)
    wanted.refresh_from_db()
    assert wanted.status == "cancelled" and wanted.decided_by == owner.email
    with pytest.raises(NotFound):
        plan_request_cancel(org=org, actor=owner, request_id=wanted.pk)  # no longer pending


def test_another_organizations_request_is_not_found(org, owner, other_org):
    theirs = _ask(other_org, factories.make_user(org=other_org))
    with pytest.raises(NotFound):
        plan_request_cancel(org=org, actor=owner, request_id=theirs.pk)
    assert PlanRequest.objects.get(pk=theirs.pk).is_pending


def test_applying_changes_the_plan_through_the_billing_service_audited(org, owner):
    wanted = _ask(org, owner, plan="scale", interval="annual")
    plan_request_apply(request_id=wanted.pk, staff_email="staff@example.com")
    org.refresh_from_db()
    wanted.refresh_from_db()
    assert (org.plan, org.billing_interval) == ("scale", "annual")
    assert (wanted.status, wanted.decided_by) == ("applied", "staff@example.com")
    event = AuditEvent.objects.get(org=org, type="billing.plan_changed")
    assert event.metadata == {"plan": "scale", "billing_interval": "annual", "previous_plan": "free",
                              "previous_billing_interval": "monthly", "actor": "staff@example.com"}


def test_a_cancelled_request_cannot_be_applied(org, owner):
    wanted = _ask(org, owner)
    plan_request_cancel(org=org, actor=owner, request_id=wanted.pk)
    with pytest.raises(NotFound):
        plan_request_apply(request_id=wanted.pk, staff_email="staff@example.com")
    assert Organization.objects.get(pk=org.pk).plan == "free"
    assert not AuditEvent.objects.filter(type="billing.plan_changed").exists()


# --- the admin -----------------------------------------------------------------------------------------

def _apply_action(client, *requests):
    return client.post("/admin/billing/planrequest/", {
        "action": "apply_requests", "_selected_action": [str(r.pk) for r in requests]}, follow=True)


def test_staff_see_pending_requests_and_apply_one_with_the_action(client, staff, org, owner):
    wanted = _ask(org, owner, plan="starter", interval="monthly")
    client.force_login(staff)
    listing = client.get("/admin/billing/planrequest/?status__exact=pending")
    assert listing.status_code == 200 and org.name in listing.content.decode()
    assert client.get(f"/admin/billing/planrequest/{wanted.pk}/change/").status_code == 200
    response = _apply_action(client, wanted)
    assert "Applied 1 request." in response.content.decode()
    assert Organization.objects.get(pk=org.pk).plan == "starter"
    assert AuditEvent.objects.get(org=org, type="billing.plan_changed").metadata["actor"] == staff.email
    assert LogEntry.objects.get(object_id=str(wanted.pk)).change_message == "Applied: starter, monthly."


def test_the_action_leaves_requests_that_are_no_longer_pending(client, staff, org, owner):
    wanted = _ask(org, owner)
    plan_request_cancel(org=org, actor=owner, request_id=wanted.pk)
    client.force_login(staff)
    response = _apply_action(client, wanted)
    assert "Applied 0 requests; 1 not pending" in response.content.decode()
    assert Organization.objects.get(pk=org.pk).plan == "free"


def test_staff_cannot_add_or_delete_requests(client, staff, org, owner):
    wanted = _ask(org, owner)
    client.force_login(staff)
    assert client.get("/admin/billing/planrequest/add/").status_code == 403
    assert client.post(f"/admin/billing/planrequest/{wanted.pk}/delete/", {"post": "yes"}).status_code == 403
    assert PlanRequest.objects.filter(pk=wanted.pk).exists()


# --- the billing page ----------------------------------------------------------------------------------

def test_the_owner_requests_a_plan_on_the_billing_page_and_sees_it_pending(
        org, owner, page_client, settings, django_capture_on_commit_callbacks):
    settings.BILLING_CONTACT_EMAIL = "sales@provenance.example"
    client = page_client(owner)
    assert "Request this plan" not in client.get("/dashboard/billing").content.decode()  # choose in the table
    form = client.get("/dashboard/billing?plan=growth").content.decode()
    assert 'action="/dashboard/billing/requests"' in form and "sales@provenance.example" in form
    assert "Move to Growth" in form and '<option value="growth" selected>' in form
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/dashboard/billing/requests", {"plan": "growth", "billing_interval": "annual"})
    assert response.status_code == 302 and response["Location"] == "/dashboard/billing"
    page = client.get("/dashboard/billing").content.decode()
    assert "is sent to sales@provenance.example" in page  # the flash message
    assert "Requested:</strong> the Growth plan, billed annual" in page and "Pending" in page
    assert len(mail.outbox) == 1
    assert client.get("/dashboard/billing").content.decode().count("is sent to") == 0  # shown once
    assert PlanRequest.objects.get().is_pending


def test_reloading_after_the_request_does_not_ask_again(org, owner, page_client,
                                                        django_capture_on_commit_callbacks):
    client = page_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/dashboard/billing/requests", {"plan": "growth", "billing_interval": "annual"}, follow=True)
        client.get("/dashboard/billing")
        client.get("/dashboard/billing/requests", follow=True)  # the action's address, bookmarked
    assert PlanRequest.objects.count() == 1 and len(mail.outbox) == 1


def test_the_owner_cancels_from_the_billing_page_after_a_confirmation(org, owner, page_client):
    wanted = _ask(org, owner)
    client = page_client(owner)
    confirm = client.get(f"/dashboard/billing/requests/{wanted.pk}/cancel")
    assert confirm.status_code == 200 and "Cancel the request" in confirm.content.decode()
    assert PlanRequest.objects.get().is_pending
    done = client.post(f"/dashboard/billing/requests/{wanted.pk}/cancel", follow=True)
    assert done.redirect_chain == [("/dashboard/billing", 302)] and "plan request is cancelled" in done.content.decode()
    assert PlanRequest.objects.get().status == "cancelled"
    again = client.get(f"/dashboard/billing/requests/{wanted.pk}/cancel", follow=True)
    assert again.redirect_chain == [("/dashboard/billing", 302)] and "no longer pending" in again.content.decode()


def test_members_see_who_to_ask_and_cannot_request_or_cancel(org, owner, member, page_client):
    wanted = _ask(org, owner)
    client = page_client(member)
    page = client.get("/dashboard/billing?plan=scale").content.decode()
    assert "Only the organization's owner changes the plan" in page and "Request this plan" not in page
    assert "Cancel the request" not in page and "Requested:" in page
    asked = client.post("/dashboard/billing/requests", {"plan": "scale", "billing_interval": "monthly"})
    assert asked.status_code == 403
    assert client.post(f"/dashboard/billing/requests/{wanted.pk}/cancel").status_code == 403
    assert PlanRequest.objects.get().is_pending and PlanRequest.objects.count() == 1


def test_a_bad_choice_on_the_page_is_a_400_with_the_form(org, owner, page_client):
    response = page_client(owner).post("/dashboard/billing/requests", {"plan": "platinum", "billing_interval": "x"})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not PlanRequest.objects.exists()


def test_the_action_counts_right_on_the_list_filtered_on_pending(client, staff, org, owner):
    wanted = _ask(org, owner)
    client.force_login(staff)
    response = client.post("/admin/billing/planrequest/?status__exact=pending", {
        "action": "apply_requests", "_selected_action": [str(wanted.pk)]}, follow=True)
    assert "Applied 1 request." in response.content.decode()
