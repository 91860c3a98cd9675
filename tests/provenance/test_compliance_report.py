"""GET /v1/compliance/report: signatures per format with the disclosures their files carried, verifications of
the organization's content, in JSON for every plan and as CSV and PDF from Growth; `from` included, `to` excluded."""

import csv
import io
import re
import subprocess
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import User
from audit.models import AuditEvent
from provenance.disclosures import DISCLOSURE_NAMES, CarriedDisclosure, disclosure_counts
from provenance.models import Record
from provenance.services import RecordDraft, record_create
from tests import factories
from tests.audio import tone, wav_bytes
from tests.media import photo_bytes
from tests.text_samples import english
from tests.tsa_server import OPENSSL
from tests.video import make_video

pytestmark = pytest.mark.django_db
URL = "/v1/compliance/report"
FORMAT_ROWS = ["image", "audio", "text", "video", None]
EVERYTHING = {"from": "2020-01-01", "to": "2100-01-01"}  # one fixed period for two requests to agree on


def _sign(client, generator, content: bytes, **fields) -> dict:
    body = {"content": io.BytesIO(content), "model": "gen-model", "generator_id": str(generator.pk), **fields}
    response = client.post("/v1/sign", body, format="multipart")
    assert response.status_code == 201, response.content
    return response


def _submit(client, generator, seed, content: bytes, **fields) -> str:
    body = {**factories.record_body(generator=generator, seed=seed, content=content), **fields}
    response = client.post("/v1/records", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()["record_id"]


def _stored(org, generator, disclosures: int | None, format: str) -> Record:
    """A record stored through record_create with the flags given, or none recorded."""
    key = generator.keys.get()
    draft = RecordDraft(key=key, content_hash="sha3-256:" + "1" * 64, model="m", watermark_id="none",
                        signature=b"\0", format=format, disclosures=disclosures)
    return record_create(org=org, draft=draft)


@pytest.fixture
def growth(growth_org):
    factories.make_user(org=growth_org, role="owner")
    return growth_org


@pytest.fixture
def client(key_client, growth):
    return key_client(growth)


@pytest.fixture
def seeded(client, growth, other_org, key_client, api_client):
    """Records of every format and disclosure in `growth`, one verification of its content, and another
    organization's records and verification, which must never count."""
    generator = factories.make_generator(org=growth, formats=["image", "audio", "video", "text"])
    if OPENSSL is not None:  # the C2PA manifest's certificate is made with the openssl command
        signed = _sign(client, generator, photo_bytes("astronaut", "png"), c2pa="true")
        assert signed["X-Service-C2pa"] == "embedded"
    _sign(client, generator, photo_bytes("astronaut", "jpeg"))
    _sign(client, generator, wav_bytes(tone(2.0)))
    text = _sign(client, generator, english().encode())
    _sign(client, generator, make_video("mp4", seconds=1.0))
    client_generator, seed = factories.make_client_generator(org=growth)
    _submit(client, client_generator, seed, b"one")
    _submit(client, client_generator, seed, b"two", format="image")
    _stored(growth, generator, int(CarriedDisclosure.VISIBLE | CarriedDisclosure.METADATA), "image")
    _stored(growth, generator, None, "audio")
    verified = api_client.post("/v1/verify", {"content": io.BytesIO(text.content)}, format="multipart").json()
    assert verified["authentic"], verified
    other_generator, other_seed = factories.make_client_generator(org=other_org)
    other_client = key_client(other_org)
    other_id = _submit(other_client, other_generator, other_seed, b"three", format="image")
    AuditEvent.objects.create(org=other_org, type="verify", metadata={"record_id": other_id})
    return growth


def _expected_formats(org) -> list[dict]:
    """The figures counted in Python from every row: what the report's GROUP BY must agree with."""
    rows = list(Record.objects.filter(org=org).values_list("format", "disclosures"))
    expected = []
    for format in FORMAT_ROWS:
        flags = [value for fmt, value in rows if fmt == format]
        counts = {name: sum(1 for value in flags if value is not None and value & flag)
                  for name, flag in zip(DISCLOSURE_NAMES, CarriedDisclosure, strict=True)}
        expected.append({"format": format, "signatures": len(flags),
                         "disclosures": {**counts, "not_recorded": flags.count(None)}})
    return expected


def test_the_figures_equal_the_databases_and_another_organizations_never_count(client, seeded):
    response = client.get(URL)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["formats"] == _expected_formats(seeded)
    assert body["signatures"] == Record.objects.filter(org=seeded).count()
    assert body["verifications"] == AuditEvent.objects.filter(org=seeded, type="verify").count() == 1
    assert body["organization"] == {"id": str(seeded.pk), "name": seeded.name}
    assert body["detection_tool_url"] == f"{settings.PUBLIC_BASE_URL}/verify"
    by_format = {row["format"]: row for row in body["formats"]}
    # What each signing wrote: image, audio, text and video marked; client records nothing.
    assert by_format["image"]["disclosures"]["mark"] >= 1 and by_format["image"]["disclosures"]["visible"] == 1
    assert by_format["video"]["disclosures"] == {"mark": 1, "metadata": 1, "c2pa": 0, "visible": 0,
                                                 "not_recorded": 0}
    assert by_format["audio"]["disclosures"]["not_recorded"] == 1
    assert by_format[None] == {"format": None, "signatures": 1, "disclosures": dict.fromkeys(
        [*DISCLOSURE_NAMES, "not_recorded"], 0)}
    if OPENSSL is not None:
        assert by_format["image"]["disclosures"]["c2pa"] == 1


def test_server_signing_records_what_its_file_carried(client, growth):
    generator = factories.make_generator(org=growth, formats=["image", "video"])
    image = _sign(client, generator, photo_bytes("astronaut", "jpeg"))
    video = _sign(client, generator, make_video("mp4", seconds=1.0))
    unmarked = _sign(client, generator, make_video("mp4", seconds=1.0), watermark="false")
    both = CarriedDisclosure.MARK | CarriedDisclosure.METADATA
    assert Record.objects.get(pk=image["X-Service-Record-Id"]).disclosures == both
    assert Record.objects.get(pk=video["X-Service-Record-Id"]).disclosures == both
    assert Record.objects.get(pk=unmarked["X-Service-Record-Id"]).disclosures == CarriedDisclosure.METADATA


def test_client_managed_records_carry_no_disclosure(client, growth):
    generator, seed = factories.make_client_generator(org=growth)
    record_id = _submit(client, generator, seed, b"content", format="image")
    assert Record.objects.get(pk=record_id).disclosures == 0


def test_the_report_is_counted_by_the_database_in_a_bounded_number_of_queries(client, seeded):
    with CaptureQueriesContext(connection) as queries:
        assert client.get(URL).status_code == 200
    report_queries = [query["sql"] for query in queries if "provenance_record" in query["sql"]
                      or "audit_auditevent" in query["sql"]]
    assert len(report_queries) == 2, report_queries
    assert any("GROUP BY" in sql and "COUNT(" in sql for sql in report_queries)


def _client_record_at(client, generator, seed, moment: datetime, content: bytes) -> str:
    record_id = _submit(client, generator, seed, content)
    Record.objects.filter(pk=record_id).update(signed_at=moment)
    return record_id


def test_from_is_included_and_to_excluded(client, growth):
    generator, seed = factories.make_client_generator(org=growth)
    start, end = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 8, tzinfo=UTC)
    for index, moment in enumerate([start - timedelta(microseconds=1), start, end - timedelta(microseconds=1), end]):
        _client_record_at(client, generator, seed, moment, f"item {index}".encode())
    AuditEvent.objects.create(org=growth, type="verify", timestamp=start)
    AuditEvent.objects.create(org=growth, type="verify", timestamp=end)
    body = client.get(URL, {"from": "2026-03-01T00:00:00Z", "to": "2026-03-08"}).json()
    assert body["signatures"] == 2 and body["verifications"] == 1
    assert body["period"] == {"from": "2026-03-01T00:00:00Z", "to": "2026-03-08T00:00:00Z"}


