"""The Compliance page: the period's figures as GET /v1/compliance/report gives them, CSV and PDF downloads from
Growth (shown disabled below it), and a page for every period typed, never a 500."""

import csv
import io
from datetime import UTC, datetime

import pytest

from audit.models import AuditEvent
from provenance.models import Record
from tests import factories

pytestmark = pytest.mark.django_db
PAGE = "/dashboard/compliance"
DOWNLOAD = "/dashboard/compliance/download"


def _records(client, org, moments: list[datetime]) -> None:
    generator, seed = factories.make_client_generator(org=org)
    for index, moment in enumerate(moments):
        body = factories.record_body(generator=generator, seed=seed, content=f"item {index}".encode())
        response = client.post("/v1/records", {**body, "format": "image"}, format="json")
        assert response.status_code == 201, response.content
        Record.objects.filter(pk=response.json()["record_id"]).update(signed_at=moment)


@pytest.fixture
def growth_owner(growth_org):
    return factories.make_user(org=growth_org, role="owner")


def test_the_page_shows_the_same_figures_as_the_api(growth_org, growth_owner, page_client, key_client):
    client = key_client(growth_org)
    _records(client, growth_org, [datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 3, 23, 59, tzinfo=UTC),
                                  datetime(2026, 3, 4, tzinfo=UTC)])
    AuditEvent.objects.create(org=growth_org, type="verify", timestamp=datetime(2026, 3, 2, tzinfo=UTC))
    api = client.get("/v1/compliance/report", {"from": "2026-03-01", "to": "2026-03-04"}).json()
    response = page_client(growth_owner).get(PAGE, {"from": "2026-03-01", "to": "2026-03-03"})
    assert response.status_code == 200
    report = response.context["report"]
    assert report.total.signatures == api["signatures"] == 2 and report.verifications == api["verifications"] == 1
    assert [(row.format, row.signatures) for row in report.formats] == [
        (row["format"], row["signatures"]) for row in api["formats"]]
    page = response.content.decode()
    assert api["detection_tool_url"] in page and 'aria-current="page">Compliance' in page
    assert f"{DOWNLOAD}?from=2026-03-01&amp;to=2026-03-03&amp;format=csv" in page


def test_the_downloads_are_the_apis_documents(growth_org, growth_owner, page_client, key_client):
    client = key_client(growth_org)
    _records(client, growth_org, [datetime(2026, 3, 1, tzinfo=UTC)])
    response = page_client(growth_owner).get(DOWNLOAD, {"format": "csv", "from": "2026-03-01", "to": "2026-03-01"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    api = client.get("/v1/compliance/report", {"format": "csv", "from": "2026-03-01", "to": "2026-03-02"})
    assert response.content == api.content
    assert list(csv.reader(io.StringIO(response.content.decode())))[1][:2] == ["image", "1"]
    pdf = page_client(growth_owner).get(DOWNLOAD, {"format": "pdf"})
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")


def test_below_growth_the_downloads_are_disabled_with_an_upgrade_hint(owner, page_client):
    page = page_client(owner).get(PAGE)
    assert page.status_code == 200
    text = page.content.decode()
    assert 'aria-disabled="true"' in text and "?plan=growth" in text and DOWNLOAD not in text
    refused = page_client(owner).get(DOWNLOAD, {"format": "pdf"})
    assert refused.status_code == 402 and b"Growth" in refused.content


@pytest.mark.parametrize("query", [{"from": "yesterday"}, {"to": "2026-02-30"}, {"from": "2026-03-02", "to":
                                   "2026-03-01"}, {"to": "9999-12-31"}, {"from": "0001-01-01", "to": "0001-01-02"},
                                   {"from": "2999-01-01"}])
def test_every_period_typed_answers_a_page(owner, page_client, query):
    response = page_client(owner).get(PAGE, query)
    assert response.status_code == 200
    assert ("report" in response.context) == (query.get("from") == "0001-01-01")


def test_a_bad_download_is_a_400_page_and_a_bare_one_goes_to_the_page(growth_owner, page_client):
    client = page_client(growth_owner)
    assert client.get(DOWNLOAD, {"format": "xml"}).status_code == 400
    assert client.get(DOWNLOAD, {"format": "csv", "from": "nope"}).status_code == 400
    bare = client.get(DOWNLOAD, {"from": "2026-03-01"})
    assert bare.status_code == 302 and bare["Location"] == f"{PAGE}?from=2026-03-01"


def test_another_organizations_records_never_count(growth_owner, page_client, other_org, key_client):
    _records(key_client(other_org), other_org, [datetime.now(UTC)])
    response = page_client(growth_owner).get(PAGE)
    assert response.context["report"].total.signatures == 0


def test_a_visitor_is_sent_to_sign_in(client):
    response = client.get(PAGE)
    assert response.status_code == 302 and "/login" in response["Location"]
