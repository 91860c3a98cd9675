"""The sign page's result: post/redirect/get, a streamed attachment kept in the database for the member
who signed, an hour, then purged."""

import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from dashboard import selectors
from dashboard.models import SignedFile
from dashboard.services import download_filename
from provenance.models import Record
from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_page(owner_page, org):
    """The address of the result page of one signing by the owner."""
    generator = factories.make_generator(org=org, formats=["image"])
    response = owner_page.post("/dashboard/sign", {"generator": str(generator.pk), "model": "diffusion-v3",
                                                   "content": SimpleUploadedFile("astronaut.png", photo_bytes(
                                                       "astronaut", "png"))})
    assert response.status_code == 302
    return response["Location"]


def _download_path(html: str) -> str:
    return re.search(r'href="(/dashboard/sign/[0-9a-f-]+/download)"', html).group(1)


def test_reloading_the_result_page_does_not_sign_again(owner_page, org, signed_page):
    first = owner_page.get(signed_page)
    second = owner_page.get(signed_page)
    assert first.status_code == second.status_code == 200
    assert Record.objects.for_org(org).count() == 1 and SignedFile.objects.count() == 1
    record = Record.objects.for_org(org).get()
    html = second.content.decode()
    assert str(record.pk) in html and "svc_" in html  # the record id and the token beside the link
    assert "data:" not in html and "base64" not in html


def test_the_download_is_a_streamed_attachment_that_verifies(owner_page, org, signed_page):
    response = owner_page.get(_download_path(owner_page.get(signed_page).content.decode()))
    assert response.status_code == 200 and response.streaming
    assert response["Content-Disposition"] == 'attachment; filename="signed-astronaut.png"'
    assert response["Content-Type"] == "image/png"
    signed = b"".join(response.streaming_content)
    assert int(response["Content-Length"]) == len(signed)
    verified = Client().post("/v1/verify", {"content": SimpleUploadedFile("s.png", signed)}).json()
    assert verified["authentic"] and verified["record_id"] == str(Record.objects.for_org(org).get().pk)


def test_the_bytes_are_read_a_chunk_at_a_time(owner_page, signed_page, monkeypatch, django_assert_num_queries):
    monkeypatch.setattr(selectors, "CHUNK_BYTES", 1000)
    kept = SignedFile.objects.get()
    whole = bytes(kept.data)
    pieces = list(selectors.signed_file_chunks(SignedFile.objects.defer("data").get()))
    assert b"".join(pieces) == whole
    assert [len(piece) for piece in pieces[:-1]] == [1000] * (len(pieces) - 1) and len(pieces) > 5
    with django_assert_num_queries(1):
        next(selectors.signed_file_chunks(kept))


def test_another_member_or_organization_cannot_open_the_download(signed_page, owner_page, admin_user, outsider,
                                                                   page_client):
    download = _download_path(owner_page.get(signed_page).content.decode())
    for person in (admin_user, outsider):
        client = page_client(person)
        assert client.get(signed_page).status_code == 404
        assert client.get(download).status_code == 404
    assert Client().get(download).status_code == 302  # to the sign-in


def test_after_an_hour_the_download_is_gone_and_purge_expired_deletes_it(owner_page, signed_page):
    download = _download_path(owner_page.get(signed_page).content.decode())
    SignedFile.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    gone = owner_page.get(download)
    assert gone.status_code == 404 and "Sign the file again" in gone.content.decode()
    assert owner_page.get(signed_page).status_code == 404
    call_command("purge_expired", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert not SignedFile.objects.exists() and Record.objects.exists()  # the record stays


def test_purge_expired_keeps_downloads_within_their_hour(signed_page):
    call_command("purge_expired", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert SignedFile.objects.count() == 1


@pytest.mark.parametrize(("upload", "expected"), [
    ("photo.png", "signed-photo.png"), ("../../etc/passwd", "signed-passwd"), ("C:\\x\\a b.jpg", "signed-a b.jpg"),
    ('quo"te\r\n.png', "signed-quo_te_.png"), ("...", "signed-file"), ("é.png", "signed-_.png")])
def test_the_download_name_has_no_folders_or_header_breaking_characters(upload, expected):
    assert download_filename(upload) == expected
