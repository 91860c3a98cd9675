"""Numbered pages of a queryset without counting it: one query of `per_page + 1` rows says whether a
next page exists. Counting an organization's whole table on every page view costs more than the page."""

from dataclasses import dataclass

from django.db.models import QuerySet

MAX_PAGE = 1_000_000  # a deeper OFFSET is refused rather than scanned


@dataclass(frozen=True)
class Page:
    items: list
    number: int
    per_page: int
    has_next: bool

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def next_number(self) -> int:
        return self.number + 1

    @property
    def previous_number(self) -> int:
        return self.number - 1


def page_number(raw: str | None) -> int:
    """A `?page=` value as a page number: 1 for anything missing, malformed or out of range."""
    try:
        number = int(raw or 1)
    except ValueError:
        return 1
    return number if 1 <= number <= MAX_PAGE else 1


def page_of(queryset: QuerySet, *, number: int, per_page: int) -> Page:
    """Rows `(number - 1) * per_page` onwards of an ordered queryset, in one query."""
    offset = (number - 1) * per_page
    rows = list(queryset[offset:offset + per_page + 1])
    return Page(items=rows[:per_page], number=number, per_page=per_page, has_next=len(rows) > per_page)
