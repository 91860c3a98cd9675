"""Numbered pages of a queryset without counting it: one query of `per_page + 1` rows says whether a
next page exists. Counting an organization's whole table on every page view costs more than the page."""

from dataclasses import dataclass

from django.db.models import QuerySet
from rest_framework import serializers

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


MAX_LIMIT = 100  # a page of an API list holds at most this many items (more is clamped, not refused)
DEFAULT_LIMIT = 20


class PageQuery(serializers.Serializer):
    """`?page=&limit=` of an API list (the audit log's rules): page from 1, limit 1 to 100, default 20,
    above 100 clamped to 100; below 1 or not an integer is 400 `validation_error`."""

    page = serializers.IntegerField(min_value=1, max_value=10_000_000, default=1)
    limit = serializers.IntegerField(min_value=1, max_value=2**31 - 1, default=DEFAULT_LIMIT)

    def validate_limit(self, value: int) -> int:
        return min(value, MAX_LIMIT)


def offset_page(queryset: QuerySet, *, page: int, limit: int) -> list:
    """Rows of an ordered queryset for page `page` of `limit` items (one query)."""
    offset = (page - 1) * limit
    return list(queryset[offset:offset + limit])


@dataclass(frozen=True)
class ListPage:
    """A list route's items with `total`, `page` and `limit` (None: the whole list, as asked without paging)."""

    items: list
    total: int
    page: int
    limit: int | None


def optional_page(queryset: QuerySet, query_params) -> ListPage:
    """The list as routes that predate paging answer it: everything when the query names neither `page` nor
    `limit` (so existing callers get what they always got, plus the counts), else one page of it by
    PageQuery's rules. Raises DRF's ValidationError (400) for bad values."""
    if "page" not in query_params and "limit" not in query_params:
        items = list(queryset)
        return ListPage(items=items, total=len(items), page=1, limit=None)
    query = PageQuery(data=query_params)
    query.is_valid(raise_exception=True)
    page, limit = query.validated_data["page"], query.validated_data["limit"]
    return ListPage(items=offset_page(queryset, page=page, limit=limit), total=queryset.count(), page=page,
                    limit=limit)


class ListPageFields(serializers.Serializer):
    """The counts beside a paged list's items (an output serializer adds its own list field)."""

    total = serializers.IntegerField(help_text="How many items the whole list has.")
    page = serializers.IntegerField()
    limit = serializers.IntegerField(allow_null=True, help_text="null when the request named neither page nor limit: "
                                                                "the whole list.")


def page_counts(listed: ListPage) -> dict:
    return {"total": listed.total, "page": listed.page, "limit": listed.limit}
