"""Writing the audit log: always inside the transaction of the change it records."""

from accounts.models import Organization
from audit.models import AuditEvent
from core.hot_sql import RowInserter

_insert_events = RowInserter(AuditEvent).insert  # every signature writes one (core/hot_sql.py)


def audit_write(*, org: Organization, type: str, metadata: dict) -> AuditEvent:
    """Append one event to the organization's audit log."""
    (event,) = audit_write_many(org=org, type=type, metadatas=[metadata])
    return event


def audit_write_many(*, org: Organization, type: str, metadatas: list[dict]) -> list[AuditEvent]:
    """Append one event per metadata object in a single INSERT: every audit row is written here."""
    return _insert_events([AuditEvent(org=org, type=type, metadata=m) for m in metadatas])
