"""The export's body formats, from plain rows (no database)."""

import csv
import io
import json
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from rest_framework import serializers

from audit.export import csv_chunks, export_filename, json_chunks, timestamp_text
from tests.purity import assert_imports_without_django

ROWS = [(uuid.UUID(int=2), "sign", "2026-03-04 12:00:00+00", '{"a": 1}'),
        (uuid.UUID(int=1), "team.invite_sent", "2026-03-04 11:59:59.000005+00",
         '{"email": "x@example.com", "note": "a, \\"b\\"\\nc"}')]


def test_the_export_module_imports_without_django():
    assert_imports_without_django(["audit.export"])


@pytest.mark.parametrize(("stored", "moment"), [
    ("2026-03-04 12:00:00+00", datetime(2026, 3, 4, 12, 0, tzinfo=UTC)),  # PostgreSQL
    ("2026-03-04 12:00:00.000001+00", datetime(2026, 3, 4, 12, 0, 0, 1, tzinfo=UTC)),
    ("2026-03-04 12:00:00.25+00", datetime(2026, 3, 4, 12, 0, 0, 250_000, tzinfo=UTC)),
    ("0099-03-04 12:00:00.5+00", datetime(99, 3, 4, 12, 0, 0, 500_000, tzinfo=UTC)),
    ("2026-03-04 12:00:00", datetime(2026, 3, 4, 12, 0, tzinfo=UTC)),  # SQLite
    ("2026-03-04 12:00:00.250000", datetime(2026, 3, 4, 12, 0, 0, 250_000, tzinfo=UTC)),
])
def test_stored_timestamps_read_exactly_as_the_api_renders_them(stored, moment):
    assert timestamp_text(stored) == serializers.DateTimeField().to_representation(moment)


def test_csv_is_a_header_then_one_record_per_row_in_one_chunk_per_page():
    chunks = list(csv_chunks([ROWS[:1], ROWS[1:]]))
    assert len(chunks) == 2 and chunks[0].startswith(b"event_id,type,timestamp,metadata\r\n")
    rows = list(csv.reader(io.StringIO(b"".join(chunks).decode(), newline="")))
    assert rows[0] == ["event_id", "type", "timestamp", "metadata"]
    assert rows[1] == [str(ROWS[0][0]), "sign", "2026-03-04T12:00:00Z", '{"a": 1}']
    assert rows[2][2] == "2026-03-04T11:59:59.000005Z"
    assert json.loads(rows[2][3])["note"] == 'a, "b"\nc'


def test_json_is_one_array_with_one_event_a_line():
    text = b"".join(json_chunks([ROWS[:1], ROWS[1:]])).decode()
    assert json.loads(text) == [
        {"event_id": str(ROWS[0][0]), "type": "sign", "timestamp": "2026-03-04T12:00:00Z", "metadata": {"a": 1}},
        {"event_id": str(ROWS[1][0]), "type": "team.invite_sent", "timestamp": "2026-03-04T11:59:59.000005Z",
         "metadata": {"email": "x@example.com", "note": 'a, "b"\nc'}}]
    assert text.count("\n") == 4  # [, two events, ], final newline


def test_no_rows_is_a_header_alone_or_an_empty_array():
    assert b"".join(csv_chunks([])) == b"event_id,type,timestamp,metadata\r\n"
    assert json.loads(b"".join(json_chunks([]))) == []


def test_the_file_name_says_when_in_utc():
    moment = datetime(2026, 3, 4, 14, 5, 6, tzinfo=timezone(timedelta(hours=2)))
    assert export_filename("csv", moment) == "audit-events-20260304T120506Z.csv"


def test_the_csv_is_byte_for_byte_what_the_csv_module_writes():
    rows = [*ROWS, (uuid.UUID(int=3), 'odd,"type"\r\n', "2026-03-04 12:00:00.1+00", "{}"),
            (uuid.UUID(int=4), "webhook.created", "2026-03-04 12:00:00+00",
             '{"url": "https://a.example/?x=1,y=\\"2\\"", "events": ["record.created"]}')]
    expected = io.StringIO()
    writer = csv.writer(expected)
    writer.writerow(["event_id", "type", "timestamp", "metadata"])
    writer.writerows([str(i), t, timestamp_text(ts), m] for i, t, ts, m in rows)
    # The csv module quotes only where needed; "{}" is the one metadata it leaves bare, and reads back the same.
    assert b"".join(csv_chunks([rows])).decode() == expected.getvalue().replace(",{}\r\n", ',"{}"\r\n')
    assert list(csv.reader(io.StringIO(b"".join(csv_chunks([rows])).decode(), newline=""))) == list(
        csv.reader(io.StringIO(expected.getvalue(), newline="")))
