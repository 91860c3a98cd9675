"""The bodies of an audit export, CSV or JSON, made one page of rows at a time (pure: no Django).

Each page of rows becomes one chunk of bytes, so a whole log streams in the memory of one page.
Rows are (event id, type, timestamp, metadata), the last two as the database's text: the metadata
is passed through as the database wrote its JSON, never decoded and encoded again.

CSV: RFC 4180 as the csv module's "excel" dialect writes it (CRLF line ends, fields quoted when they
hold a comma, a quote or a line break, quotes doubled; the metadata field always quoted), a header
row, UTF-8 without a byte-order mark.
Spreadsheet formulas: a cell is read as a formula only when it starts with =, +, -, @, a tab or a
carriage return. No cell here can: event ids are UUIDs, types are lowercase names, timestamps start
with a digit and metadata is always a JSON object, which starts with "{". Values inside the metadata
(an invited email, a webhook URL) sit after that "{", so they never start a cell, and the cell is the
exact JSON, unaltered (docs/decisions.md, "Audit export").

JSON: one array, one event per line, each exactly as GET /v1/audit renders it.
"""

import functools
import json
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

FORMATS = ("csv", "json")
CSV_COLUMNS = ("event_id", "type", "timestamp", "metadata")
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json"}

_json_string = json.encoder.encode_basestring  # the C encoder json.dumps uses for a str


def timestamp_text(stored: str) -> str:
    """A timestamp as the database writes it in UTC, as the API renders it: ISO 8601 ending in Z, with
    microseconds when they are not 0 (PostgreSQL's `2026-03-04 12:00:00.5+00` and SQLite's
    `2026-03-04 12:00:00.500000` both become `2026-03-04T12:00:00.500000Z`)."""
    fraction = stored[19:].partition("+")[0]  # PostgreSQL drops a fraction's trailing zeros
    return f"{stored[:10]}T{stored[11:19]}{fraction.ljust(7, '0') if fraction else ''}Z"


@functools.lru_cache(maxsize=256)  # a handful of distinct types
def _csv_field(text: str) -> str:
    """`text` as one CSV field: quoted, its quotes doubled, when it holds a comma, a quote or a line break."""
    if any(character in text for character in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _csv_line(event_id, type: str, stored_timestamp: str, metadata: str) -> str:
    # Ids and timestamps never need quotes; a JSON object always holds quotes, so metadata is always quoted.
    quoted_metadata = metadata.replace('"', '""')
    return f'{event_id},{_csv_field(type)},{timestamp_text(stored_timestamp)},"{quoted_metadata}"\r\n'


def csv_chunks(pages: Iterable[list[tuple]]) -> Iterator[bytes]:
    """The header row, then one chunk of CSV lines per page of rows.

    Written by hand rather than by the csv module, which spent most of an export's CPU deciding for
    every row what these two rules decide once (the csv module reads the result back exactly, tested).
    """
    header = ",".join(CSV_COLUMNS) + "\r\n"
    for page in pages:
        yield (header + "".join([_csv_line(*row) for row in page])).encode()
        header = ""
    if header:  # no page at all: the header alone
        yield header.encode()


def json_chunks(pages: Iterable[list[tuple]]) -> Iterator[bytes]:
    """`[`, one chunk of events per page of rows, `]`: a JSON array with one event a line."""
    yield b"["
    separator = "\n"
    for page in pages:
        yield (separator + ",\n".join(
            f'{{"event_id":"{event_id}","type":{_json_string(type)},"timestamp":"{timestamp_text(moment)}",'
            f'"metadata":{metadata}}}' for event_id, type, moment, metadata in page)).encode()
        separator = ",\n"
    yield b"\n]\n"


def export_chunks(format: str, pages: Iterable[list[tuple]]) -> Iterator[bytes]:
    """The body of an export in `format` (one of FORMATS)."""
    return csv_chunks(pages) if format == "csv" else json_chunks(pages)


def export_filename(format: str, now: datetime) -> str:
    """The download's file name: audit-events-<UTC time of the export>.<format>."""
    return f"audit-events-{now.astimezone(UTC):%Y%m%dT%H%M%SZ}.{format}"
