"""TOTP two-factor authentication (RFC 6238 through django-otp): setup, enable, disable, login step."""

import base64
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_otp.plugins.otp_totp.models import TOTPDevice

from accounts.credentials import digest
from accounts.models import TwoFactorChallenge, User
from accounts.services.auth import LoginResult, session_token_for
from config.errors import OtpInvalid, TooManyAttempts, ValidationFailed

MAX_FAILED_OTPS = 5  # in a row, per account (addendum section 2)
OTP_LOCKOUT = timedelta(minutes=15)
DEVICE_NAME = "authenticator"


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


def two_factor_enable(*, user: User, otp: str) -> None:
    """Confirm the pending secret with a current code. Raises ValidationFailed, OtpInvalid."""
    device = TOTPDevice.objects.filter(user=user, confirmed=False).first()
    if device is None:
        raise ValidationFailed("Call /v1/auth/2fa/setup first.")
    if not device.verify_token(otp):
        raise OtpInvalid()
    with transaction.atomic():
        TOTPDevice.objects.filter(pk=device.pk).update(confirmed=True)
        User.objects.filter(pk=user.pk).update(two_factor_enabled=True)
    user.two_factor_enabled = True


def two_factor_disable(*, user: User, otp: str) -> None:
    """Turn 2FA off with a current code. Raises ValidationFailed, OtpInvalid, TooManyAttempts."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).first()
    if device is None:
        raise ValidationFailed("Two-factor authentication is not enabled.")
    _check_otp(user=user, device=device, otp=otp)
    with transaction.atomic():
        TOTPDevice.objects.filter(user=user).delete()
        User.objects.filter(pk=user.pk).update(two_factor_enabled=False)
    user.two_factor_enabled = False


def two_factor_verify(*, challenge_token: str, otp: str) -> LoginResult:
    """Second login step. The challenge burns on this submission, right or wrong.

    Raises OtpInvalid (wrong code, unknown or burned challenge) and TooManyAttempts (5 wrong in a row:
    locked for 15 minutes whatever the challenge).
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
    _check_otp(user=user, device=device, otp=otp)
    return LoginResult(user=user, token=session_token_for(user))


def _refuse_if_locked(user: User) -> None:
    if user.otp_locked_until and user.otp_locked_until > timezone.now():
        seconds = int((user.otp_locked_until - timezone.now()).total_seconds()) + 1
        raise TooManyAttempts(headers={"Retry-After": str(seconds)})


def _check_otp(*, user: User, device: TOTPDevice, otp: str) -> None:
    """Verify a code against the account's lockout counter: wrong ones count, a right one resets."""
    _refuse_if_locked(user)
    if device.verify_token(otp):
        User.objects.filter(pk=user.pk).update(failed_otp_count=0, otp_locked_until=None)
        return
    with transaction.atomic():
        User.objects.filter(pk=user.pk).update(failed_otp_count=F("failed_otp_count") + 1)
        failures = User.objects.values_list("failed_otp_count", flat=True).get(pk=user.pk)
        if failures >= MAX_FAILED_OTPS:
            User.objects.filter(pk=user.pk).update(
                failed_otp_count=0, otp_locked_until=timezone.now() + OTP_LOCKOUT
            )
    raise OtpInvalid()
