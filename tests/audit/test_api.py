import csv
import io
import json
import re
from datetime import datetime

import pytest
from django.core.signals import request_finished
from django.db import close_old_connections

from audit.models import AuditEvent
from audit.services import audit_write
from tests import factories

pytestmark = pytest.mark.django_db
URL = "/v1/audit"


def _fill(org, n: int):
    return [audit_write(org=org, type="sign", metadata={"n": i}) for i in range(n)]


def test_events_come_newest_first_with_the_spec_shape(key_client, org):
    _fill(org, 3)
    response = key_client(org).get(URL)
    assert response.status_code == 200
    body = response.json()
    assert (body["total"], body["page"], body["limit"]) == (3, 1, 20)
    assert [e["metadata"]["n"] for e in body["events"]] == [2, 1, 0]
    assert set(body["events"][0]) == {"event_id", "type", "timestamp", "metadata"}
    assert body["events"][0]["timestamp"].endswith("Z")


def test_pages_split_the_log(key_client, org):
    _fill(org, 5)
    client = key_client(org)
    page2 = client.get(URL, {"page": 2, "limit": 2}).json()
    assert [e["metadata"]["n"] for e in page2["events"]] == [2, 1]
    assert (page2["total"], page2["page"], page2["limit"]) == (5, 2, 2)
    assert client.get(URL, {"page": 9, "limit": 2}).json()["events"] == []


def test_a_limit_above_100_is_clamped(key_client, org):
    assert key_client(org).get(URL, {"limit": 500}).json()["limit"] == 100


@pytest.mark.parametrize("query", [{"page": 0}, {"page": -1}, {"page": "x"}, {"limit": 0}, {"limit": "1.5"},
                                   {"page": "99999999999999999999"}])
def test_bad_paging_is_400(key_client, org, query):
    response = key_client(org).get(URL, query)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_the_log_is_scoped_to_the_organization(key_client, org, other_org):
    _fill(other_org, 2)
    assert key_client(org).get(URL).json() == {"events": [], "total": 0, "page": 1, "limit": 20}


def test_the_audit_log_needs_a_credential(api_client):
    assert api_client.get(URL).status_code == 401


def test_signing_registering_and_revoking_write_their_events(key_client, org):
    client = key_client(org)
    generator, seed = factories.make_client_generator(org=org)
    client.post("/v1/records", factories.record_body(generator=generator, seed=seed), format="json")
    client.put(f"/v1/generators/{generator.pk}/revoke")
    types = [e["type"] for e in client.get(URL).json()["events"]]
    assert types == ["key_revoked", "sign", "key_created"]


# --- filters on the list ----------------------------------------------------------------------------

def _at(org, type: str, moment: str, **metadata):
    event = audit_write(org=org, type=type, metadata=metadata)
    AuditEvent.objects.filter(pk=event.pk).update(timestamp=datetime.fromisoformat(moment))
    return event


def _timeline(org):
    """Four events on 1, 2, 3 and 4 March 2026 at noon UTC (the second half a second after): sign, verify,
    sign, key_created."""
    return [_at(org, "sign", "2026-03-01T12:00:00+00:00", n=1), _at(org, "verify", "2026-03-02T12:00:00.5+00:00", n=2),
            _at(org, "sign", "2026-03-03T12:00:00+00:00", n=3),
            _at(org, "key_created", "2026-03-04T12:00:00+00:00", n=4)]


@pytest.mark.parametrize(("query", "expected"), [
    ({"type": "sign"}, [3, 1]),
    ({"from": "2026-03-02T12:00:00Z"}, [4, 3, 2]),  # `from` is inclusive
    ({"to": "2026-03-03T12:00:00Z"}, [2, 1]),  # `to` is exclusive
    ({"from": "2026-03-02", "to": "2026-03-04"}, [3, 2]),  # dates are midnight UTC
    ({"from": "2026-03-02T13:00:00+01:00", "to": "2026-03-03T15:00:00+02:00"}, [3, 2]),  # offsets honoured
    ({"type": "sign", "from": "2026-03-02T00:00:00Z"}, [3]),
    ({"type": "", "from": "", "to": ""}, [4, 3, 2, 1]),  # empty values, as a form sends them: no filter
])
def test_the_list_filters_by_type_and_time_range(key_client, org, query, expected):
    _timeline(org)
    body = key_client(org).get(URL, query).json()
    assert [e["metadata"]["n"] for e in body["events"]] == expected
    assert body["total"] == len(expected) and (body["page"], body["limit"]) == (1, 20)


def test_filtered_pages_keep_the_list_shape(key_client, org):
    _timeline(org)
    body = key_client(org).get(URL, {"type": "sign", "page": 2, "limit": 1}).json()
    assert body == {"events": [body["events"][0]], "total": 2, "page": 2, "limit": 1}
    assert body["events"][0]["metadata"] == {"n": 1}


