"""C2PA's Soft Binding Resolution API: /v1/c2pa/matches/byBinding and byContent resolve our watermark id
and pHash to manifest ids (record ids), public and limited per IP like verify."""

import base64
import io

import pytest

from media_codecs import get_codec
from media_codecs.c2pa import read_manifest
from provenance.models import Record
from tests import factories
from tests.media import photo_bytes, reencode_jpeg
from tests.verification.uploads import sign

pytestmark = pytest.mark.django_db
BY_BINDING, BY_CONTENT = "/v1/c2pa/matches/byBinding", "/v1/c2pa/matches/byContent"
WATERMARK, PHASH = "service.image-watermark.1", "service.image-phash.1"


@pytest.fixture
def signed(key_client, org) -> tuple[bytes, Record]:
    generator = factories.make_generator(org=org, formats=["image"])
    response = sign(key_client(org), generator, photo_bytes("astronaut", "jpeg"), model="m")
    assert response.status_code == 201
    return response.content, Record.objects.get(pk=response["X-Service-Record-Id"])


def _b64(hex_value: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_value)).decode()


def _by_binding(api_client, alg: str, value: str, **query):
    return api_client.get(BY_BINDING, {"alg": alg, "value": value, **query})


def test_the_watermark_id_resolves_to_the_record(api_client, signed):
    _, record = signed
    response = _by_binding(api_client, WATERMARK, _b64(record.watermark_id))
    assert response.status_code == 200
    assert response.json() == {"matches": [{"manifestId": str(record.pk), "similarityScore": 100}]}
    # The POST form takes the same query as JSON.
    posted = api_client.post(BY_BINDING, {"alg": WATERMARK, "value": _b64(record.watermark_id)}, format="json")
    assert posted.json() == response.json()


def test_the_watermark_id_in_an_embedded_manifest_is_the_value_to_send(api_client, signed, key_client):
    data, record = signed
    record.org.plan = "growth"
    record.org.save()
    factories.make_user(org=record.org, role="owner")
    embedded = key_client(record.org).post(f"/v1/records/{record.pk}/c2pa/embed", {"content": io.BytesIO(data)},
                                           format="multipart").content
    binding = read_manifest(embedded).soft_binding
    assert binding["alg"] == WATERMARK
    response = _by_binding(api_client, binding["alg"], binding["blocks"][0]["value"])
    assert response.json()["matches"][0]["manifestId"] == str(record.pk)


def test_the_phash_resolves_exactly_and_nearby_with_a_lower_score(api_client, signed):
    _, record = signed
    exact = _by_binding(api_client, PHASH, _b64(record.phash)).json()
    assert exact == {"matches": [{"manifestId": str(record.pk), "similarityScore": 100}]}
    three_bits_off = f"{int(record.phash, 16) ^ 0b10101:016x}"
    near = _by_binding(api_client, PHASH, _b64(three_bits_off)).json()
    assert near == {"matches": [{"manifestId": str(record.pk), "similarityScore": 95}]}  # 61 of 64 bits
    far = f"{int(record.phash, 16) ^ 0xFFFF:016x}"
    assert _by_binding(api_client, PHASH, _b64(far)).json() == {"matches": []}


def test_another_familys_algorithm_does_not_match(api_client, signed):
    _, record = signed
    response = _by_binding(api_client, "service.audio-watermark.1", _b64(record.watermark_id))
    assert response.json() == {"matches": []}


@pytest.mark.parametrize("how", ["raw", "multipart"])
def test_by_content_reads_the_watermark_and_the_phash(api_client, signed, how):
    data, record = signed
    bare = reencode_jpeg(get_codec("jpeg").strip_token(data), quality=85)  # metadata gone, pixels re-encoded
    if how == "raw":
        response = api_client.generic("POST", BY_CONTENT, bare, content_type="image/jpeg")
    else:
        response = api_client.post(BY_CONTENT, {"content": io.BytesIO(bare)}, format="multipart")
    assert response.status_code == 200, response.content
    assert response.json()["matches"][0] == {"manifestId": str(record.pk), "similarityScore": 100}
    only_phash = api_client.generic("POST", f"{BY_CONTENT}?alg={PHASH}", bare, content_type="image/jpeg").json()
    assert only_phash["matches"][0]["manifestId"] == str(record.pk)


def test_by_content_of_an_unknown_image_matches_nothing(api_client, signed):
    response = api_client.generic("POST", BY_CONTENT, photo_bytes("camera", "png"), content_type="image/png")
    assert response.status_code == 200 and response.json() == {"matches": []}


def test_max_results_caps_the_matches(api_client, key_client, org):
    generator = factories.make_generator(org=org, formats=["image"])
    content = photo_bytes("astronaut", "png")
    outputs = [sign(key_client(org), generator, content, model="m") for _ in range(3)]
    first, newest = outputs[0]["X-Service-Record-Id"], outputs[-1]["X-Service-Record-Id"]
    # The first output's watermark names its own record; the shared pHash names the newest record.
    matches = api_client.generic("POST", BY_CONTENT, outputs[0].content, content_type="image/png").json()["matches"]
    assert {match["manifestId"] for match in matches} == {first, newest}
    capped = api_client.generic("POST", f"{BY_CONTENT}?maxResults=1", outputs[0].content, content_type="image/png")
    assert len(capped.json()["matches"]) == 1


def test_supported_algorithms_lists_ours(api_client):
    body = api_client.get("/v1/c2pa/services/supportedAlgorithms").json()
    assert {"alg": WATERMARK} in body["watermarks"] and {"alg": PHASH} in body["fingerprints"]


@pytest.mark.parametrize("query", [
    {"alg": "com.example.other.1", "value": "AAAAAAAAAAA="},
    {"alg": WATERMARK, "value": "not base64!"},
    {"alg": WATERMARK, "value": base64.b64encode(b"short").decode()},
    {"alg": WATERMARK},
    {"value": "AAAAAAAAAAA="},
    {"alg": WATERMARK, "value": "AAAAAAAAAAA=", "maxResults": "0"},
    {"alg": WATERMARK, "value": "AAAAAAAAAAA=", "maxResults": "many"},
], ids=["unknown-alg", "not-base64", "short", "no-value", "no-alg", "zero-results", "bad-results"])
def test_bad_binding_queries_are_400(api_client, query):
    response = api_client.get(BY_BINDING, query)
    assert response.status_code == 400 and response.json()["error"] == "validation_error"


def test_by_content_refuses_what_it_cannot_read(api_client):
    unknown = api_client.generic("POST", BY_CONTENT, b"\x00\x01 binary nothing", content_type="application/x-thing")
    assert unknown.status_code == 415 and unknown.json()["error"] == "unsupported_media_type"
    text = api_client.generic("POST", BY_CONTENT, "plain words " * 50, content_type="text/plain")
    assert text.status_code == 415
    empty = api_client.generic("POST", BY_CONTENT, b"", content_type="image/png")
    assert empty.status_code == 400 and empty.json()["error"] == "validation_error"
    big = api_client.generic("POST", BY_CONTENT, b"\x00" * (50 * 1024 * 1024 + 1), content_type="image/png")
    assert big.status_code == 413


def test_the_lookups_are_limited_per_ip(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    assert _by_binding(api_client, WATERMARK, "AAAAAAAAAAA=").status_code == 200
    limited = _by_binding(api_client, WATERMARK, "AAAAAAAAAAA=")
    assert limited.status_code == 429 and limited.json()["error"] == "rate_limited"
