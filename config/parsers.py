"""JSON request bodies with a per-route size limit, enforced before and while the body is read.

Not a JSONParser subclass on purpose: DRF hands JSONParser subclasses `request.body`, which Django caps
at one global DATA_UPLOAD_MAX_MEMORY_SIZE. Reading the stream ourselves lets a view raise the limit with
`max_body_bytes` (batches allow 10 MB) while every other route stays at 1 MB.
"""

import json

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from config.errors import PayloadTooLarge


def body_limit_for(view) -> int:
    return getattr(view, "max_body_bytes", None) or settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class LimitedJSONParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = body_limit_for(parser_context.get("view"))
        request = parser_context.get("request")
        declared = _declared_length(request)
        if declared is not None and declared > limit:
            raise PayloadTooLarge()
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            raise PayloadTooLarge()
        try:
            return json.loads(raw.decode(parser_context.get("encoding") or "utf-8"), parse_constant=_reject_constant)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None


def _declared_length(request) -> int | None:
    if request is None:
        return None
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0) or None
    except ValueError:
        return None


def _reject_constant(name: str):
    # NaN and Infinity are not JSON (RFC 8259), though Python's parser accepts them by default.
    raise ValueError(f"{name} is not valid JSON")
