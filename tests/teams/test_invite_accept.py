"""POST /v1/team/invites/:token/accept (public), and the emailed page /invite/<token> that does the same."""

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import User
from audit.models import AuditEvent
from teams.models import Invite
from tests import factories
from tests.teams.errors import assert_error
from tests.teams.mailbox import invite_token_from_mail

pytestmark = pytest.mark.django_db
URL = "/v1/team/invites/{}/accept"
PASSWORD = "a-new-password"


def _accept(client, token, password=PASSWORD):
    return client.post(URL.format(token), {"password": password}, format="json")


def _login(client, email, password=PASSWORD):
    return client.post("/v1/auth/login", {"email": email, "password": password}, format="json")


def test_the_emailed_token_creates_the_member_with_a_session(owner_client, api_client, org):
    owner_client.post("/v1/team/invites", {"email": "Joiner@example.com", "role": "admin"}, format="json")
    response = _accept(api_client, invite_token_from_mail())
    assert response.status_code == 201
    body = response.json()
    user = User.objects.get(email="joiner@example.com")
    assert body["user"] == {"user_id": str(user.pk), "email": "joiner@example.com", "org_id": str(org.pk),
                            "role": "admin", "email_verified": True}
    assert set(body) == {"token", "user"}
    me = api_client.get("/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {body['token']}")
    assert me.status_code == 200 and me.json()["user"]["user_id"] == str(user.pk)
    assert _login(api_client, "joiner@example.com").status_code == 200
    assert user.role == "admin" and user.email_verified and user.org_id == org.pk


def test_accepting_marks_the_invite_and_writes_the_audit_event(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner, email="j@example.com")
    user_id = _accept(api_client, token).json()["user"]["user_id"]
    invite.refresh_from_db()
    assert invite.accepted_at is not None
    event = AuditEvent.objects.for_org(org).get(type="team.invite_accepted")
    assert event.metadata == {"actor_id": user_id, "invite_id": str(invite.pk), "user_id": user_id,
                              "email": "j@example.com", "role": "user"}


def test_an_invite_is_single_use(api_client, owner, org):
    _, token = factories.make_invite(org=org, inviter=owner)
    assert _accept(api_client, token).status_code == 201
    assert_error(_accept(api_client, token, "another-password"), 400, "invite_invalid")


