"""An image's mark is read back when it is signed; verifying the unchanged file reports that reading.

The content hash covers every byte the image reader decodes, so reading the mark of a file whose hash
still matches would decode the same pixels and give the same answer. These tests hold the shortcut to
that: the answer with it equals the answer of a real read, and every other file is read.
"""

import io

import numpy as np
import pytest
from PIL import Image

from media_codecs import get_codec
from media_codecs.image.base import ImageCodec
from provenance.models import Record
from tests import factories
from tests.media import encode, photo_bytes, reencode_jpeg

pytestmark = pytest.mark.django_db

# Signs, but carries no readable mark whatever its id: near white the mark is faded, and JPEG 75 rounds what
# is left away (the signed file is pure white). A flat grey picture's faint mark reads for a few ids in 100.
WHITE = np.full((256, 256, 3), 255, np.uint8)


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image"])


@pytest.fixture
def mark_reads(monkeypatch) -> list[str]:
    """The formats of every image mark read from here on."""
    reads = []
    original = ImageCodec.extract_watermark

    def counted(self, content):
        reads.append(self.format)
        return original(self, content)

    monkeypatch.setattr(ImageCodec, "extract_watermark", counted)
    return reads


def _sign(client, generator, content: bytes):
    response = client.post("/v1/sign", {"content": io.BytesIO(content), "model": "m",
                                        "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    return response.content, Record.objects.get(pk=response["X-Service-Record-Id"])


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content), **({"token": token} if token else {})}
    response = api_client.post("/v1/verify", body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


@pytest.mark.parametrize(("content", "fmt", "readable"), [
    (photo_bytes("astronaut", "jpeg"), "jpeg", True),
    (photo_bytes("coffee", "png"), "png", True),
    (photo_bytes("chelsea", "webp"), "webp", True),
    (encode(Image.fromarray(WHITE), "jpeg", quality=75), "jpeg", False),
], ids=["jpeg photo", "png photo", "webp photo", "white jpeg"])
def test_the_answer_without_a_read_is_the_answer_of_a_read(api_client, key_client, org, generator, mark_reads,
                                                           content, fmt, readable):
    signed, record = _sign(key_client(org), generator, content)
    # What signing kept is what an independent read of the signed file finds.
    assert record.watermark_readable is readable
    assert (get_codec(fmt).extract_watermark(signed) == int(record.watermark_id, 16)) is readable
    mark_reads.clear()

    remembered = _verify(api_client, signed)
    assert mark_reads == []  # the unchanged file is not decoded at all
    Record.objects.filter(pk=record.pk).update(watermark_readable=None)  # as if signing had not read it
    read = _verify(api_client, signed)
    assert mark_reads == [fmt]
    assert remembered == read
    assert read["signals"]["watermark_found"] is readable
    assert read["confidence"] == ("high" if readable else "medium") and read["authentic"] is True


def test_a_changed_file_is_read(api_client, key_client, org, generator, mark_reads):
    signed, _ = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    token = get_codec("jpeg").extract_token(signed)
    mark_reads.clear()
    result = _verify(api_client, reencode_jpeg(signed, 80), token=token)  # new pixels, the record's token
    assert mark_reads == ["jpeg"]
    assert result["tampered"] is True and result["signals"]["watermark_found"] is True
    assert result["reason"] == "content_tampered" and result["confidence"] == "low"


def test_a_changed_file_whose_mark_is_gone_says_so(api_client, key_client, org, generator, mark_reads):
    signed, _ = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    token = get_codec("jpeg").extract_token(signed)
    unmarked = photo_bytes("astronaut", "jpeg")  # the same picture, never marked: what signing kept is moot
    mark_reads.clear()
    result = _verify(api_client, unmarked, token=token)
    assert mark_reads == ["jpeg"]
    assert result["tampered"] is True and result["signals"]["watermark_found"] is False


def test_a_client_managed_record_has_no_remembered_read(api_client, key_client, org, mark_reads):
    client_generator, seed = factories.make_client_generator(org=org)
    content = photo_bytes("coffee", "jpeg")
    body = factories.record_body(generator=client_generator, seed=seed, content=content,
                                 watermark_id="00000000000000ff")
    created = key_client(org).post("/v1/records", body, format="json")
    assert created.status_code == 201, created.content[:300]
    assert Record.objects.get(pk=created.json()["record_id"]).watermark_readable is None
    result = _verify(api_client, content, token=created.json()["token"])
    assert mark_reads == ["jpeg"]  # the client made the file: its mark is read like any other's
    assert result["authentic"] is True and result["signals"]["watermark_found"] is False


def test_a_batch_uses_what_signing_read_for_each_unchanged_item(api_client, key_client, org, generator, mark_reads):
    import base64

    signed, _ = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    mark_reads.clear()
    items = [{"content": base64.b64encode(signed).decode()},
             {"content": base64.b64encode(reencode_jpeg(signed, 85)).decode()}]  # no token left: read
    response = api_client.post("/v1/verify/batch", {"items": items}, format="json")
    assert response.status_code == 200
    first, second = response.json()
    assert mark_reads == ["jpeg"]
    assert first["confidence"] == "high" and first["token_source"] == "xmp"
    assert second["token_source"] == "watermark" and second["record_id"] == first["record_id"]
