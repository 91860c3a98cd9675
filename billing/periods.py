"""The usage period: the calendar month in UTC (addendum section 6). Pure."""

from datetime import UTC, date, datetime


def period_start(now: datetime) -> date:
    return now.astimezone(UTC).date().replace(day=1)


def period_bounds(now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the month containing `now`, as UTC datetimes."""
    start = period_start(now)
    end = date(start.year + start.month // 12, start.month % 12 + 1, 1)
    return (datetime(start.year, start.month, 1, tzinfo=UTC), datetime(end.year, end.month, 1, tzinfo=UTC))
