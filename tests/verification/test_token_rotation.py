"""TOKEN_SIGNING_KEY rotation as verification sees it: tokens minted before a rotation still verify, new
ones name the new key, and once the old key is removed its tokens read `invalid_token` (spec: the token
cannot be decoded; decisions.md: a failed token does not fall back to the watermark)."""

import base64
import hashlib
import hmac
import io
import uuid

import pytest

from core.hkdf import derive_key
from provenance.tokens import key_tag
from tests import factories
from tests.media import photo_bytes

pytestmark = pytest.mark.django_db
OLD, NEW = "an-old-token-signing-secret-0123456789", "a-new-token-signing-secret-0123456789"


@pytest.fixture(autouse=True)
def _first_ring(settings):
    settings.TOKEN_SIGNING_KEY = f"t1:{OLD}"


@pytest.fixture
def generator(org):
    return factories.make_generator(org=org, formats=["image"])


def _sign(key_client, org, generator):
    response = key_client(org).post("/v1/sign", {"content": io.BytesIO(photo_bytes("rocket", "jpeg")), "model": "m",
                                                 "generator_id": str(generator.pk)}, format="multipart")
    assert response.status_code == 201, response.content[:300]
    return response


def _verify(api_client, content: bytes, token: str | None = None) -> dict:
    body = {"content": io.BytesIO(content), **({"token": token} if token else {})}
    response = api_client.post("/v1/verify", body, format="multipart")
    assert response.status_code == 200, response.content[:300]
    return response.json()


def _tag(token: str) -> bytes:
    return base64.urlsafe_b64decode(token[4:])[17:20]


def test_tokens_minted_before_a_rotation_verify_and_new_ones_use_the_new_key(settings, api_client, key_client, org,
                                                                              generator):
    before = _sign(key_client, org, generator)
    assert _tag(before["X-Service-Token"]) == key_tag(derive_key(OLD, "svc-token"))
    settings.TOKEN_SIGNING_KEY = f"t2:{NEW},t1:{OLD}"
    result = _verify(api_client, before.content)  # the token embedded in the file, minted under t1
    assert (result["authentic"], result["token_source"], result["record_id"]) == (
        True, "xmp", before["X-Service-Record-Id"])
    after = _sign(key_client, org, generator)
    assert _tag(after["X-Service-Token"]) == key_tag(derive_key(NEW, "svc-token"))
    assert _verify(api_client, after.content)["authentic"] is True
    # GET /v1/records/:id mints the record's token with the newest key: a second, equally valid token.
    shown = key_client(org).get(f"/v1/records/{before['X-Service-Record-Id']}").json()["token"]
    assert _tag(shown) == key_tag(derive_key(NEW, "svc-token"))
    assert _verify(api_client, before.content, token=shown)["authentic"] is True


def test_after_the_old_key_is_removed_its_tokens_are_invalid_and_new_ones_still_verify(settings, api_client,
                                                                                        key_client, org, generator):
    before = _sign(key_client, org, generator)
    settings.TOKEN_SIGNING_KEY = f"t2:{NEW},t1:{OLD}"
    after = _sign(key_client, org, generator)
    settings.TOKEN_SIGNING_KEY = f"t2:{NEW}"
    for result in (_verify(api_client, before.content, token=before["X-Service-Token"]),
                   _verify(api_client, photo_bytes("rocket", "jpeg"), token=before["X-Service-Token"])):
        assert (result["authentic"], result["reason"], result["record_id"], result["provenance"]) == (
            False, "invalid_token", None, None)
    # An embedded token that no longer reads gives way to the unchanged file's exact hash (not the watermark).
    embedded = _verify(api_client, before.content)
    assert (embedded["token_source"], embedded["record_id"]) == ("content_hash", before["X-Service-Record-Id"])
    assert _verify(api_client, after.content)["authentic"] is True


def test_a_token_naming_a_key_that_is_not_configured_is_invalid(api_client, key_client, org, generator):
    signed = _sign(key_client, org, generator)
    stranger = derive_key("some-other-deployment", "svc-token")
    header = b"\x02" + uuid.UUID(signed["X-Service-Record-Id"]).bytes + key_tag(stranger)
    token = "svc_" + base64.urlsafe_b64encode(header + hmac.new(stranger, header, hashlib.sha256).digest()[:16]
                                              ).rstrip(b"=").decode()
    result = _verify(api_client, signed.content, token=token)
    assert (result["authentic"], result["reason"], result["token_source"]) == (False, "invalid_token", "provided")


def test_a_token_from_before_key_rings_verifies_while_its_plain_secret_is_listed(settings, api_client, key_client,
                                                                                  org, generator):
    settings.TOKEN_SIGNING_KEY = OLD  # a deployment before rings: one plain secret, version-1 tokens
    signed = _sign(key_client, org, generator)
    key = derive_key(OLD, "svc-token")
    header = b"\x01" + uuid.UUID(signed["X-Service-Record-Id"]).bytes
    release_1_token = "svc_" + base64.urlsafe_b64encode(header + hmac.new(key, header, hashlib.sha256).digest()[:16]
                                                        ).rstrip(b"=").decode()
    assert len(release_1_token) == 48
    settings.TOKEN_SIGNING_KEY = f"t2:{NEW},{OLD}"
    assert _verify(api_client, signed.content, token=release_1_token)["authentic"] is True
    settings.TOKEN_SIGNING_KEY = f"t2:{NEW}"
    assert _verify(api_client, signed.content, token=release_1_token)["reason"] == "invalid_token"
