"""A member's own sign-in security changes (password, second factor), handed to the audit log.

accounts sits below audit (an audit row belongs to an organization and names its members), so it cannot
import `audit_write`: the audit app registers it here in AuditConfig.ready(). The call stays explicit and
inside the transaction of the change it records; only the import points down. The types are spelled here
and AuditEvent.Type lists them.
"""

from collections.abc import Callable

from accounts.models import User

TWO_FACTOR_ENABLED = "account.two_factor_enabled"
TWO_FACTOR_DISABLED = "account.two_factor_disabled"
RECOVERY_CODES_REGENERATED = "account.recovery_codes_regenerated"
RECOVERY_CODE_USED = "account.recovery_code_used"
PASSWORD_CHANGED = "account.password_changed"

# audit_write(*, org, type, metadata); None until the audit app is ready.
_writer: Callable[..., object] | None = None


def security_event_writer_register(writer: Callable[..., object]) -> None:
    global _writer
    _writer = writer


def security_event_write(*, user: User, type: str, **metadata) -> None:
    """Audit `type` in the member's organization, with the member as `actor_id`."""
    if _writer is None:
        raise RuntimeError("No audit writer registered: the audit app is not installed or not ready.")
    _writer(org=user.org, type=type, metadata={"actor_id": str(user.pk), **metadata})
