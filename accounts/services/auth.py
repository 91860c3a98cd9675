"""Registration, login, email verification, password reset and logout."""

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.hashers import make_password
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts import blocklist, emails, security_events
from accounts.credentials import digest, new_url_token
from accounts.jwt_sessions import session_token_issue
from accounts.models import EmailToken, Organization, Role, TwoFactorChallenge, User, normalize_email
from accounts.security_events import security_event_write
from core.errors import EmailTaken, InvalidCredentials, TokenInvalid

VERIFY_EMAIL_LIFETIME = timedelta(days=7)
RESET_PASSWORD_LIFETIME = timedelta(hours=1)  # spec, Limits
CHALLENGE_LIFETIME = timedelta(minutes=5)
# forgot-password and resend-verification take at least this long whether or not the account
# exists, so response time does not reveal it.
ENUMERATION_TIME_FLOOR = 0.3


@dataclass(frozen=True)
class LoginResult:
    user: User
    token: str | None = None
    challenge_token: str | None = None

    @property
    def requires_2fa(self) -> bool:
        return self.challenge_token is not None


def session_token_for(user: User) -> str:
    """A new session JWT for the user. Within the second of a password change it waits for the next
    second: `iat` has whole seconds, and that second's tokens are refused (selectors.user_for_session_token)."""
    if user.sessions_valid_after is not None:
        wait = int(user.sessions_valid_after.timestamp()) + 1 - time.time()
        if 0 < wait <= 1:
            time.sleep(wait)
    return session_token_issue(user_id=str(user.pk), email=user.email, org_id=str(user.org_id))


def user_register(*, org_name: str, email: str, password: str) -> User:
    """Create an organization on the free plan with this user as owner; mail a verification link.

    Raises EmailTaken when the email (compared case-insensitively) is registered.
    """
    email = normalize_email(email)
    if User.objects.filter(email=email).exists():
        raise EmailTaken()
    try:
        with transaction.atomic():
            org = Organization.objects.create(name=org_name.strip())
            user = User.objects.create_user(email, password, org=org, role=Role.OWNER)
            raw = _email_token_issue(user=user, purpose=EmailToken.Purpose.VERIFY_EMAIL,
                                     lifetime=VERIFY_EMAIL_LIFETIME)
    except IntegrityError:  # a concurrent registration of the same email won the unique index
        raise EmailTaken() from None
    emails.verification_email_send(user=user, token=raw)  # after commit: never mail a rolled-back account
    return user


def session_login(*, email: str, password: str) -> LoginResult:
    """Check the password; return a session token, or a 2FA challenge when 2FA is on.

    Raises InvalidCredentials, taking the same time for an unknown email as for a wrong password.
    """
    user = User.objects.select_related("org").filter(email=normalize_email(email), is_active=True).first()
    if user is None:
        make_password(password)  # the same hashing work as a real check, so timing tells nothing
        raise InvalidCredentials()
    if not user.check_password(password):
        raise InvalidCredentials()
    if user.two_factor_enabled:
        raw = new_url_token()
        TwoFactorChallenge.objects.create(user=user, digest=digest(raw),
                                          expires_at=timezone.now() + CHALLENGE_LIFETIME)
        return LoginResult(user=user, challenge_token=raw)
    return LoginResult(user=user, token=session_token_for(user))


def session_logout(*, jti: str, exp: int) -> None:
    """Blocklist the current session JWT until it expires."""
    blocklist.block(jti, exp)


def email_verify(*, token: str) -> User:
    """Mark the user's email verified. Raises TokenInvalid for an unknown, expired or used token."""
    with transaction.atomic():
        user = _email_token_consume(raw=token, purpose=EmailToken.Purpose.VERIFY_EMAIL)
        User.objects.filter(pk=user.pk).update(email_verified=True)
    user.email_verified = True
    return user


def verification_resend(*, email: str) -> None:
    """Mail a fresh verification link to an unverified account; silent (and equally slow) otherwise."""
    _mail_new_token(email=email, only_unverified=True, purpose=EmailToken.Purpose.VERIFY_EMAIL,
                    lifetime=VERIFY_EMAIL_LIFETIME, send=emails.verification_email_send)


