"""Signing a file, the record list, and the public verify page: the same services as the API."""

import base64
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from generators.models import Generator
from provenance.models import Record
from tests import audio, factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db


def _sign(client, generator, content: bytes, name: str = "photo.png", **extra):
    return client.post("/dashboard/sign", {"generator": str(generator.pk), "model": "diffusion-v3",
                                           "content": SimpleUploadedFile(name, content), **extra})


def test_signing_returns_the_file_with_its_record_id_and_token(owner_page, org):
    generator = factories.make_generator(org=org, formats=["image"])
    response = _sign(owner_page, generator, photo_bytes("astronaut", "png"))
    assert response.status_code == 302
    html = owner_page.get(response["Location"]).content.decode()
    record = Record.objects.for_org(org).get()
    assert str(record.pk) in html and "Download signed-photo.png" in html and "data:" not in html
    token = re.search(r'id="token" class="secret" readonly rows="2" spellcheck="false">(svc_[^<]+)<', html).group(1)
    download = owner_page.get(re.search(r'href="(/dashboard/sign/[^"]+/download)"', html).group(1))
    assert download["Content-Disposition"] == 'attachment; filename="signed-photo.png"'
    signed = b"".join(download.streaming_content)
    assert signed[:8] == b"\x89PNG\r\n\x1a\n"
    verified = Client().post("/v1/verify", {"content": SimpleUploadedFile("s.png", signed)}).json()
    assert verified["authentic"] and verified["record_id"] == str(record.pk)
    assert Client().post("/v1/verify", {"content": SimpleUploadedFile("s.png", signed), "token": token}).json()[
        "token_source"] == "provided"


def test_signing_with_the_visible_label_keeps_that_the_file_carried_it(owner_page, org):
    from provenance.disclosures import CarriedDisclosure

    generator = factories.make_generator(org=org, formats=["image", "audio"])
    response = _sign(owner_page, generator, photo_bytes("astronaut", "png"), visible="on")
    assert response.status_code == 302
    assert Record.objects.for_org(org).get().disclosures & CarriedDisclosure.VISIBLE
    refused = _sign(owner_page, generator, audio.wav_bytes(audio.tone(2.0)), visible="on")
    assert refused.status_code == 400 and "visible label" in refused.content.decode()
    assert Record.objects.for_org(org).count() == 1


def test_signing_lists_only_active_server_managed_generators_of_the_organization(owner_page, org, outsider_generator):
    server = factories.make_generator(org=org, name="server-one")
    client_managed, _ = factories.make_client_generator(org=org, name="client-one")
    page = owner_page.get("/dashboard/sign").content.decode()
    assert "server-one" in page and "client-one" not in page and "theirs" not in page
    for generator in (client_managed, outsider_generator):
        refused = _sign(owner_page, generator, photo_bytes("astronaut", "png"))
        assert refused.status_code == 400
    assert not Record.objects.exists()
    assert server.pk  # the form offered it


def test_a_format_the_generator_does_not_sign_is_refused_with_the_api_error(owner_page, org):
    generator = factories.make_generator(org=org, formats=["audio"])
    response = _sign(owner_page, generator, photo_bytes("astronaut", "png"))
    assert response.status_code == 400 and "does not sign image" in response.content.decode()


def test_the_free_plan_stops_at_its_allowance_with_402_and_a_billing_link(owner_page, org):
    generator = factories.make_generator(org=org, formats=["image"])
    factories.set_usage(org, 500)
    response = _sign(owner_page, generator, photo_bytes("astronaut", "png"))
    assert response.status_code == 402 and "/dashboard/billing" in response.content.decode()


def test_signing_with_a_c2pa_manifest_needs_growth_and_returns_a_file_carrying_one(owner_page, org):
    from media_codecs.c2pa import read_manifest

    generator = factories.make_generator(org=org, formats=["image"], c2pa_signing="hybrid")
    refused = _sign(owner_page, generator, photo_bytes("astronaut", "png"), c2pa="on")
    assert refused.status_code == 402 and not Record.objects.exists()
    org.plan = "growth"
    org.save(update_fields=["plan"])
    response = _sign(owner_page, generator, photo_bytes("astronaut", "png"), c2pa="on")
    assert response.status_code == 302
    html = owner_page.get(response["Location"]).content.decode()
    download = owner_page.get(re.search(r'href="(/dashboard/sign/[^"]+/download)"', html).group(1))
    manifest = read_manifest(b"".join(download.streaming_content))
    assert manifest.provenance["record_id"] == str(Record.objects.for_org(org).get().pk)
    assert manifest.countersignature is not None  # hybrid: ES256 countersigned with ML-DSA-65