def test_a_to_in_the_first_days_of_year_one_starts_the_period_at_the_first_instant(client):
    body = client.get(URL, {"to": "0001-01-02"}).json()
    assert body["period"] == {"from": "0001-01-01T00:00:00Z", "to": "0001-01-02T00:00:00Z"}


def test_the_default_period_is_the_last_30_days(client, growth):
    generator, seed = factories.make_client_generator(org=growth)
    now = timezone.now()
    _client_record_at(client, generator, seed, now - timedelta(days=29), b"recent")
    _client_record_at(client, generator, seed, now - timedelta(days=31), b"old")
    body = client.get(URL).json()
    assert body["signatures"] == 1
    since, until = (datetime.fromisoformat(body["period"][end]) for end in ("from", "to"))
    assert until - since == timedelta(days=30) and abs(until - now) < timedelta(minutes=5)


def test_a_session_gets_the_same_report_as_a_key(client, seeded, session_client):
    owner = User.objects.get(org=seeded, role="owner")
    by_key, by_session = client.get(URL).json(), session_client(owner).get(URL).json()
    for body in (by_key, by_session):
        body.pop("generated_at")
    assert by_key["formats"] == by_session["formats"] and by_key["verifications"] == by_session["verifications"]


def test_another_organization_sees_only_its_own(key_client, seeded, other_org):
    body = key_client(other_org).get(URL).json()
    assert body["organization"]["id"] == str(other_org.pk)
    assert body["signatures"] == 1 and body["verifications"] == 1


