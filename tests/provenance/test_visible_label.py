"""disclosure=visible on POST /v1/sign: the generator's label is shown on the content (a corner label on
pictures, a leading line on text, a leading paragraph in HTML), under the invisible mark, and the record keeps
that its file carried it; formats that cannot show one are refused before any work."""

import io

import numpy as np
import pytest
from lxml import html as lxml_html
from PIL import Image

from billing.models import UsageCounter
from generators.models import Generator
from media_codecs import get_codec
from media_codecs.image.label import label_box
from media_codecs.label import Label
from provenance.disclosures import CarriedDisclosure
from provenance.models import Record
from tests import audio, factories
from tests.media import photo_bytes
from tests.text_samples import HTML_PAGE, english
from tests.verification import uploads

pytestmark = pytest.mark.django_db


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image", "text", "audio"])


def _sign(key_client, org, generator, content: bytes, **fields):
    return uploads.sign(key_client(org), generator, content, model="m-1", disclosure="visible", **fields)


def _box_pixels(data: bytes, label: Label) -> np.ndarray:
    picture = Image.open(io.BytesIO(data)).convert("L")
    (left, top, right, bottom), _ = label_box(*picture.size, label)
    return np.asarray(picture)[top:bottom, left:right]


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_a_picture_shows_the_label_in_its_corner_under_the_mark(api_client, key_client, org, generator, fmt):
    original = photo_bytes("coffee", fmt)
    response = _sign(key_client, org, generator, original)
    assert response.status_code == 201, response.content[:300]
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert record.disclosures == CarriedDisclosure.MARK | CarriedDisclosure.METADATA | CarriedDisclosure.VISIBLE
    box, before = _box_pixels(response.content, Label()), _box_pixels(original, Label())
    assert np.median(box) < 0.5 * np.median(before) + 4  # the darkened box (its letters are a minority)
    assert (box > 200).mean() > 0.05  # white letters in it
    assert get_codec(fmt).extract_watermark(response.content) == int(record.watermark_id, 16)
    result = uploads.verify(api_client, response.content)
    assert (result["authentic"], result["confidence"]) == (True, "high")


def test_the_generators_words_corner_and_size_are_used(key_client, org):
    created = key_client(org).post("/v1/generators", {
        "name": "g", "supported_formats": ["image"], "label_text": "Made with Acme AI", "label_position": "top-left",
        "label_size": 6}, format="json")
    assert created.status_code == 201, created.content
    assert (created.json()["label_text"], created.json()["label_position"], created.json()["label_size"]) == (
        "Made with Acme AI", "top-left", 6.0)
    generator = Generator.objects.get(pk=created.json()["generator_id"])
    original = photo_bytes("rocket", "png")
    response = _sign(key_client, org, generator, original)
    chosen = Label("Made with Acme AI", "top-left", 6)
    assert np.median(_box_pixels(response.content, chosen)) < 0.5 * np.median(_box_pixels(original, chosen)) + 4
    assert (_box_pixels(response.content, chosen) > 200).mean() > 0.05
    corner = Label("Made with Acme AI", "bottom-right", 6)  # the default corner is left alone
    assert abs(_box_pixels(response.content, corner).mean() - _box_pixels(original, corner).mean()) < 8


def test_without_the_mark_the_label_is_still_shown(key_client, org, generator):
    response = _sign(key_client, org, generator, photo_bytes("coffee", "png"), watermark="false")
    record = Record.objects.get(pk=response["X-Service-Record-Id"])
    assert record.watermark_id == "none"
    assert record.disclosures == CarriedDisclosure.METADATA | CarriedDisclosure.VISIBLE
    assert (_box_pixels(response.content, Label()) > 200).mean() > 0.05


def test_plain_text_leads_with_the_label_and_still_verifies(api_client, key_client, org, generator):
    text = english()
    response = _sign(key_client, org, generator, text.encode(), format="text")
    assert response.status_code == 201, response.content[:300]
    signed = response.content.decode()
    assert signed.startswith("AI-generated\n\n")
    assert get_codec("txt").strip_token(response.content).decode().endswith(text)
    result = uploads.verify(api_client, response.content)
    assert result["authentic"] and result["record_id"] == response["X-Service-Record-Id"]


def test_html_leads_its_body_with_the_label(key_client, org, generator):
    response = _sign(key_client, org, generator, HTML_PAGE.encode())
    assert response.status_code == 201, response.content[:300]
    body = lxml_html.fromstring(response.content).find("body")
    first = body[0]
    assert first.tag == "p" and first.get("data-provenance-label") is not None
    assert first.text_content().replace("\u200b", "").replace("\u200c", "").startswith("AI-generated")


def test_a_format_that_cannot_show_a_label_is_400_before_any_work(key_client, org, generator):
    before = Record.objects.count()
    response = _sign(key_client, org, generator, audio.wav_bytes(audio.tone(2.0)))
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error" and "disclosure" in response.json()["details"]
    assert Record.objects.count() == before
    assert not UsageCounter.objects.filter(org=org, signatures_used__gt=0).exists()


@pytest.mark.parametrize("body", [{"label_size": 2}, {"label_size": 11}, {"label_position": "middle"},
                                  {"label_text": ""}, {"label_text": "x" * 81}, {"label_text": "two\nlines"}])
def test_a_bad_label_setting_is_400(key_client, org, body):
    response = key_client(org).post("/v1/generators", {"name": "g", **body}, format="json")
    assert response.status_code == 400 and set(response.json()["details"]) == set(body)


def test_a_bad_disclosure_value_is_400(key_client, org, generator):
    response = uploads.sign(key_client(org), generator, photo_bytes(), model="m", disclosure="loud")
    assert response.status_code == 400 and "disclosure" in response.json()["details"]
