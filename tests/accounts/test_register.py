import pytest
from django.core import mail

from accounts.models import Organization, User

URL = "/v1/auth/register"
BODY = {"org_name": "Acme Labs", "email": "Founder@Example.com", "password": "s3cret-pass"}

pytestmark = pytest.mark.django_db


def test_register_creates_free_org_with_owner_and_sends_verification(api_client):
    response = api_client.post(URL, BODY, format="json")
    assert response.status_code == 201
    user = response.json()["user"]
    assert set(user) == {"user_id", "email", "email_verified", "org_id"}
    assert user["email"] == "founder@example.com"
    assert user["email_verified"] is False
    org = Organization.objects.get(pk=user["org_id"])
    assert (org.name, org.plan, org.billing_interval) == ("Acme Labs", "free", "monthly")
    assert User.objects.get(pk=user["user_id"]).role == "owner"
    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["founder@example.com"]
    assert "http://127.0.0.1:8000/verify-email?token=" in message.body
    assert message.alternatives and "verify-email?token=" in message.alternatives[0][0]


def test_register_stores_the_password_hashed(api_client):
    api_client.post(URL, BODY, format="json")
    user = User.objects.get()
    assert BODY["password"] not in user.password
    assert user.check_password(BODY["password"])


@pytest.mark.parametrize("email", ["founder@example.com", "FOUNDER@EXAMPLE.COM", " founder@example.com "])
def test_register_refuses_a_taken_email_case_insensitively(api_client, email):
    assert api_client.post(URL, BODY, format="json").status_code == 201
    response = api_client.post(URL, {**BODY, "email": email.strip()}, format="json")
    assert response.status_code == 409
    assert response.json()["error"] == "email_taken"
    assert User.objects.count() == 1 and Organization.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({**BODY, "password": "short"}, "password"),
        ({**BODY, "email": "not-an-email"}, "email"),
        ({k: v for k, v in BODY.items() if k != "org_name"}, "org_name"),
        ({**BODY, "org_name": ""}, "org_name"),
        ({**BODY, "password": "x" * 129}, "password"),
        ({**BODY, "email": ["a@b.c"]}, "email"),
    ],
)
def test_register_rejects_invalid_fields_with_details(api_client, body, field):
    response = api_client.post(URL, body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert payload["error"] == "validation_error"
    assert field in payload["details"]
    assert isinstance(payload["details"][field], list)
    assert User.objects.count() == 0


def test_register_rejects_malformed_json(api_client):
    response = api_client.post(URL, data=b'{"email": ', content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


@pytest.mark.parametrize("raw", [b"[]", b'"text"', b"42", b"null"])
def test_register_rejects_json_of_the_wrong_type(api_client, raw):
    response = api_client.post(URL, data=raw, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"


def test_register_refuses_a_form_encoded_body(api_client):
    response = api_client.post(URL, data="org_name=a&email=b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert response.json()["error"] == "unsupported_media_type"


def test_register_refuses_a_two_megabyte_body_before_parsing(api_client):
    raw = b'{"org_name": "' + b"a" * (2 * 1024 * 1024) + b'"}'
    response = api_client.post(URL, data=raw, content_type="application/json")
    assert response.status_code == 413
    assert response.json()["error"] == "payload_too_large"