def test_the_sign_upload_is_limited_to_50_mb(owner_page, org):
    generator = factories.make_generator(org=org, formats=["image"])
    response = _sign(owner_page, generator, b"x" * (51 * 1024 * 1024))
    assert response.status_code == 413 and not Record.objects.exists()


# --- records -----------------------------------------------------------------------------------------

def _records(org, count: int):
    generator, seed = factories.make_client_generator(org=org)
    from provenance.services import Submission, record_submit

    for n in range(count):
        body = factories.record_body(generator=generator, seed=seed, content=f"content {n}".encode(), model=f"m-{n}")
        body["signature"] = base64.b64decode(body["signature"])
        record_submit(org=org, submission=Submission(**body))
    return generator


def test_a_client_signed_record_is_labelled_as_such_with_its_format_when_it_has_one(owner_page, org):
    generator, seed = factories.make_client_generator(org=org)
    from provenance.services import Submission, record_submit

    for content, family in ((b"a picture", "image"), (b"something", None)):
        body = factories.record_body(generator=generator, seed=seed, content=content)
        body["signature"] = base64.b64decode(body["signature"])
        record_submit(org=org, submission=Submission(**body, format=family))
    cells = re.findall(r'<td data-label="Format">([^<]*)</td>', owner_page.get("/dashboard/records").content.decode())
    assert sorted(cells) == ["client-signed", "image (client-signed)"]


def test_records_are_listed_newest_first_in_pages_with_links_to_the_public_record(owner_page, org, other_org):
    _records(org, 55)
    _records(other_org, 1)
    first = owner_page.get("/dashboard/records").content.decode()
    newest = Record.objects.for_org(org).order_by("-signed_at").first()
    assert f"/v1/records/{newest.pk}" in first and f"/v1/records/{newest.pk}/c2pa" in first
    assert first.count("/c2pa\"") == 50 and "?page=2" in first
    second = owner_page.get("/dashboard/records?page=2").content.decode()
    assert second.count("/c2pa\"") == 5 and "?page=3" not in second
    theirs = Record.objects.for_org(other_org).get()
    assert str(theirs.pk) not in first + second
    assert owner_page.get("/dashboard/records?page=abc").status_code == 200


# --- public verify page ------------------------------------------------------------------------------

def test_verify_page_explains_a_signed_file_in_words(org):
    generator = factories.make_generator(org=org, formats=["image"])
    from provenance.signing import content_sign

    signed = content_sign(org=org, generator_id=str(generator.pk), model="diffusion-v3",
                          data=photo_bytes("astronaut", "png"), declared_family=None)
    page = Client().post("/verify", {"content": SimpleUploadedFile("x.png", signed.data)}, follow=True)
    html = page.content.decode()
    assert page.status_code == 200
    day = f"{signed.record.signed_at.day} {signed.record.signed_at:%B %Y}"
    assert (f'<h2 id="verdict-h">This file is exactly the content that {org.name} signed with the model diffusion-v3 '
            f"on {day}: its signature checks out") in html
    assert "Confidence: <strong>high</strong>" in html and '<li class="signal held">' in html


def test_verify_page_shows_the_disclosure_the_generator_declared(org):
    generator = factories.make_generator(org=org, formats=["image"])
    Generator.objects.filter(pk=generator.pk).update(
        provider_name="Acme AI", system_name="Acme Diffusion", system_version="3.1",
        digital_source_type="compositeWithTrainedAlgorithmicMedia")
    from provenance.signing import content_sign

    signed = content_sign(org=org, generator_id=str(generator.pk), model="diffusion-v3",
                          data=photo_bytes("astronaut", "png"), declared_family=None)
    html = Client().post("/verify", {"content": SimpleUploadedFile("x.png", signed.data)}, follow=True).content.decode()
    disclosure = re.search(r'<p class="disclosure">(.*?)</p>', html, re.S).group(1)
    assert "Combines generative AI output with other material." in disclosure
    assert "System: <strong>Acme Diffusion</strong> version 3.1, provided by <strong>Acme AI</strong>." in disclosure
    assert f"identifier <code>{signed.record.pk}</code>" in disclosure


