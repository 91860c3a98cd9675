"""The public /verify page in Chromium: drop a file on it, read the verdict in words."""

import base64

import pytest
from rest_framework.test import APIClient

from provenance.signing import content_sign
from record_format import crypto
from record_format.hashing import content_hash_of_file
from record_format.payload import signed_payload_bytes
from tests import factories
from tests.browser.page_checks import look
from tests.media import photo_bytes, reencode_jpeg

pytestmark = pytest.mark.django_db(transaction=True)

GREEN = "rgb(21, 128, 61)"  # --good in app.css

# A file dropped the way a browser drops one: a DataTransfer carrying a File, through dragenter, dragover
# and drop on the zone.
DROP = """async ({data, name, type}) => {
  const bytes = Uint8Array.from(atob(data), c => c.charCodeAt(0));
  const files = new DataTransfer();
  files.items.add(new File([bytes], name, {type}));
  const zone = document.querySelector("[data-dropzone]");
  for (const kind of ["dragenter", "dragover", "drop"]) {
    zone.dispatchEvent(new DragEvent(kind, {dataTransfer: files, bubbles: true, cancelable: true}));
  }
}"""


def _drop(page, data: bytes, name: str, mime: str) -> None:
    page.goto("/verify")
    page.wait_for_selector(".dropzone.active")  # the script has made the zone live
    assert page.is_visible(".dropzone [data-dropzone-hint]")
    with page.expect_navigation():
        page.evaluate(DROP, {"data": base64.b64encode(data).decode(), "name": name, "type": mime})


def _headline(page) -> str:
    return page.inner_text("#verdict-h")


def _colours(page, state: str) -> list[str]:
    return page.eval_on_selector_all(f".signal.{state} .sign", "els => els.map(e => getComputedStyle(e).color)")


@pytest.fixture
def signed_jpeg(db):
    org = factories.make_org(name="Acme Labs")
    generator = factories.make_generator(org=org, formats=["image"])
    return content_sign(org=org, generator_id=str(generator.pk), model="diffusion-v3",
                        data=photo_bytes("astronaut", "jpeg"), declared_family=None)


def test_a_dropped_signed_file_gets_its_verdict_in_words(page, signed_jpeg):
    _drop(page, signed_jpeg.data, "signed.jpg", "image/jpeg")
    assert _headline(page).startswith("This file is exactly the content that Acme Labs signed with the model "
                                      "diffusion-v3 on ")
    assert "Confidence: high." in page.inner_text(".verdict")
    assert page.eval_on_selector(".verdict", "e => getComputedStyle(e).borderLeftColor") == GREEN
    assert _colours(page, "held") == [GREEN] * 4
    look(page, "verify-dropped-signed")


def test_a_dropped_unsigned_file_makes_no_claim_and_shows_nothing_green(page):
    _drop(page, photo_bytes("rocket", "png"), "mine.png", "image/png")
    assert _headline(page) == ("No provenance was found: no token, watermark or signed record matches this file. "
                               "This makes no claim either way: absence of provenance is not evidence that a "
                               "person made it.")
    assert "Confidence: none. Nothing was found, so this makes no claim either way." in page.inner_text(".verdict")
    assert _colours(page, "held") == [] and GREEN not in _colours(page, "absent")
    assert page.eval_on_selector(".verdict", "e => getComputedStyle(e).borderLeftColor") != GREEN
    look(page, "verify-dropped-unsigned")


def test_a_changed_copy_shows_what_did_not_hold_in_red_not_green(page, signed_jpeg):
    _drop(page, reencode_jpeg(signed_jpeg.data, 80), "resaved.jpg", "image/jpeg")
    assert _headline(page).startswith("This is a changed copy of content that Acme Labs signed")
    failed = page.eval_on_selector_all(".signal.failed", "els => els.map(e => e.innerText)")
    assert [text.split(":")[0].lstrip("✗ ").strip() for text in failed] == ["Content unchanged"]
    assert GREEN not in _colours(page, "failed")
    look(page, "verify-dropped-changed-copy")


def test_choosing_the_file_and_clicking_verify_still_works(page, signed_jpeg):
    page.goto("/verify")
    page.set_input_files("#id_content", files=[{"name": "s.jpg", "mimeType": "image/jpeg",
                                                "buffer": signed_jpeg.data}])
    page.focus("button[type=submit]")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert _headline(page).startswith("This file is exactly the content that Acme Labs signed")


