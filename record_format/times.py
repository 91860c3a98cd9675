"""How the service spells a moment: ISO 8601 in UTC ending in Z, as the API shows every timestamp."""

from datetime import UTC, datetime


def iso_timestamp(moment: datetime) -> str:
    """ISO 8601 UTC ending in Z, spelled as the API shows timestamps (DRF: isoformat, +00:00 -> Z)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
