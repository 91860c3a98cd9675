"""Rows of organization members, written for the team routes. Who may do what is decided in `teams.services`."""

from django.db import IntegrityError, transaction

from accounts.models import Organization, User
from core.errors import EmailTaken


def member_create(*, org: Organization, email: str, password: str, role: str) -> User:
    """A new member of `org` with a verified email (an accepted invite proves the address).

    Raises EmailTaken when the email (normalised) already has an account, also when a concurrent
    request created it first.
    """
    try:
        with transaction.atomic():  # a savepoint: the caller's transaction survives the refused insert
            return User.objects.create_user(email, password, org=org, role=role, email_verified=True)
    except IntegrityError:
        raise EmailTaken() from None


def member_role_set(*, member: User, role: str) -> None:
    """Store a new role for `member`."""
    User.objects.filter(pk=member.pk).update(role=role)
    member.role = role


def member_delete(*, member: User) -> None:
    """Delete `member`. Their personal API keys go with the row (CASCADE) and their session JWTs stop
    working at once: the session lookup finds no user."""
    member.delete()