def test_without_javascript_the_plain_file_input_verifies(browser, live_server, signed_jpeg):
    context = browser.new_context(base_url=live_server.url, java_script_enabled=False,
                                  viewport={"width": 1440, "height": 900})
    try:
        page = context.new_page()
        page.goto("/verify")
        # No promise of a drop without the script.
        assert page.eval_on_selector_all("[data-dropzone-hint]", "els => els.filter(e => e.offsetParent).length") == 0
        look(page, "verify-without-javascript")
        page.set_input_files("#id_content", files=[{"name": "s.jpg", "mimeType": "image/jpeg",
                                                    "buffer": signed_jpeg.data}])
        with page.expect_navigation():
            page.click("button[type=submit]")
        assert _headline(page).startswith("This file is exactly the content that Acme Labs signed")
    finally:
        context.close()


def test_reload_and_back_show_the_verdict_without_verifying_again(page, signed_jpeg):
    from audit.models import AuditEvent

    _drop(page, signed_jpeg.data, "signed.jpg", "image/jpeg")
    headline = _headline(page)
    assert page.url.split("?")[0].endswith("/verify") and "result=" in page.url
    page.reload()
    assert _headline(page) == headline
    page.goto("/verify")
    page.go_back()
    assert _headline(page) == headline
    assert AuditEvent.objects.filter(type="verify").count() == 1


def test_a_file_another_organization_signed_from_a_copy_names_that_organization(page, signed_jpeg):
    resaved = reencode_jpeg(signed_jpeg.data, 92)  # Acme Labs' mark still reads in it
    bravo = factories.make_org(name="Bravo Studio")
    generator, seed = factories.make_client_generator(org=bravo)
    payload = {"content_hash": content_hash_of_file(resaved), "generator_id": str(generator.pk),
               "model": "photo-gen", "watermark_id": "none"}
    body = {**payload, "signed_payload": payload,
            "signature": base64.b64encode(crypto.sign(seed, signed_payload_bytes(**payload))).decode()}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=bravo)}")
    assert client.post("/v1/records", body, format="json").status_code == 201

    _drop(page, resaved, "bravo.jpg", "image/jpeg")
    headline = _headline(page)
    assert headline.startswith("This file is exactly the content that Bravo Studio signed with the model photo-gen")
    assert "invisible watermark of content that Acme Labs signed" in headline
    assert "Confidence: medium." in page.inner_text(".verdict")
    classes = page.eval_on_selector_all(".signal", "els => els.map(e => [e.innerText.trim().slice(2, 11), "
                                                   "e.className])")
    assert ["Watermark", "signal absent"] in classes  # another organization's mark is not this record's
    look(page, "verify-dropped-two-organizations")


def test_a_file_with_a_hybrid_manifest_lists_its_content_credentials_checks(page):
    org = factories.make_org(name="Acme Labs", plan="growth")
    factories.make_user(org=org, role="owner")
    generator = factories.make_generator(org=org, formats=["image"], c2pa_signing="hybrid")
    signed = content_sign(org=org, generator_id=str(generator.pk), model="diffusion-v3",
                          data=photo_bytes("astronaut", "jpeg"), declared_family=None, c2pa=True)
    assert signed.manifest
    _drop(page, signed.data, "credentials.jpg", "image/jpeg")
    section = page.inner_text(".credentials")
    assert "Content Credentials (C2PA)" in section
    assert "signed with a classical signature (ES256)" in section and "post-quantum one (ML-DSA-65)" in section
    labels = page.eval_on_selector_all(".credentials .signal strong", "els => els.map(e => e.textContent)")
    assert labels == ["Manifest signature", "Post-quantum signature", "Signer's certificate", "Trusted time",
                      "File unchanged", "Statements unchanged", "Earlier versions"]
    held = page.eval_on_selector_all(".credentials .signal.held strong", "els => els.map(e => e.textContent)")
    assert {"Manifest signature", "Post-quantum signature", "Signer's certificate", "File unchanged"} <= set(held)
    page.reload()  # the result travels in its address: a reload shows the same checks
    assert page.inner_text(".credentials") == section
    look(page, "verify-content-credentials")
