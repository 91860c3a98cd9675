"""Writing the audit log: always inside the transaction of the change it records."""

from accounts.models import Organization
from audit.models import AuditEvent


def audit_write(*, org: Organization, type: str, metadata: dict) -> AuditEvent:
    """Append one event to the organization's audit log."""
    return AuditEvent.objects.create(org=org, type=type, metadata=metadata)


def audit_write_many(*, org: Organization, type: str, metadatas: list[dict]) -> list[AuditEvent]:
    """Append one event per metadata object in a single INSERT (batches)."""
    return AuditEvent.objects.bulk_create([AuditEvent(org=org, type=type, metadata=m) for m in metadatas])