def password_forgot(*, email: str) -> None:
    """Mail a one-hour, single-use reset link if the account exists; never tells whether it does."""
    _mail_new_token(email=email, only_unverified=False, purpose=EmailToken.Purpose.RESET_PASSWORD,
                    lifetime=RESET_PASSWORD_LIFETIME, send=emails.password_reset_email_send)


def _mail_new_token(*, email: str, only_unverified: bool, purpose: str, lifetime: timedelta,
                    send: Callable[..., None]) -> None:
    """Issue and mail a token when the account qualifies, taking ENUMERATION_TIME_FLOOR either way."""
    started = time.monotonic()
    users = User.objects.filter(email=normalize_email(email), is_active=True)
    user = (users.filter(email_verified=False) if only_unverified else users).first()
    if user is not None:
        with transaction.atomic():
            raw = _email_token_issue(user=user, purpose=purpose, lifetime=lifetime)
        send(user=user, token=raw)
    remaining = ENUMERATION_TIME_FLOOR - (time.monotonic() - started)
    if remaining > 0:
        time.sleep(remaining)


def password_reset(*, token: str, password: str) -> User:
    """Set a new password with a reset token; every older session JWT stops working.

    Raises TokenInvalid for an unknown, expired or used token.
    """
    with transaction.atomic():
        user = _email_token_consume(raw=token, purpose=EmailToken.Purpose.RESET_PASSWORD)
        _password_set(user, password)
    return user


def password_change(*, user: User, current_password: str, new_password: str) -> None:
    """Change a signed-in user's password: every session JWT issued until now stops working (page
    sessions end with the password hash; the caller keeps its own), the change is audited and the
    user is told by email. Raises InvalidCredentials when `current_password` is wrong."""
    if not user.check_password(current_password):
        raise InvalidCredentials("Your current password is not right.")
    with transaction.atomic():
        _password_set(user, new_password)
        security_event_write(user=user, type=security_events.PASSWORD_CHANGED)
    emails.password_changed_email_send(user=user)


def _password_set(user: User, password: str) -> None:
    user.set_password(password)
    user.sessions_valid_after = timezone.now()
    user.save(update_fields=["password", "sessions_valid_after"])


def _email_token_issue(*, user: User, purpose: str, lifetime: timedelta) -> str:
    """A new emailed token for `purpose`; older unused ones of the same purpose stop working."""
    now = timezone.now()
    EmailToken.objects.filter(user=user, purpose=purpose, used_at__isnull=True).update(used_at=now)
    raw = new_url_token()
    EmailToken.objects.create(user=user, purpose=purpose, digest=digest(raw), expires_at=now + lifetime)
    return raw


def _email_token_consume(*, raw: str, purpose: str) -> User:
    """Burn a token and return its user; the conditional UPDATE makes it single-use under concurrency."""
    now = timezone.now()
    token_digest = digest(raw)
    burned = EmailToken.objects.filter(
        digest=token_digest, purpose=purpose, used_at__isnull=True, expires_at__gt=now
    ).update(used_at=now)
    if burned != 1:
        raise TokenInvalid()
    token = EmailToken.objects.select_related("user__org").get(digest=token_digest)
    # Any other outstanding token of the same purpose dies with this one.
    EmailToken.objects.filter(user=token.user, purpose=purpose, used_at__isnull=True).update(used_at=now)
    return token.user


PURGE_GRACE = timedelta(days=1)  # a day of dead tokens kept for support questions ("my link did not work")


def email_tokens_purge() -> int:
    """Delete email tokens that expired or were used over a day ago (`manage.py purge_expired`); returns how many."""
    cutoff = timezone.now() - PURGE_GRACE
    expired, _ = EmailToken.objects.filter(expires_at__lt=cutoff).delete()
    used, _ = EmailToken.objects.filter(used_at__lt=cutoff).delete()
    return expired + used


def two_factor_challenges_purge() -> int:
    """Delete 2FA challenges that expired over a day ago (`manage.py purge_expired`); returns how many."""
    deleted, _ = TwoFactorChallenge.objects.filter(expires_at__lt=timezone.now() - PURGE_GRACE).delete()
    return deleted
