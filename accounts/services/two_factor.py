"""TOTP two-factor authentication (RFC 6238 through django-otp): setup, enable, disable, login step,
and the recovery codes that stand in for the authenticator app."""

import base64
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts import security_events
from accounts.credentials import digest, new_url_token
from accounts.models import TwoFactorChallenge, User
from accounts.security_events import security_event_write
from accounts.selectors import recovery_codes_remaining
from accounts.services.auth import LoginResult, session_token_for
from accounts.services.recovery_codes import (
    Redeemed,
    recovery_code_redeem,
    recovery_codes_delete,
    recovery_codes_replace,
)
from core.errors import InvalidCredentials, OtpInvalid, RecoveryCodeUsed, TooManyAttempts, ValidationFailed

MAX_FAILED_OTPS = 5  # in a row, per account (addendum section 2)
OTP_LOCKOUT = timedelta(minutes=15)
DEVICE_NAME = "authenticator"
TOTP_CODE_LENGTH = 6


@dataclass(frozen=True)
class TotpSetup:
    secret: str  # base32, what authenticator apps take
    otpauth_url: str


def two_factor_setup(*, user: User) -> TotpSetup:
    """Start enrolment: a new unconfirmed TOTP secret. Raises ValidationFailed if 2FA is already on."""
    with transaction.atomic():
        if TOTPDevice.objects.filter(user=user, confirmed=True).exists():
            raise ValidationFailed("Two-factor authentication is already enabled; disable it first.")
        TOTPDevice.objects.filter(user=user, confirmed=False).delete()
        device = TOTPDevice.objects.create(user=user, name=DEVICE_NAME, confirmed=False)
    secret = base64.b32encode(device.bin_key).decode()
    return TotpSetup(secret=secret, otpauth_url=device.config_url)


