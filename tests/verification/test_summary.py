"""The verdict in words (verification/summary.py): every state a verification can end in has one or two
plain sentences that say what was found and what it means; the page shows green only for what held."""

import itertools
import re
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from django.template.loader import render_to_string

from dashboard.forms import VerifyForm
from dashboard.verdicts import verdict_from_token, verdict_in_words, verdict_token
from generators.models import Generator
from verification import summary as words
from verification.services import PassedOver, Verification, _conclude

SIGNED_AT = datetime(2026, 11, 3, 14, 5, tzinfo=UTC)
FORBIDDEN = ("edited after signing", "tamper", "forged", "fake", "human-made", "made by a person.")


def _record(org: str = "Acme Labs", model: str = "diffusion-xl", *, revoked: bool = False):
    return SimpleNamespace(pk="00000000-0000-0000-0000-000000000001", org=SimpleNamespace(name=org), model=model,
                           signed_at=SIGNED_AT, generator=Generator(  # unsaved: what a record's generator answers
                               status=Generator.Status.REVOKED if revoked else Generator.Status.ACTIVE,
                               provider_name="Acme", system_name="Acme Diffusion", system_version="3.1",
                               digital_source_type="trainedAlgorithmicMedia"),
                           watermark_id="00000000000000aa")


OTHER = _record("Bravo Studio", "photo-gen")
PASSED_OVER = {
    "none": None,
    "other mark": PassedOver(source="watermark", record=OTHER, problem="content_tampered"),
    "unknown mark": PassedOver(source="watermark", record=None, problem="record_not_found"),
    "other token": PassedOver(source="xmp", record=OTHER, problem="content_tampered"),
    "broken token": PassedOver(source="c2pa", record=None, problem="invalid_token"),
}
SOURCES = ["provided", "c2pa", "xmp", "metadata", "watermark", "content_hash", "phash", "none"]


def _states():
    """Every combination of the Verification's signals, as the service concludes them (`_conclude`)."""
    for source, found, revoked, valid, tampered, mark, passed in itertools.product(
            SOURCES, (True, False), (False, True), (True, False), (True, False), (True, False), PASSED_OVER):
        if not found and (revoked or not valid or tampered or passed != "none"):
            continue  # without a record there is no signature or content to check
        if passed != "none" and (source != "content_hash" or tampered):
            continue  # only the exact bytes' record passes something over, and it matches the file
        problems = []
        if not found:
            problems = {"none": [], "phash": [], "content_hash": []}.get(source, ["record_not_found"])
        else:
            valid = valid and not revoked
            problems = [problem for problem, holds in (("signature_invalid", not valid),
                                                       ("content_tampered", tampered)) if holds]
        result = Verification(token_source=source, watermark_found=mark, signature_valid=found and valid,
                              tampered=found and tampered, record=_record(revoked=revoked) if found else None,
                              problems=problems, passed_over=PASSED_OVER[passed])
        _conclude(result)
        yield pytest.param(result, id=f"{source}-{'record' if found else 'none'}-{'revoked' if revoked else ''}"
                                      f"{'valid' if valid else 'invalid'}-{'changed' if tampered else 'same'}-"
                                      f"{'mark' if mark else 'nomark'}-{passed.replace(' ', '_')}")
    for source in ("provided", "xmp", "c2pa", "metadata"):
        result = Verification(token_source=source, problems=["invalid_token"])
        _conclude(result)
        yield pytest.param(result, id=f"{source}-invalid_token")


STATES = list(_states())


def _sentences(text: str) -> int:
    return len(re.findall(r"[.!?](?:\s+(?=[A-Z])|$)", text))


@pytest.mark.parametrize("result", STATES)
def test_every_state_has_one_or_two_plain_sentences(result):
    text = words.summary(result)
    assert 1 <= _sentences(text) <= 2, text
    assert text[0].isupper() and text.endswith("."), text
    assert not any(word in text.lower() for word in FORBIDDEN), text


@pytest.mark.parametrize("result", STATES)
def test_the_words_say_what_was_found_and_what_it_means(result):
    text = words.summary(result)
    if result.record is None:
        assert "makes no claim either way" in text, text
        return
    # A found record is named: organization, model and day.
    assert "Acme Labs" in text and "diffusion-xl" in text and "3 November 2026" in text, text
    if result.authentic:
        assert text.startswith("This file is exactly the content that Acme Labs signed") and "checks out" in text
    elif result.record.generator.is_revoked:
        assert "revoked" in text and "no longer counts" in text, text
    elif not result.signature_valid:
        assert "does not check out" in text, text
    else:  # tampered, the signature good: a changed copy, not evidence of malice
        assert "changed copy of content that Acme Labs signed" in text, text
        assert "bytes differ" in text or "not byte for byte" in text, text
        assert "Re-saving, resizing or converting" in text, text
    other = result.passed_over
    if other is not None and result.signature_valid:
        assert ("Bravo Studio" in text) is (other.record is not None), text