def test_verify_page_says_that_finding_nothing_makes_no_claim_either_way():
    page = Client().post("/verify", {"content": SimpleUploadedFile("x.png", photo_bytes("astronaut", "png"))},
                         follow=True)
    html = page.content.decode()
    assert "makes no claim either way" in html and "absence of provenance is not evidence that a person made it" in html
    assert "Confidence: <strong>none</strong>. Nothing was found, so this makes no claim either way." in html
    assert "signal held" not in html  # nothing is shown in green


def test_verify_page_reports_a_tampered_file(org):
    generator = factories.make_generator(org=org, formats=["text"])
    from provenance.signing import content_sign

    signed = content_sign(org=org, generator_id=str(generator.pk), model="m",
                          data=b"Hello there, a paragraph.\n\nAnd a second one here.\n", declared_family=None)
    edited = signed.data.replace(b"Hello", b"Jello")
    page = Client().post("/verify", {"content": SimpleUploadedFile("x.txt", edited), "token": signed.token},
                         follow=True)
    html = page.content.decode()
    assert page.status_code == 200 and f"This is a changed copy of content that {org.name} signed" in html
    assert "not evidence of manipulation" in html and '<li class="signal failed">' in html


def test_verify_page_redirects_to_its_result_so_a_reload_does_not_verify_again(org):
    from audit.models import AuditEvent
    from provenance.signing import content_sign

    generator = factories.make_generator(org=org, formats=["image"])
    signed = content_sign(org=org, generator_id=str(generator.pk), model="m", data=photo_bytes("astronaut", "png"),
                          declared_family=None)
    client = Client()
    posted = client.post("/verify", {"content": SimpleUploadedFile("x.png", signed.data)})
    assert posted.status_code == 302 and posted["Location"].startswith("/verify?result=")
    assert len(posted["Location"]) < 2000  # an address every browser keeps
    assert AuditEvent.objects.filter(type="verify").count() == 1
    for _ in range(2):  # a reload, and the address opened again later
        page = client.get(posted["Location"])
        assert page.status_code == 200 and "This file is exactly the content that" in page.content.decode()
    assert AuditEvent.objects.filter(type="verify").count() == 1


@pytest.mark.parametrize("result", ["garbage", "eyJsZXZlbCI6ImhpZ2gifQ:forged:signature", ""])
def test_a_damaged_or_forged_result_address_shows_the_form_not_a_verdict(result):
    page = Client().get(f"/verify?result={result}")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="verdict-h"' not in html and 'type="file"' in html
    assert ("has expired or its address was changed" in html) is bool(result)


def test_a_result_address_older_than_a_day_has_expired(monkeypatch):
    import time

    from django.core import signing

    client = Client()
    location = client.post("/verify", {"content": SimpleUploadedFile("x.txt", b"hello")})["Location"]
    assert 'id="verdict-h"' in client.get(location).content.decode()
    now = time.time()
    monkeypatch.setattr(signing.time, "time", lambda: now + 24 * 3600 + 1)
    html = client.get(location).content.decode()
    assert "has expired" in html and 'id="verdict-h"' not in html


def test_verify_page_is_limited_per_ip_like_the_api(settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    client = Client()
    assert client.post("/verify", {"content": SimpleUploadedFile("x.txt", b"hello")}).status_code == 302
    assert client.post("/verify", {"content": SimpleUploadedFile("x.txt", b"hello")}).status_code == 429


def test_verify_page_charges_a_files_cost_like_the_api(settings):
    """A twelve-second clip is several verifications' work on the page as on POST /v1/verify: a limit of
    two admits one photo but refuses the clip, before it is decoded."""
    from tests.audio import lame_mp3, noise

    settings.VERIFY_RATE_PER_MINUTE = 2
    clip = SimpleUploadedFile("clip.mp3", lame_mp3(noise(12, channels=1), kbps=32))
    refused = Client().post("/verify", {"content": clip}, REMOTE_ADDR="198.51.100.40")
    assert refused.status_code == 429 and "Retry-After" in refused
    photo = SimpleUploadedFile("photo.jpg", photo_bytes("astronaut", "jpeg"))
    assert Client().post("/verify", {"content": photo}, REMOTE_ADDR="198.51.100.41").status_code == 302
