"""The verify routes' answer (verification_body) is exactly what the documented VerificationOutput renders,
for every state a verification concludes in and for real verifications of signed files."""

import dataclasses
import io
import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from record_format.manifest_checks import CHECKS, Check, ManifestReport
from tests import factories
from tests.media import photo_bytes, strip_metadata
from tests.verification.test_summary import STATES
from verification.serializers import VerificationOutput, verification_body
from verification.services import TimeStampCheck, content_verify

STAMPS = {
    "no stamp": None,
    "valid": TimeStampCheck("valid", datetime(2026, 11, 3, 14, 5, 1, 250000, tzinfo=UTC), "Test TSA"),
    "invalid": TimeStampCheck("invalid", None, "Test TSA", "the stamp covers other bytes"),
    "unchecked, another zone": TimeStampCheck("unchecked", datetime(2026, 11, 3, 16, 5, tzinfo=timezone(
        timedelta(hours=2))), "Test TSA"),
}

def _checks(**statuses: str) -> tuple[Check, ...]:
    return tuple(Check(name, statuses.get(name, "valid"), f"{name} as found.") for name in CHECKS)


REPORTS = {
    "no manifest": None,
    "ours": ManifestReport("urn:c2pa:1234", "hybrid", _checks(time_stamp="absent"), None),
    "stamped": ManifestReport("urn:c2pa:5678", "es256", _checks(claim_signature="invalid", pq_signature="none"),
                              datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), pq_expected=False),
}


def _same(result) -> None:
    body = verification_body(result)
    assert body == VerificationOutput(result).data
    assert list(body) == list(VerificationOutput(result).data)  # the same keys in the same order


@pytest.mark.parametrize("result", STATES)
def test_every_concluded_state_renders_as_the_documented_serializer_does(result):
    _same(result)


@pytest.mark.parametrize("stamp", STAMPS)
@pytest.mark.parametrize("report", REPORTS)
def test_time_stamps_manifests_and_log_render_the_same(stamp, report):
    for concluded in STATES[::29]:  # copies: test_summary keeps using the originals
        result = concluded.values[0]
        log = {"status": "included", "index": 7, "tree_size": 9} if result.record_found else None
        _same(dataclasses.replace(result, time_stamp=STAMPS[stamp], c2pa=REPORTS[report], log=log))


@pytest.mark.django_db
def test_real_verifications_render_the_same_and_the_route_answers_it(api_client, key_client, org):
    generator = factories.make_generator(org=org, formats=["image", "text"])
    signer = key_client(org)
    signed = []
    for content in (photo_bytes("coffee", "jpeg"), b"A paragraph the model wrote, long enough to carry a mark."):
        response = signer.post("/v1/sign", {"content": io.BytesIO(content), "model": "m",
                                            "generator_id": str(generator.pk)}, format="multipart")
        assert response.status_code == 201, response.content[:200]
        signed.append((response.content, response["X-Service-Token"]))
    photo, photo_token = signed[0]
    cases = [(photo, None), (photo, photo_token), (strip_metadata(photo, "jpeg"), None), (signed[1][0], signed[1][1]),
             (b"never signed", None), (photo + b"x", photo_token)]
    for content, token in cases:
        result = content_verify(data=content, token=token)
        _same(result)
        form = {"content": io.BytesIO(content)} | ({"token": token} if token else {})
        answer = api_client.post("/v1/verify", form, format="multipart")
        assert answer.status_code == 200
        expected = json.loads(json.dumps(verification_body(content_verify(data=content, token=token))))
        assert answer.json() == expected
