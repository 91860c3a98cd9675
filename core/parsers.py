"""JSON request bodies with a per-route size limit, enforced before and while the body is read.

Not a JSONParser subclass on purpose: DRF hands JSONParser subclasses `request.body`, which Django caps
at one global DATA_UPLOAD_MAX_MEMORY_SIZE. Reading the stream ourselves lets a view raise the limit with
`max_body_bytes` (batches allow 10 MB) while every other route stays at 1 MB.

Whatever a route declares, no view ever receives nesting deeper than MAX_DEPTH or a string that is not
Unicode text (a lone surrogate): both are refused here with 400, before any serializer, message or
renderer sees them.
"""

import codecs
import json
import re

from django.conf import settings
from django.utils.http import parse_header_parameters
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser

from core.errors import PayloadTooLarge

# Our deepest body is three containers ({"records": [{"signed_payload": {...}}]}); far below Python's
# recursion limit, so nothing downstream (serializers, error messages, rendering) can recurse out.
MAX_DEPTH = 32
# Where a lone surrogate can come from: a \uD800-\uDFFF escape, or (utf-7, unicode-escape) the decoded text.
_SURROGATE_SOURCE = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")


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
        text = _decoded(raw, media_type)
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        except RecursionError:
            raise ParseError(f"JSON nests deeper than {MAX_DEPTH} levels.") from None
        if _may_need_refusing(text):
            _check_tree(value)
        return value


class LimitedRawParser(BaseParser):
    """Any other body, as its bytes (an asset sent as itself: `image/png`), within the view's limit."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = body_limit_for(parser_context.get("view"))
        declared = _declared_length(parser_context.get("request"))
        if declared is not None and declared > limit:
            raise PayloadTooLarge()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge()
        return raw


def _decoded(raw: bytes, media_type: str | None) -> str:
    """The body as text in its declared charset (UTF-8 if none); 400 for a charset that is not a text encoding."""
    _, params = parse_header_parameters(media_type or "")
    charset = params.get("charset", "utf-8")
    try:
        is_text = codecs.lookup(charset)._is_text_encoding  # False for rot13, zlib, base64, hex, ...
    except LookupError:
        is_text = False
    if not is_text:
        raise ParseError(f"Unsupported charset {charset[:40]!r}; send UTF-8.")
    try:
        return raw.decode(charset)
    except ValueError:  # UnicodeDecodeError and its kin
        raise ParseError(f"The body is not valid {charset[:40]}.") from None


def _may_need_refusing(text: str) -> bool:
    """Cheap scans that let the usual body (few brackets, no surrogate escape) skip the walk of its value."""
    if text.count("[") + text.count("{") > MAX_DEPTH:
        return True
    if text.isascii():  # then only an escape can make a surrogate; str.find is far cheaper than the regex
        return "\\u" in text and _SURROGATE_SOURCE.search(text) is not None
    return _SURROGATE_SOURCE.search(text) is not None


def _check_tree(value) -> None:
    """Refuse containers nested deeper than MAX_DEPTH and strings (keys too) holding a lone surrogate.

    Iterative, so a deep value cannot exhaust the stack here either.
    """
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, str):
            _check_text(node)
        elif isinstance(node, dict | list):
            if depth > MAX_DEPTH:
                raise ParseError(f"JSON nests deeper than {MAX_DEPTH} levels.")
            if isinstance(node, dict):
                for key in node:
                    _check_text(key)
                items = node.values()
            else:
                items = node
            stack.extend((item, depth + 1) for item in items)


def _check_text(text: str) -> None:
    # A "\ud800" escape parses to a lone surrogate, which is not Unicode text: it cannot be stored, encoded
    # or rendered. ASCII strings (the common case, base64 included) are checked in constant time.
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ParseError("JSON strings must be Unicode text; a lone surrogate escape is not.") from None


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
