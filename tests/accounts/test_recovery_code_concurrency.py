"""A recovery code works once even when two sign-ins present it at the same moment: real threads, real
transactions, PostgreSQL row locks."""

import pytest
from django.db import connection

from accounts import services
from accounts.models import RecoveryCode
from audit.models import AuditEvent
from tests import factories
from tests.concurrent_requests import fire_concurrently

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="needs PostgreSQL row locks"),
]


def _user_with_codes():
    user = factories.make_user(org=factories.make_org())
    _, codes = factories.enable_two_factor(user)
    return user, codes


def _challenge(user) -> str:
    return services.session_login(email=user.email, password=factories.PASSWORD).challenge_token


@pytest.mark.parametrize("racers", [2, 4])
def test_simultaneous_sign_ins_with_the_same_recovery_code_let_exactly_one_in(racers):
    user, codes = _user_with_codes()
    calls = [("post", "/v1/auth/verify-2fa", {"challenge_token": _challenge(user), "otp": codes[0]}, None)
             for _ in range(racers)]
    assert sorted(fire_concurrently(calls)) == [200] + [401] * (racers - 1)
    assert RecoveryCode.objects.filter(user=user, used_at__isnull=False).count() == 1
    assert AuditEvent.objects.filter(org=user.org, type="account.recovery_code_used").count() == 1
    user.refresh_from_db()
    assert user.failed_otp_count == racers - 1  # each loser counted as a wrong code (five would lock)


def test_a_sign_in_racing_a_disable_with_the_same_code_cannot_both_win():
    user, codes = _user_with_codes()
    calls = [("post", "/v1/auth/verify-2fa", {"challenge_token": _challenge(user), "otp": codes[0]}, None),
             ("post", "/v1/auth/2fa/disable", {"otp": codes[0]}, factories.session_token(user))]
    statuses = fire_concurrently(calls)
    assert sorted(statuses) == [200, 401]
    used_or_gone = RecoveryCode.objects.filter(user=user, used_at__isnull=True).count()
    assert used_or_gone in (0, 9)  # disabled (every code deleted) or one code spent by the sign-in
