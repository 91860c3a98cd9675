"""Two-factor recovery codes: ten single-use codes, stored as digests, each good for one sign-in.

These helpers run inside the caller's transaction (enable, regenerate, the login step); the audit
events are written by the callers, which know why the codes changed.
"""

import enum

from django.utils import timezone

from accounts.credentials import digest, digests_match, new_recovery_code, normalize_recovery_code
from accounts.models import RecoveryCode, User

RECOVERY_CODE_COUNT = 10


class Redeemed(enum.Enum):
    ACCEPTED = "accepted"
    ALREADY_USED = "already_used"
    WRONG = "wrong"


def recovery_codes_replace(*, user: User) -> list[str]:
    """Delete the user's codes (used or not) and store ten new ones; the codes as shown, once."""
    codes = [new_recovery_code() for _ in range(RECOVERY_CODE_COUNT)]
    RecoveryCode.objects.filter(user=user).delete()
    RecoveryCode.objects.bulk_create(
        RecoveryCode(user=user, digest=digest(normalize_recovery_code(code))) for code in codes)
    return codes


def recovery_codes_delete(*, user: User) -> None:
    RecoveryCode.objects.filter(user=user).delete()


def recovery_code_redeem(*, user: User, code: str) -> Redeemed:
    """Spend one of the user's codes. Every stored digest is compared in constant time; the
    conditional UPDATE makes a code work once even when two sign-ins present it at the same moment
    (the second waits for the first's row lock, then finds `used_at` set)."""
    canonical = normalize_recovery_code(code)
    if canonical is None:
        return Redeemed.WRONG
    match = None
    for stored in RecoveryCode.objects.filter(user=user).only("id", "digest", "used_at"):
        if digests_match(stored.digest, canonical):
            match = stored
    if match is None:
        return Redeemed.WRONG
    spent = RecoveryCode.objects.filter(pk=match.pk, used_at__isnull=True).update(used_at=timezone.now())
    return Redeemed.ACCEPTED if spent == 1 else Redeemed.ALREADY_USED
