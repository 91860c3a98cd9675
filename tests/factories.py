"""Rows built through the same code paths the service uses (real digests, real hashes)."""

import itertools

from accounts.jwt_sessions import session_token_issue
from accounts.models import Organization, Role, User
from accounts.services import api_key_create

_counter = itertools.count(1)
PASSWORD = "correct horse battery"


def make_org(*, plan: str = "free", name: str | None = None) -> Organization:
    return Organization.objects.create(name=name or f"Org {next(_counter)}", plan=plan)


def make_user(*, org: Organization, role: str = Role.OWNER, email: str | None = None,
              verified: bool = True, password: str = PASSWORD) -> User:
    email = email or f"user{next(_counter)}@example.com"
    return User.objects.create_user(email, password, org=org, role=role, email_verified=verified)


def make_api_key(*, org: Organization, name: str = "test") -> str:
    return api_key_create(org=org, created_by=None, name=name).key


def session_token(user: User) -> str:
    return session_token_issue(user_id=str(user.pk), email=user.email, org_id=str(user.org_id))
