"""What the watermark reader finds in a record's own file is read once and kept with the record.

The content hash covers every byte the image reader decodes, so a file whose hash matches its record reads
the same each time: the first verification of it reads the mark and keeps the answer (`mark_in_file`), and
later ones report that answer without decoding. These tests hold the kept answer equal to a read, and
every other file read.
"""

import base64
import io

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
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


def _sign(client, generator, content: bytes) -> tuple[bytes, Record]:
    response = client.post("/v1/sign", {"content": io.BytesIO(content), "model": "m",
                                        "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    return response.content, Record.objects.get(pk=response["X-Service-Record-Id"])


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content), **({"token": token} if token else {})}
    response = api_client.post("/v1/verify", body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def _kept(record: Record) -> bool | None:
    return Record.objects.values_list("mark_in_file", flat=True).get(pk=record.pk)


@pytest.mark.parametrize(("content", "fmt", "found"), [
    (photo_bytes("astronaut", "jpeg"), "jpeg", True),
    (photo_bytes("coffee", "png"), "png", True),
    (photo_bytes("chelsea", "webp"), "webp", True),
    (encode(Image.fromarray(WHITE), "jpeg", quality=75), "jpeg", False),
], ids=["jpeg photo", "png photo", "webp photo", "white jpeg"])
def test_the_kept_answer_is_the_answer_of_a_read(api_client, key_client, org, generator, mark_reads,
                                                 content, fmt, found):
    signed, record = _sign(key_client(org), generator, content)
    assert _kept(record) is None
    mark_reads.clear()

    first = _verify(api_client, signed)
    assert mark_reads == [fmt] and _kept(record) is found
    # What was kept is what an independent read of the signed file finds.
    assert (get_codec(fmt).extract_watermark(signed) == int(record.watermark_id, 16)) is found
    mark_reads.clear()
    with CaptureQueriesContext(connection) as queries:
        later = _verify(api_client, signed)
    assert mark_reads == []  # the unchanged file is not decoded at all
    assert not any(query["sql"].startswith("UPDATE") for query in queries.captured_queries)
    assert later == first
    assert later["signals"]["watermark_found"] is found
    assert later["authentic"] is True and later["confidence"] == ("high" if found else "medium")


def test_a_changed_file_is_read_every_time_and_keeps_nothing(api_client, key_client, org, generator, mark_reads):
    signed, record = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    token = get_codec("jpeg").extract_token(signed)
    changed = reencode_jpeg(signed, 80)  # new pixels, the record's token given beside them
    mark_reads.clear()
    for _ in range(2):
        result = _verify(api_client, changed, token=token)
        assert result["tampered"] is True and result["signals"]["watermark_found"] is True
        assert result["reason"] == "content_tampered" and result["confidence"] == "low"
    assert mark_reads == ["jpeg", "jpeg"] and _kept(record) is None


def test_a_changed_file_after_the_kept_answer_is_still_read(api_client, key_client, org, generator, mark_reads):
    signed, record = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    token = get_codec("jpeg").extract_token(signed)
    assert _verify(api_client, signed)["signals"]["watermark_found"] is True and _kept(record) is True
    unmarked = photo_bytes("astronaut", "jpeg")  # the same picture, never marked
    mark_reads.clear()
    result = _verify(api_client, unmarked, token=token)
    assert mark_reads == ["jpeg"]
    assert result["tampered"] is True and result["signals"]["watermark_found"] is False


def test_a_client_managed_record_keeps_its_files_answer_too(api_client, key_client, org, mark_reads):
    client_generator, seed = factories.make_client_generator(org=org)
    content = photo_bytes("coffee", "jpeg")  # the client's own file, unmarked
    body = factories.record_body(generator=client_generator, seed=seed, content=content,
                                 watermark_id="00000000000000ff")
    created = key_client(org).post("/v1/records", body, format="json")
    assert created.status_code == 201, created.content[:300]
    record = Record.objects.get(pk=created.json()["record_id"])
    for _ in range(2):
        result = _verify(api_client, content, token=created.json()["token"])
        assert result["authentic"] is True and result["signals"]["watermark_found"] is False
    assert mark_reads == ["jpeg"] and _kept(record) is False


def test_a_batch_keeps_and_uses_the_answer_per_item(api_client, key_client, org, generator, mark_reads):
    signed, record = _sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"))
    mark_reads.clear()
    items = [{"content": base64.b64encode(signed).decode()},
             {"content": base64.b64encode(signed).decode()},
             {"content": base64.b64encode(reencode_jpeg(signed, 85)).decode()}]  # no token left: read
    response = api_client.post("/v1/verify/batch", {"items": items}, format="json")
    assert response.status_code == 200
    first, second, third = response.json()
    assert mark_reads == ["jpeg", "jpeg"]  # the first signed item and the re-encoded one
    assert first == second and first["confidence"] == "high" and _kept(record) is True
    assert third["token_source"] == "watermark" and third["record_id"] == first["record_id"]