def test_no_credential_is_401(api_client):
    response = api_client.get(URL)
    assert response.status_code == 401 and response.json()["error"] == "authentication_required"


@pytest.mark.parametrize("format", ["csv", "pdf"])
def test_documents_need_growth(key_client, org, owner, format):
    client = key_client(org)
    response = client.get(URL, {"format": format})
    assert response.status_code == 402
    assert response.json()["error"] == "plan_required" and response.json()["message"]
    assert client.get(URL).status_code == 200  # JSON on every plan


@pytest.mark.parametrize("query, field", [
    ({"from": "yesterday"}, "from"), ({"to": "2026-13-01"}, "to"), ({"format": "xml"}, "format"),
    ({"from": "2026-03-02", "to": "2026-03-01"}, "from"), ({"from": "2026-03-01", "to": "2026-03-01"}, "from"),
])
def test_bad_parameters_are_400_with_the_envelope(client, query, field):
    response = client.get(URL, query)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "validation_error" and field in body["details"], body


def test_csv_has_a_row_per_format_then_the_verifications(client, seeded):
    figures = client.get(URL, EVERYTHING).json()
    response = client.get(URL, {**EVERYTHING, "format": "csv"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert re.fullmatch(r'attachment; filename="compliance-report-\d{8}T\d{6}Z-\d{8}T\d{6}Z\.csv"',
                        response["Content-Disposition"])
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["format", "signatures", *DISCLOSURE_NAMES, "not_recorded"]
    for row, expected in zip(rows[1:6], figures["formats"], strict=True):
        assert row[0] == (expected["format"] or "unspecified")
        assert [int(cell) for cell in row[1:]] == [expected["signatures"], *expected["disclosures"].values()]
    assert rows[6][:2] == ["all", str(figures["signatures"])]
    assert rows[7] == ["verifications", str(figures["verifications"])]


def _pdftotext(data: bytes, tmp_path) -> str:
    path = tmp_path / "report.pdf"
    path.write_bytes(data)
    subprocess.run(["qpdf", "--check", str(path)], check=True, capture_output=True, timeout=60)
    return subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                          timeout=60).stdout.decode()


@pytest.mark.skipif(subprocess.run(["which", "pdftotext"], capture_output=True).returncode != 0
                    or subprocess.run(["which", "qpdf"], capture_output=True).returncode != 0,
                    reason="needs poppler-utils (pdftotext) and qpdf")
def test_pdf_is_accepted_by_qpdf_and_pdftotext_reads_its_figures(client, seeded, tmp_path):
    figures = client.get(URL, EVERYTHING).json()
    response = client.get(URL, {**EVERYTHING, "format": "pdf"})
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    text = _pdftotext(response.content, tmp_path)
    assert "AI content disclosure report" in text and seeded.name in text
    assert figures["period"]["from"] in text and figures["detection_tool_url"] in text
    lines = {line.split()[0]: line.split()[1:] for line in text.splitlines() if line.strip()}
    for expected in figures["formats"]:
        assert lines[expected["format"] or "unspecified"] == [str(expected["signatures"]),
                                                              *map(str, expected["disclosures"].values())]
    assert f"period: {figures['verifications']}" in text


def test_counts_by_flags_add_up():
    counts = Counter({3: 4, 2: 1, 7: 2, 0: 5, 8: 1})
    assert disclosure_counts(counts) == {"mark": 6, "metadata": 7, "c2pa": 2, "visible": 1}


def test_a_worker_loads_fpdf_only_to_render_a_pdf():
    """fpdf2 and fontTools are about 60 MB resident: every worker serves the URL conf, few render a PDF."""
    import os
    import sys as this_sys

    code = ("import django, sys; django.setup(); import config.urls, dashboard.urls, provenance.compliance_documents; "
            "assert 'fpdf' not in sys.modules, 'fpdf loaded'")
    env = {**os.environ, "DEBUG": "true", "DJANGO_SETTINGS_MODULE": "config.settings"}
    env.pop("DATABASE_URL", None)
    result = subprocess.run([this_sys.executable, "-c", code], env=env, capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr.decode()[-2000:]


def test_plain_text_records_no_metadata_it_cannot_carry(client, growth):
    generator = factories.make_generator(org=growth, formats=["text"])
    plain = _sign(client, generator, english().encode())
    html = _sign(client, generator, b"<!doctype html><html><head></head><body><p>" + english().encode() + b"</p></body>"
                 b"</html>")
    assert Record.objects.get(pk=plain["X-Service-Record-Id"]).disclosures == CarriedDisclosure.MARK
    assert Record.objects.get(pk=html["X-Service-Record-Id"]).disclosures == (
        CarriedDisclosure.MARK | CarriedDisclosure.METADATA)
