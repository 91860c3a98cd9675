"""Log records with the request they belong to: a request id in a contextvar, a JSON formatter, a text one.

Pure (no Django import): gunicorn's master loads these formatters from gunicorn.conf.py before Django is
set up. `RequestContextMiddleware` (core/middleware.py) sets the request id; every log line written
while the request runs, by any logger, carries it (`RequestContextFilter` on the handlers).
"""

import json
import logging
import re
import uuid
from contextvars import ContextVar
from datetime import UTC, datetime

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)

# An incoming X-Request-Id is kept only if it is a plain token: a proxy's or a client's id (uuid, hex,
# base64url) fits; anything else (spaces, quotes, newlines, 10 KB) is replaced, so it is never echoed
# into a header or a log line.
_SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{8,128}")

# The request fields the access log line carries (core/middleware.py), in this order.
REQUEST_FIELDS = ("method", "path", "status", "duration_ms", "org_id", "remote_addr")


def request_id_from(header: str | None) -> str:
    """The incoming id if it is a sane token, else a new one (uuid4 hex)."""
    if header and _SANE_REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def current_request_id() -> str | None:
    return request_id_var.get()


class RequestContextFilter(logging.Filter):
    """Gives every record a `request_id` (None outside a request), so formatters can always name it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            # Django logs a 5xx answer once the middleware has finished, with the request attached.
            record.request_id = request_id_var.get() or getattr(getattr(record, "request", None), "request_id", None)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: timestamp, level, logger, message, request_id, request fields, exception."""

    def format(self, record: logging.LogRecord) -> str:
        line = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "request_id": getattr(record, "request_id", None) or request_id_var.get(),
        }
        for field in REQUEST_FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                line[field] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            line["exception"] = record.exc_text
        # json.dumps escapes newlines and control characters: a line is always one record.
        return json.dumps(line, default=str)


class TextFormatter(logging.Formatter):
    """Development: one readable line, with the request id when there is one."""

    def __init__(self):
        super().__init__("%(asctime)s %(levelname)s %(name)s%(request_tag)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        request_id = getattr(record, "request_id", None) or request_id_var.get()
        record.request_tag = f" [{request_id[:8]}]" if request_id else ""
        return super().format(record)