def two_factor_pending_setup(*, user: User) -> TotpSetup | None:
    """The secret of an enrolment started and not yet confirmed (shown again until it is), else None."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).first()
    if device is None:
        return None
    return TotpSetup(secret=base64.b32encode(device.bin_key).decode(), otpauth_url=device.config_url)


def two_factor_enable(*, user: User, otp: str) -> list[str]:
    """Confirm the pending secret with a current code; returns the ten new recovery codes (shown once).

    Raises ValidationFailed (no pending secret, or enabled meanwhile), OtpInvalid.
    """
    device = TOTPDevice.objects.filter(user=user, confirmed=False).first()
    if device is None:
        raise ValidationFailed("Call /v1/auth/2fa/setup first.")
    if not device.verify_token(otp):
        raise OtpInvalid()
    with transaction.atomic():
        # Conditional: two enables racing with the same code must not both hand out codes.
        if TOTPDevice.objects.filter(pk=device.pk, confirmed=False).update(confirmed=True) != 1:
            raise ValidationFailed("Two-factor authentication is already enabled.")
        User.objects.filter(pk=user.pk).update(two_factor_enabled=True)
        codes = recovery_codes_replace(user=user)
        security_event_write(user=user, type=security_events.TWO_FACTOR_ENABLED)
    user.two_factor_enabled = True
    return codes


def two_factor_disable(*, user: User, otp: str) -> None:
    """Turn 2FA off with a current code or an unused recovery code (the way out for a lost phone);
    the recovery codes go with it. Raises ValidationFailed, OtpInvalid, RecoveryCodeUsed, TooManyAttempts."""
    device = _confirmed_device(user)
    _refuse_if_locked(user)
    with transaction.atomic():
        outcome = _second_factor_spend(user=user, device=device, code=otp, signing_in=False)
        if outcome is Redeemed.ACCEPTED:
            TOTPDevice.objects.filter(user=user).delete()
            recovery_codes_delete(user=user)
            User.objects.filter(pk=user.pk).update(two_factor_enabled=False)
            security_event_write(user=user, type=security_events.TWO_FACTOR_DISABLED,
                   proof="authenticator" if _is_totp_shaped(otp) else "recovery_code")
    _refuse_unless_accepted(user, outcome)
    user.two_factor_enabled = False


def recovery_codes_regenerate(*, user: User, otp: str | None = None, password: str | None = None) -> list[str]:
    """Ten new recovery codes in place of the old ones (used or not), proven by a current authenticator
    code or the account password. Raises ValidationFailed (2FA off), OtpInvalid, TooManyAttempts,
    InvalidCredentials (wrong password)."""
    device = _confirmed_device(user)
    if password is not None:
        if not user.check_password(password):
            raise InvalidCredentials("The password is not right.")
    elif not _is_totp_shaped(otp or ""):
        raise ValidationFailed("Enter a current code from your authenticator app, or your password.")
    else:
        _refuse_if_locked(user)
        _refuse_unless_accepted(user, _second_factor_spend(user=user, device=device, code=otp))
    with transaction.atomic():
        codes = recovery_codes_replace(user=user)
        security_event_write(user=user, type=security_events.RECOVERY_CODES_REGENERATED)
    return codes


def two_factor_verify(*, challenge_token: str, otp: str) -> LoginResult:
    """Second login step, with an authenticator code or a recovery code. The challenge burns on this
    submission, right or wrong.

    Raises OtpInvalid (wrong code, unknown or burned challenge), RecoveryCodeUsed (an OtpInvalid: the
    recovery code worked once already) and TooManyAttempts (5 wrong in a row: locked for 15 minutes
    whatever the challenge).
    """
    challenge = TwoFactorChallenge.objects.select_related("user__org").filter(digest=digest(challenge_token)).first()
    if challenge is None:
        raise OtpInvalid()
    user = challenge.user
    _refuse_if_locked(user)
    burned = TwoFactorChallenge.objects.filter(
        pk=challenge.pk, used_at__isnull=True, expires_at__gt=timezone.now()
    ).update(used_at=timezone.now())
    if burned != 1:
        raise OtpInvalid("This challenge was already used or has expired; log in again.")
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        raise OtpInvalid()
    with transaction.atomic():
        outcome = _second_factor_spend(user=user, device=device, code=otp)
    if outcome is not Redeemed.ACCEPTED:
        TwoFactorChallenge.objects.filter(pk=challenge.pk).update(retry_allowed=True)
    _refuse_unless_accepted(user, outcome)
    return LoginResult(user=user, token=session_token_for(user))


def two_factor_challenge_renew(*, challenge_token: str) -> str:
    """A successor of a challenge that a wrong code burned, for the same login and with the same expiry:
    the dashboard keeps a person at the code step after a typo. Once per burned challenge; the wrong
    code was counted toward the lockout like any other. Raises OtpInvalid (not burned by a wrong code,
    renewed already, or expired) and TooManyAttempts (the account is locked)."""
    challenge = TwoFactorChallenge.objects.select_related("user").filter(digest=digest(challenge_token)).first()
    if challenge is None:
        raise OtpInvalid()
    _refuse_if_locked(challenge.user)
    renewed = TwoFactorChallenge.objects.filter(
        pk=challenge.pk, retry_allowed=True, expires_at__gt=timezone.now()
    ).update(retry_allowed=False)
    if renewed != 1:
        raise OtpInvalid("This sign-in has expired; sign in again.")
    raw = new_url_token()
    TwoFactorChallenge.objects.create(user=challenge.user, digest=digest(raw), expires_at=challenge.expires_at)
    return raw


def _confirmed_device(user: User) -> TOTPDevice:
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        raise ValidationFailed("Two-factor authentication is not enabled.")
    return device


def _is_totp_shaped(code: str) -> bool:
    return len(code) == TOTP_CODE_LENGTH and code.isascii() and code.isdigit()


def _refuse_if_locked(user: User) -> None:
    if user.otp_locked_until and user.otp_locked_until > timezone.now():
        seconds = int((user.otp_locked_until - timezone.now()).total_seconds()) + 1
        raise TooManyAttempts(headers={"Retry-After": str(seconds)})


def _second_factor_spend(*, user: User, device: TOTPDevice, code: str, signing_in: bool = True) -> Redeemed:
    """Check an authenticator code (6 digits) or spend a recovery code; a right one resets the lockout
    counter. Runs inside the transaction of what the code authorizes; the caller then passes the outcome
    to `_refuse_unless_accepted`, outside it, so a wrong code's count is never rolled back. A recovery
    code spent to sign in is audited here; other uses are audited by their caller."""
    if _is_totp_shaped(code):
        outcome = Redeemed.ACCEPTED if device.verify_token(code) else Redeemed.WRONG
    else:
        outcome = recovery_code_redeem(user=user, code=code)
        if outcome is Redeemed.ACCEPTED and signing_in:
            security_event_write(user=user, type=security_events.RECOVERY_CODE_USED,
                                 remaining=recovery_codes_remaining(user=user))
    if outcome is Redeemed.ACCEPTED:
        User.objects.filter(pk=user.pk).update(failed_otp_count=0, otp_locked_until=None)
    return outcome


def _refuse_unless_accepted(user: User, outcome: Redeemed) -> None:
    """Count a wrong code (a spent recovery code too) and raise; the fifth in a row locks the account
    for OTP_LOCKOUT."""
    if outcome is Redeemed.ACCEPTED:
        return
    with transaction.atomic():
        User.objects.filter(pk=user.pk).update(failed_otp_count=F("failed_otp_count") + 1)
        failures = User.objects.values_list("failed_otp_count", flat=True).get(pk=user.pk)
        if failures >= MAX_FAILED_OTPS:
            User.objects.filter(pk=user.pk).update(failed_otp_count=0,
                                                   otp_locked_until=timezone.now() + OTP_LOCKOUT)
    raise RecoveryCodeUsed() if outcome is Redeemed.ALREADY_USED else OtpInvalid()
