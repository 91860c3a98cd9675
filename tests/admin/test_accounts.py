import pytest

from accounts.models import ApiKey, User
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_organization_form_never_edits_the_plan_directly(staff_client, org):
    page = staff_client.get(f"/admin/accounts/organization/{org.pk}/change/")
    assert page.status_code == 200 and b'name="plan"' not in page.content
    assert f"/admin/accounts/organization/{org.pk}/set-plan/".encode() in page.content
    response = staff_client.post(f"/admin/accounts/organization/{org.pk}/change/",
                                 {"name": "Renamed", "plan": "growth", "billing_interval": "annual",
                                  "users-TOTAL_FORMS": "0", "users-INITIAL_FORMS": "0"})
    assert response.status_code == 302
    org.refresh_from_db()
    assert (org.name, org.plan, org.billing_interval) == ("Renamed", "free", "monthly")


def test_the_api_key_admin_never_shows_key_material(staff_client, org):
    key = factories.make_api_key(org=org)
    stored = ApiKey.objects.get()
    for url in ("/admin/accounts/apikey/", f"/admin/accounts/apikey/{stored.pk}/change/"):
        page = staff_client.get(url)
        assert page.status_code == 200
        content = page.content.decode()
        assert stored.digest not in content and key not in content and stored.lookup_id not in content
        assert stored.preview in content


def test_staff_can_revoke_keys_from_the_admin(staff_client, org):
    factories.make_api_key(org=org)
    stored = ApiKey.objects.get()
    staff_client.post("/admin/accounts/apikey/", {"action": "revoke", "_selected_action": [str(stored.pk)]})
    stored.refresh_from_db()
    assert stored.revoked_at is not None


def test_the_user_admin_lists_users(staff_client, owner):
    page = staff_client.get("/admin/accounts/user/")
    assert page.status_code == 200 and owner.email.encode() in page.content
    assert staff_client.get(f"/admin/accounts/user/{owner.pk}/change/").status_code == 200


def test_an_email_entered_in_the_admin_is_stored_normalised(staff_client, org):
    response = staff_client.post("/admin/accounts/user/add/", {
        "email": "New.Person@Example.COM", "org": str(org.pk), "role": "user",
        "password1": "a-strong-pass-123", "password2": "a-strong-pass-123"})
    assert response.status_code == 302, response.content[:500]
    assert User.objects.filter(email="new.person@example.com").exists()