BAD_FILTERS = [{"type": "nonsense"}, {"type": "SIGN"}, {"from": "yesterday"}, {"to": "2026-13-01"},
               {"from": "2026-03-02T25:00:00Z"}, {"from": "2026-03-03", "to": "2026-03-02"},
               {"from": "2026-03-03", "to": "2026-03-03"}, {"to": "9999-12-31T23:59:59-14:00"}]


@pytest.mark.parametrize("query", BAD_FILTERS)
def test_bad_filters_on_the_list_are_400(key_client, org, query):
    response = key_client(org).get(URL, query)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert set(response.json()["details"]) <= {"type", "from", "to"}


# --- export -----------------------------------------------------------------------------------------

EXPORT = "/v1/audit/export"


@pytest.fixture
def exporter(growth_org, key_client):
    factories.make_user(org=growth_org)  # a verified owner: plan-gated features need one
    return key_client(growth_org)


def _body(response) -> str:
    assert response.streaming, "the export must stream"
    return b"".join(response.streaming_content).decode()


def _hang_up(response) -> None:
    """Close a response unread, as the server does when its client leaves. Django's test client closes
    streamed responses only once read, and keeps the test's database connection open while it does so."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def _csv_rows(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(_body(response), newline="")))


def test_csv_export_has_the_header_and_one_row_per_event_newest_first(exporter, growth_org):
    _timeline(growth_org)
    response = exporter.get(EXPORT, {"format": "csv"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(r'attachment; filename="audit-events-\d{8}T\d{6}Z\.csv"', response["Content-Disposition"])
    assert response["Cache-Control"] == "no-store"
    rows = _csv_rows(response)
    assert rows[0] == ["event_id", "type", "timestamp", "metadata"]
    assert [row[1] for row in rows[1:]] == ["key_created", "sign", "verify", "sign"]
    assert [json.loads(row[3]) for row in rows[1:]] == [{"n": 4}, {"n": 3}, {"n": 2}, {"n": 1}]
    assert rows[1][2] == "2026-03-04T12:00:00Z"


def test_the_json_export_is_the_list_routes_events_in_one_array(exporter, growth_org):
    _timeline(growth_org)
    audit_write(org=growth_org, type="sign", metadata={"record_id": "r", "nested": {"a": [1, 2.5, None, True]},
                                                       "text": "é \"quoted\" \\ \u2028 ☃"})
    response = exporter.get(EXPORT, {"format": "json"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].endswith('.json"')
    exported = json.loads(_body(response))
    listed = exporter.get(URL, {"limit": 100}).json()["events"]
    assert exported == listed and len(exported) == 5


def test_csv_and_json_carry_the_same_events_with_exact_metadata(exporter, growth_org):
    hostile = {"email": "=HYPERLINK(\"http://evil\")", "url": "+1-2", "name": "@SUM(A1)", "quote": 'a "b", c\r\nd'}
    event = audit_write(org=growth_org, type="team.invite_sent", metadata=hostile)
    rows = _csv_rows(exporter.get(EXPORT, {"format": "csv"}))
    assert rows[1][:2] == [str(event.pk), "team.invite_sent"]
    assert json.loads(rows[1][3]) == hostile
    # No cell starts a spreadsheet formula, and the metadata cell is still the exact JSON.
    assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for row in rows for cell in row)
    assert json.loads(_body(exporter.get(EXPORT, {"format": "json"})))[0]["metadata"] == hostile


def test_an_empty_export_is_a_header_or_an_empty_array(exporter):
    assert _csv_rows(exporter.get(EXPORT, {"format": "csv"})) == [["event_id", "type", "timestamp", "metadata"]]
    assert json.loads(_body(exporter.get(EXPORT, {"format": "json"}))) == []


@pytest.mark.parametrize(("query", "expected"), [
    ({"type": "sign"}, [3, 1]), ({"from": "2026-03-02T12:00:00Z", "to": "2026-03-04T12:00:00Z"}, [3, 2]),
    ({"type": "verify", "to": "2026-03-02"}, []),
])
def test_the_export_takes_the_lists_filters(exporter, growth_org, query, expected):
    _timeline(growth_org)
    for format in ("csv", "json"):
        response = exporter.get(EXPORT, {**query, "format": format})
        listed = [e["metadata"]["n"] for e in exporter.get(URL, query).json()["events"]]
        if format == "csv":
            exported = [json.loads(row[3])["n"] for row in _csv_rows(response)[1:]]
        else:
            exported = [e["metadata"]["n"] for e in json.loads(_body(response))]
        assert exported == listed == expected


@pytest.mark.parametrize("query", [{}, {"format": "xml"}, {"format": "CSV"}, {"format": ""},
                                   *({**bad, "format": "csv"} for bad in BAD_FILTERS)])
def test_a_bad_format_or_filter_is_400_before_anything_streams(exporter, query):
    response = exporter.get(EXPORT, query)
    assert response.status_code == 400 and not response.streaming
    assert response["Content-Type"] == "application/json" and response.json()["error"] == "validation_error"


def test_a_missing_format_names_the_field(exporter):
    assert "format" in exporter.get(EXPORT).json()["details"]


def test_an_accept_header_does_not_change_the_export_or_its_errors(exporter, growth_org):
    _timeline(growth_org)
    assert exporter.get(EXPORT, {"format": "csv"}, HTTP_ACCEPT="application/xml").status_code == 200
    assert exporter.get(EXPORT, {"format": "xml"}, HTTP_ACCEPT="text/csv").json()["error"] == "validation_error"


@pytest.mark.parametrize("plan", ["free", "starter"])
def test_below_growth_the_export_is_402(plan, key_client, session_client):
    org = factories.make_org(plan=plan)
    owner = factories.make_user(org=org)
    audit_write(org=org, type="sign", metadata={})
    for client in (key_client(org), session_client(owner)):
        response = client.get(EXPORT, {"format": "csv"})
        assert response.status_code == 402 and response.json()["error"] == "plan_required"
    # The list itself stays open to every plan.
    assert key_client(org).get(URL).json()["total"] == 1


@pytest.mark.parametrize("plan", ["growth", "scale", "enterprise"])
def test_growth_and_above_export_with_a_key_or_a_session(plan, key_client, session_client):
    org = factories.make_org(plan=plan)
    owner = factories.make_user(org=org)
    member = factories.make_user(org=org, role="user")
    for client in (key_client(org), session_client(owner), session_client(member)):
        response = client.get(EXPORT, {"format": "json"})
        assert response.status_code == 200
        _hang_up(response)


def test_an_unverified_owner_gets_403_on_the_export(growth_org, key_client):
    factories.make_user(org=growth_org, verified=False)
    response = key_client(growth_org).get(EXPORT, {"format": "csv"})
    assert response.status_code == 403 and response.json()["error"] == "email_not_verified"


def test_the_export_needs_a_credential(api_client):
    response = api_client.get(EXPORT, {"format": "csv"})
    assert response.status_code == 401 and response.json()["error"] == "authentication_required"


def test_another_organizations_events_never_appear_in_an_export(exporter, growth_org, key_client):
    rival = factories.make_org(plan="growth")
    factories.make_user(org=rival)
    mine = {str(audit_write(org=growth_org, type="sign", metadata={"who": "me"}).pk) for _ in range(3)}
    for _ in range(4):
        audit_write(org=rival, type="sign", metadata={"who": "rival"})
    for query in ({}, {"type": "sign"}, {"from": "2000-01-01", "to": "2100-01-01"}):
        body = json.loads(_body(exporter.get(EXPORT, {**query, "format": "json"})))
        assert {e["event_id"] for e in body} == mine
        rows = _csv_rows(exporter.get(EXPORT, {**query, "format": "csv"}))
        assert {row[0] for row in rows[1:]} == mine and "rival" not in str(rows)
    assert len(json.loads(_body(key_client(rival).get(EXPORT, {"format": "json"})))) == 4


def test_an_unknown_type_is_told_the_valid_ones(key_client, org):
    message = key_client(org).get(URL, {"type": "sgin"}).json()["details"]["type"][0]
    assert '"sgin"' in message and "sign" in message and "team.role_changed" in message


def test_an_organization_runs_at_most_two_exports_at_a_time(exporter, growth_org, key_client):
    audit_write(org=growth_org, type="sign", metadata={})
    running = [exporter.get(EXPORT, {"format": "csv"}), exporter.get(EXPORT, {"format": "json"})]
    refused = exporter.get(EXPORT, {"format": "csv"})
    assert refused.status_code == 429 and refused.json()["error"] == "rate_limited"
    assert int(refused["Retry-After"]) > 0 and not refused.streaming
    rival = factories.make_org(plan="growth")
    factories.make_user(org=rival)
    other = key_client(rival).get(EXPORT, {"format": "csv"})  # another organization's slots are its own
    assert other.status_code == 200
    _hang_up(other)
    assert len(_csv_rows(running[0])) == 2  # read to the end: the slot is free again
    again = exporter.get(EXPORT, {"format": "csv"})
    assert again.status_code == 200
    _hang_up(running[1])  # closed unread (a client that left): free too
    assert exporter.get(EXPORT, {"format": "json"}).status_code == 200