def test_an_expired_invite_is_400(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner)
    Invite.objects.filter(pk=invite.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert_error(_accept(api_client, token), 400, "invite_invalid")
    assert not User.objects.filter(email=invite.email).exists()


def test_an_unknown_token_is_400(api_client):
    assert_error(_accept(api_client, "no-such-token"), 400, "invite_invalid")


def test_a_cancelled_invite_is_400(api_client, owner_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner)
    owner_client.delete(f"/v1/team/invites/{invite.pk}")
    assert_error(_accept(api_client, token), 400, "invite_invalid")


@pytest.mark.parametrize("body", [{}, {"password": "7-chars"}, {"password": "x" * 129}, {"password": None},
                                  {"password": ["long-enough"]}, ["long-enough"]])
def test_a_password_outside_8_to_128_characters_is_400(api_client, owner, org, body):
    invite, token = factories.make_invite(org=org, inviter=owner)
    assert_error(api_client.post(URL.format(token), body, format="json"), 400, "validation_error")
    invite.refresh_from_db()
    assert invite.accepted_at is None


@pytest.mark.parametrize("password", ["8-chars!", "x" * 128])
def test_passwords_of_8_and_128_characters_are_accepted(api_client, owner, org, password):
    invite, token = factories.make_invite(org=org, inviter=owner)
    assert _accept(api_client, token, password).status_code == 201
    assert _login(api_client, invite.email, password).status_code == 200


def test_an_email_that_became_a_member_is_409_already_member(api_client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner, email="twice@example.com")
    factories.make_user(org=org, email="twice@example.com", role="user")
    assert_error(_accept(api_client, token), 409, "already_member")
    invite.refresh_from_db()
    assert invite.accepted_at is None  # the refusal rolled the acceptance back


def test_an_email_with_an_account_elsewhere_is_409_email_taken(owner_client, api_client, outsider, org):
    assert owner_client.post("/v1/team/invites", {"email": outsider.email, "role": "user"},
                             format="json").status_code == 201
    assert_error(_accept(api_client, invite_token_from_mail()), 409, "email_taken")
    outsider.refresh_from_db()
    assert outsider.org_id != org.pk and outsider.check_password(factories.PASSWORD)


def test_accept_needs_a_free_seat_for_the_new_member(api_client):
    org = factories.make_org(plan="free")  # 2 seats
    owner = factories.make_user(org=org)
    _, token = factories.make_invite(org=org, inviter=owner)
    factories.make_user(org=org, role="user")  # the seat the invite held is taken meanwhile
    assert_error(_accept(api_client, token), 402, "seat_limit_reached")
    assert User.objects.for_org(org).count() == 2


def test_a_credential_is_not_needed_and_is_ignored(api_client, owner, org):
    _, token = factories.make_invite(org=org, inviter=owner)
    response = api_client.post(URL.format(token), {"password": PASSWORD}, format="json",
                               HTTP_AUTHORIZATION="Bearer garbage")
    assert response.status_code == 201


def test_accept_is_limited_per_client_ip(api_client, settings):
    settings.AUTH_RATE_PER_MINUTE = 2
    assert [_accept(api_client, "guess").status_code for _ in range(2)] == [400, 400]
    response = _accept(api_client, "guess")
    assert_error(response, 429, "rate_limited")
    assert int(response["Retry-After"]) >= 1


# --- the page behind the emailed link ------------------------------------------------------------------

def test_opening_the_page_does_not_use_up_the_invite(client, owner, org):
    invite, token = factories.make_invite(org=org, inviter=owner, email="page@example.com")
    page = client.get(f"/invite/{token}")
    assert page.status_code == 200
    assert org.name.encode() in page.content and b"page@example.com" in page.content
    assert b'method="post"' in page.content
    invite.refresh_from_db()
    assert invite.accepted_at is None
    assert client.get(f"/v1/team/invites/{token}/preview").status_code == 200


def test_the_page_completes_the_emailed_invite_and_the_member_can_log_in(client, owner_client, api_client, org):
    owner_client.post("/v1/team/invites", {"email": "page@example.com", "role": "user"}, format="json")
    token = invite_token_from_mail()
    assert client.get(f"/invite/{token}").status_code == 200
    done = client.post(f"/invite/{token}", {"password": PASSWORD, "password_confirm": PASSWORD}, follow=True)
    assert done.redirect_chain == [("/dashboard", 302)]  # signed in, on the dashboard
    assert b"you joined as user" in done.content and org.name.encode() in done.content
    user = User.objects.get(email="page@example.com")
    assert (user.org_id, user.role, user.email_verified) == (org.pk, "user", True)
    assert done.wsgi_request.user == user
    assert _login(api_client, "page@example.com").status_code == 200
    assert client.get(f"/invite/{token}").status_code == 404  # used: Back or a reload shows it spent
    assert client.get("/dashboard/team").status_code == 200


def test_accepting_on_a_browser_signed_in_as_someone_else_signs_that_person_out(client, owner, org):
    _, token = factories.make_invite(org=org, inviter=owner, email="page@example.com")
    client.force_login(owner)
    before = client.session.session_key
    client.post(f"/invite/{token}", {"password": PASSWORD, "password_confirm": PASSWORD})
    assert client.session.session_key != before
    assert client.get("/dashboard").wsgi_request.user.email == "page@example.com"


@pytest.mark.parametrize(("password", "confirm"), [("short", "short"), (PASSWORD, PASSWORD + "x")])
def test_the_page_refuses_a_bad_password_without_using_the_invite(client, owner, org, password, confirm):
    invite, token = factories.make_invite(org=org, inviter=owner)
    page = client.post(f"/invite/{token}", {"password": password, "password_confirm": confirm})
    assert page.status_code == 400 and b'class="error"' in page.content
    invite.refresh_from_db()
    assert invite.accepted_at is None


def test_the_page_shows_a_refusal_from_the_service(client, owner, org, outsider):
    _, token = factories.make_invite(org=org, inviter=owner, email=outsider.email)
    page = client.post(f"/invite/{token}", {"password": PASSWORD, "password_confirm": PASSWORD})
    assert page.status_code == 400 and b"already exists" in page.content


def test_the_page_of_an_unknown_invite_is_404(client):
    page = client.get("/invite/no-such-token")
    assert page.status_code == 404 and b"not valid" in page.content
    assert client.post("/invite/no-such-token", {"password": PASSWORD, "password_confirm": PASSWORD}).status_code == 404