@pytest.mark.parametrize("result", STATES)
def test_only_a_signal_that_held_is_green(result):
    held = {signal.label for signal in words.signals(result) if signal.state == "held"}
    expected = {label for label, holds in (
        ("Watermark", result.watermark_found),
        ("Record", result.record is not None),
        ("Signature", result.record is not None and result.signature_valid),
        ("Content unchanged", result.record is not None and not result.tampered)) if holds}
    assert held == expected


@pytest.mark.parametrize("result", STATES)
def test_the_page_renders_every_state_with_the_summary_as_headline(result):
    verdict = verdict_from_token(verdict_token(verdict_in_words(result)))  # as the result page gets it
    html = render_to_string("dashboard/verify.html", {"form": VerifyForm(), "verdict": verdict})
    headline = re.search(r'<h2 id="verdict-h">(.*?)</h2>', html, re.S).group(1)
    assert headline == words.summary(result).replace("'", "&#x27;")
    green = re.findall(r'<li class="signal held">.*?<strong>(.*?)</strong>', html, re.S)
    assert set(green) == {signal.label for signal in words.signals(result) if signal.state == "held"}
    if result.confidence == "none":
        assert "makes no claim either way" in html and 'class="verdict none"' in html


def test_the_two_organization_case_in_words():
    result = Verification(token_source="content_hash", record=_record("Bravo Studio", "photo-gen"),
                          signature_valid=True, passed_over=PassedOver(
                              source="watermark", record=_record(), problem="content_tampered"))
    _conclude(result)
    assert words.summary(result) == (
        "This file is exactly the content that Bravo Studio signed with the model photo-gen on 3 November 2026: "
        "its signature checks out and the content has not changed since. It also carries the invisible "
        "watermark of content that Acme Labs signed with the model diffusion-xl on 3 November 2026, so it was "
        "made from that content.")
    assert result.confidence == "medium"


def test_a_resaved_copy_found_by_its_watermark_is_a_changed_copy_not_an_edit():
    result = Verification(token_source="watermark", watermark_found=True, record=_record(), signature_valid=True,
                          tampered=True, problems=["content_tampered"])
    _conclude(result)
    assert words.summary(result) == (
        "This is a changed copy of content that Acme Labs signed with the model diffusion-xl on 3 November 2026: "
        "its invisible watermark names that signing, but its bytes differ. Re-saving, resizing or converting a "
        "file makes such a copy, so this is not evidence of manipulation; the signature vouches only for the "
        "original file.")


def test_no_provenance_makes_no_claim_either_way():
    result = Verification()
    _conclude(result)
    assert words.summary(result) == (
        "No provenance was found: no token, watermark or signed record matches this file. This makes no claim "
        "either way: absence of provenance is not evidence that a person made it.")
    assert words.CONFIDENCE["none"] == "Nothing was found, so this makes no claim either way."


# --- the same words through the API, on real files ---------------------------------------------------------

def _api_cases():
    return ["signed", "resaved", "revoked", "altered token", "unknown token", "unsigned", "client signed"]


@pytest.mark.django_db
@pytest.mark.parametrize("case", _api_cases())
def test_the_api_and_the_batch_carry_the_summary(api_client, key_client, org, case):
    import base64
    import io
    import uuid

    from core.keyring import token_mac_keys
    from provenance.tokens import mint_token
    from tests import factories
    from tests.media import photo_bytes, reencode_jpeg

    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("coffee", "jpeg")), "model": "m1",
                                               "generator_id": str(generator.pk)}, format="multipart")
    token = signed["X-Service-Token"]
    content, given, expected = {
        "signed": (signed.content, None, f"This file is exactly the content that {org.name} signed with the model m1"),
        "resaved": (reencode_jpeg(signed.content, 80), None, f"This is a changed copy of content that {org.name}"),
        "revoked": (signed.content, None, f"A record says that {org.name} signed this content with the model m1"),
        "altered token": (photo_bytes("rocket", "jpeg"), token[:-2] + ("AA" if token[-2:] != "AA" else "BB"),
                          "The token you gave is damaged or was not issued by this service"),
        "unknown token": (photo_bytes("rocket", "jpeg"), mint_token(uuid.uuid4(), token_mac_keys()[0]),
                          "The token you gave names a record this service does not have"),
        "unsigned": (photo_bytes("rocket", "png"), None, "No provenance was found"),
        "client signed": (photo_bytes("rocket", "png"), None, "This file is exactly the content that Client Org"),
    }[case]
    if case == "revoked":
        key_client(org).put(f"/v1/generators/{generator.pk}/revoke")
    if case == "client signed":
        client_org = factories.make_org(name="Client Org")
        client_generator, seed = factories.make_client_generator(org=client_org)
        body = factories.record_body(generator=client_generator, seed=seed, content=content)
        assert key_client(client_org).post("/v1/records", body, format="json").status_code == 201
    single = api_client.post("/v1/verify", {"content": io.BytesIO(content), **({"token": given} if given else {})},
                             format="multipart").json()
    assert single["summary"].startswith(expected), single["summary"]
    item = {"content": base64.b64encode(content).decode(), **({"token": given} if given else {})}
    batch = api_client.post("/v1/verify/batch", {"items": [item, item]}, format="json").json()
    assert [each["summary"] for each in batch] == [single["summary"]] * 2
