"""POST /v1/sign on real photographs in every image format."""

import io

import pytest
from PIL import Image

from audit.models import AuditEvent
from billing.models import UsageCounter
from media_codecs import get_codec
from provenance.models import Record
from record_format.hashing import content_hash_of
from tests import factories, hostile_media
from tests.media import MIME, decode, photo_bytes

pytestmark = pytest.mark.django_db
URL = "/v1/sign"


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image"])


def _sign(client, generator, content: bytes, **fields):
    body = {"content": io.BytesIO(content), "model": "diffusion-xl", "generator_id": str(generator.pk), **fields}
    return client.post(URL, body, format="multipart")


@pytest.mark.parametrize("fmt", ["jpeg", "png", "webp"])
def test_signing_returns_the_same_format_watermarked_with_its_token(key_client, org, generator, fmt, emitted):
    original = photo_bytes("astronaut", fmt)
    response = _sign(key_client(org), generator, original)
    assert response.status_code == 201, response.content[:300]
    assert response["Content-Type"] == MIME[fmt] and response["X-Service-Format"] == "image"
    token, record_id = response["X-Service-Token"], response["X-Service-Record-Id"]
    signed = response.content
    codec = get_codec(fmt)
    assert codec.extract_token(signed) == token
    assert codec.extract_watermark(signed) is not None
    before, after = decode(original), decode(signed)
    assert (after.format, after.size, after.mode) == (before.format, before.size, before.mode)
    record = Record.objects.get(pk=record_id)
    assert record.content_hash == content_hash_of(codec.strip_token(signed))
    assert record.watermark_id == f"{codec.extract_watermark(signed):016x}"
    assert record.format == "image" and record.phash == codec.fingerprint(signed)
    assert record.fingerprint_kind == codec.fingerprint_kind == "image-phash"
    assert AuditEvent.objects.filter(org=org, type="sign").count() == 1
    assert UsageCounter.objects.get(org=org).signatures_used == 1
    assert [kind for _, kind, _ in emitted] == ["record.created"]


def test_a_signed_jpeg_keeps_its_quantisation_and_size(key_client, org, generator):
    original = photo_bytes("chelsea", "jpeg")
    signed = _sign(key_client(org), generator, original).content
    assert decode(signed).quantization == decode(original).quantization
    assert len(signed) < len(original) * 1.2


def test_content_outside_the_declared_family_is_format_not_supported(key_client, org, generator):
    response = _sign(key_client(org), generator, photo_bytes(), format="audio")
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
    assert not Record.objects.exists()


def test_a_format_the_generator_does_not_list_is_400(key_client, org):
    text_only = factories.make_generator(org=org, formats=["text"])
    response = _sign(key_client(org), text_only, photo_bytes())
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"


@pytest.mark.parametrize("content", [b"just some bytes", b"GIF89a" + b"\x00" * 50])
def test_unsupported_content_is_400_format_not_supported(key_client, org, generator, content):
    response = _sign(key_client(org), generator, content)
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
    assert not Record.objects.exists()


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, hostile_media.duplicate_ihdr_png(),
                                     hostile_media.duplicate_sof_jpeg()], ids=["truncated", "two-ihdr", "two-sof"])
def test_malformed_content_of_a_supported_format_is_400_validation_error(key_client, org, generator, content):
    response = _sign(key_client(org), generator, content)
    body = response.json()
    assert response.status_code == 400 and body["error"] == "validation_error"
    assert list(body["details"]) == ["content"]
    assert not Record.objects.exists()


def test_a_client_managed_generator_cannot_sign_uploads(key_client, org):
    generator, _ = factories.make_client_generator(org=org)
    response = _sign(key_client(org), generator, photo_bytes())
    assert response.status_code == 400 and response.json()["error"] == "generator_client_managed"


def test_generator_checks_match_records(key_client, org, other_org, generator):
    assert _sign(key_client(other_org), generator, photo_bytes()).status_code == 403
    key_client(org).put(f"/v1/generators/{generator.pk}/revoke")
    assert _sign(key_client(org), generator, photo_bytes()).status_code == 404


def test_missing_fields_are_400(key_client, org, generator):
    client = key_client(org)
    assert client.post(URL, {"model": "m", "generator_id": str(generator.pk)}, format="multipart").status_code == 400
    no_model = client.post(URL, {"content": io.BytesIO(photo_bytes()), "generator_id": str(generator.pk)},
                           format="multipart")
    assert no_model.status_code == 400 and "model" in no_model.json()["details"]


def test_json_is_415(key_client, org, generator):
    assert key_client(org).post(URL, {"model": "m"}, format="json").status_code == 415


def test_the_free_quota_is_checked_before_any_work(key_client, org, generator):
    factories.set_usage(org, 500)
    response = _sign(key_client(org), generator, photo_bytes())
    assert response.status_code == 402 and response.json()["error"] == "signature_limit_reached"
    assert not Record.objects.exists()


def test_an_upload_over_50_mb_is_413(key_client, org, generator):
    big = io.BytesIO(b"\xff\xd8" + b"\x00" * (50 * 1024 * 1024 + 1))
    response = key_client(org).post(URL, {"content": big, "model": "m", "generator_id": str(generator.pk)},
                                    format="multipart")
    assert response.status_code == 413 and response.json()["error"] == "payload_too_large"


def test_a_decompression_bomb_is_refused_before_decoding(key_client, org, generator):
    bomb = io.BytesIO()
    Image.new("L", (10000, 6000)).save(bomb, "PNG")  # 60 megapixels of nothing: a tiny file
    response = _sign(key_client(org), generator, bomb.getvalue())
    assert response.status_code == 413
    assert not Record.objects.exists()


def test_signing_needs_a_credential(api_client, generator):
    assert _sign(api_client, generator, photo_bytes()).status_code == 401


def _png(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", **options)
    return buffer.getvalue()


@pytest.mark.parametrize("make", [
    lambda: _png(decode(photo_bytes("coffee", "png")).convert("P")),  # palette
    lambda: _png(Image.new("I;16", (300, 300), 4000)),  # 16-bit greyscale
])
def test_palette_and_16_bit_pngs_get_a_clear_400(key_client, org, generator, make):
    response = _sign(key_client(org), generator, make())
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"
    assert response.json()["message"]


def test_an_animated_webp_gets_a_clear_400(key_client, org, generator):
    frames = [decode(photo_bytes("coffee", "png")).convert("RGB"), decode(photo_bytes("chelsea", "png")).resize(
        (600, 400)).convert("RGB")]
    buffer = io.BytesIO()
    frames[0].save(buffer, "WEBP", save_all=True, append_images=frames[1:], duration=100)
    response = _sign(key_client(org), generator, buffer.getvalue())
    assert response.status_code == 400 and response.json()["error"] == "format_not_supported"


def test_exif_icc_and_orientation_survive_signing(key_client, org, generator):
    from PIL import ImageCms

    image = decode(photo_bytes("astronaut", "png")).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # orientation: rotate 90 CW to display
    exif[0x010F] = "Example Camera Co"
    icc = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90, exif=exif.tobytes(), icc_profile=icc)
    signed = decode(_sign(key_client(org), generator, buffer.getvalue()).content)
    assert signed.info.get("icc_profile") == icc
    assert signed.getexif()[0x0112] == 6 and signed.getexif()[0x010F] == "Example Camera Co"
    assert signed.size == image.size  # pixels not transposed: the orientation tag still applies
