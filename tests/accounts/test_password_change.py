"""The password change's effect on session JWTs, to the second (JWT `iat` has whole seconds)."""

from datetime import UTC, datetime

import pytest
from django.core import mail

from accounts import services
from accounts.jwt_sessions import session_token_decode
from core.errors import InvalidCredentials
from tests import factories
from tests.log_scan import register_secret

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "another-long-password"
register_secret(NEW_PASSWORD)


def _me(api_client, token: str) -> int:
    return api_client.get("/v1/auth/me", HTTP_AUTHORIZATION=f"Bearer {token}").status_code


def test_a_session_from_the_same_second_as_a_password_change_is_refused(api_client, owner):
    token = factories.session_token(owner)
    issued = session_token_decode(token).iat
    owner.sessions_valid_after = datetime.fromtimestamp(issued + 0.999, tz=UTC)  # changed later that second
    owner.save(update_fields=["sessions_valid_after"])
    assert _me(api_client, token) == 401


def test_a_session_from_the_second_after_a_password_change_is_accepted(api_client, owner):
    token = factories.session_token(owner)
    owner.sessions_valid_after = datetime.fromtimestamp(session_token_decode(token).iat - 0.001, tz=UTC)
    owner.save(update_fields=["sessions_valid_after"])
    assert _me(api_client, token) == 200


def test_a_login_right_after_a_change_gets_a_token_that_works(api_client, owner):
    old = factories.session_token(owner)
    services.password_change(user=owner, current_password=factories.PASSWORD, new_password=NEW_PASSWORD)
    fresh = services.session_login(email=owner.email, password=NEW_PASSWORD).token
    register_secret(fresh)
    assert (_me(api_client, old), _me(api_client, fresh)) == (401, 200)


def test_a_password_reset_ends_sessions_of_its_own_second_too(api_client, owner):
    token = factories.session_token(owner)
    services.password_forgot(email=owner.email)
    reset = mail.outbox[0].body.split("token=")[1].split()[0]
    services.password_reset(token=reset, password=NEW_PASSWORD)
    assert _me(api_client, token) == 401


def test_a_wrong_current_password_raises_and_keeps_the_old_one(owner):
    with pytest.raises(InvalidCredentials):
        services.password_change(user=owner, current_password="wrong", new_password=NEW_PASSWORD)
    owner.refresh_from_db()
    assert owner.check_password(factories.PASSWORD) and owner.sessions_valid_after is None
