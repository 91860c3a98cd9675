"""The visible AI label as a person on a phone sees it: a picture signed with `disclosure=visible`, shown 375
pixels wide in Chromium, screenshotted (tests/browser/screenshots.py) and read back from the screenshot."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

from media_codecs.image.label import label_box
from provenance.signing import content_sign
from tests import factories
from tests.browser.screenshots import shoot
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db(transaction=True)
PHONE_WIDTH = 375


def test_the_label_of_a_large_picture_reads_at_phone_width(page):
    org = factories.make_org(plan="growth")
    generator = factories.make_generator(org=org, formats=["image"])
    picture = Image.open(io.BytesIO(photo_bytes("coffee", "png"))).convert("RGB").resize((3000, 2000))
    original = io.BytesIO()
    picture.save(original, "PNG")
    signed = content_sign(org=org, generator_id=str(generator.pk), model="m", data=original.getvalue(),
                          declared_family=None, visible=True)
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 900})
    encoded = base64.b64encode(signed.data).decode()
    page.set_content(f'<body style="margin:0"><img id="p" style="width:100%;display:block" '
                     f'src="data:image/png;base64,{encoded}"></body>')
    page.wait_for_function("document.getElementById('p').complete")
    shoot(page, "visible-label-3000px-picture")
    shown = np.asarray(Image.open(io.BytesIO(page.screenshot())).convert("L"))
    scale = PHONE_WIDTH / 3000
    (left, top, right, bottom), font_px = label_box(3000, 2000, generator.label)
    assert font_px * scale >= 12  # the letters at least 12 CSS pixels tall on the phone
    box = shown[round(top * scale) + 1:round(bottom * scale) - 1, round(left * scale) + 1:round(right * scale) - 1]
    around = shown[round(top * scale) - 12:round(top * scale) - 2, round(left * scale):round(right * scale)]
    assert np.median(box) < 0.6 * np.median(around)  # the darkened box stands out of the picture
    assert (box > 200).mean() > 0.05  # white letters in it
