"""What the pages' downloads (the audit export, the compliance report) share: the bare address sent back to
its page, and the format checked with the filters, every problem named at once as the API names them."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from core.errors import ValidationFailed


def bare_address_redirect(request, *, page: str, hint: str) -> HttpResponse | None:
    """The page where downloads start (with the address's filters), when the address names no format: typed
    or bookmarked bare. None when it names one."""
    if "format" in request.GET:
        return None
    messages.info(request, hint)
    return redirect(f"{reverse(page)}?{request.GET.urlencode()}".rstrip("?"))


def checked_format(request, form, formats: tuple[str, ...]) -> str:
    """The requested format, once it and the form's filters hold; else ValidationFailed naming each problem."""
    format = request.GET.get("format")
    problems = {field: list(errors) for field, errors in form.errors.items()} if not form.is_valid() else {}
    if format not in formats:
        problems["format"] = [f"Choose {' or '.join(formats)}."]
    if problems:
        raise ValidationFailed(details=problems)
    return format
