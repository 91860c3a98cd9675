"""The client against the service itself (live_server): both signing modes in every format, verified
online and offline, and offline verification failing with a clear reason for each kind of forgery."""

import base64
import dataclasses

import pytest
import requests

from provenance.models import Record
from svc_client import Client, PinnedKeys, RetryPolicy, SigningKey, record_sign, verify_offline
from svc_client.offline import record_id_of_token
from svc_client.signing import image_phash
from tests.media import decode, encode, strip_metadata

pytestmark = pytest.mark.django_db(transaction=True)


def test_client_managed_records_of_every_format_verify_online_and_offline(service, client_generator, samples):
    generator_id, key = client_generator
    pinned = service.keys_pinned(generator_id)
    for fmt, data in samples.items():
        draft = record_sign(key=key, generator_id=generator_id, model="m-1", data=data)
        created = service.record_submit(draft)

        online = service.verify(data, token=created.token)
        assert online["authentic"] is True, (fmt, online)
        offline = verify_offline(data, dict(service.record_get(created.record_id)), pinned)
        assert offline.authentic, (fmt, offline.reason)


def test_server_managed_signing_of_every_format_verifies_online_and_offline(service, samples):
    generator = service.generator_register(name="hosted", provider_name="Acme AI", system_name="Acme Studio",
                                           system_version="2.0", digital_source_type="trainedAlgorithmicMedia")
    assert (generator["provider_name"], generator["system_version"]) == ("Acme AI", "2.0")
    pinned = service.keys_pinned(generator["generator_id"])
    for fmt, data in samples.items():
        signed = service.sign(data, generator_id=generator["generator_id"], model="m-2", filename=f"sample.{fmt}")
        online = service.verify(signed.data, token=None if fmt != "txt" else signed.token)
        assert online["authentic"] is True, (fmt, online)
        assert (online["disclosure"]["system_name"], online["disclosure"]["identifier"]) == (
            "Acme Studio", signed.record_id)
        record = dict(service.record_get(record_id_of_token(signed.token)))
        assert record["record_id"] == signed.record_id
        offline = verify_offline(signed.data, record, pinned)
        assert offline.authentic, (fmt, offline.reason)
    labelled = service.sign(samples["png"], generator_id=generator["generator_id"], model="m-2",
                            filename="sample.png", visible_label=True)
    assert service.verify(labelled.data)["authentic"] is True
    unmarked = service.sign(samples["png"], generator_id=generator["generator_id"], model="m-2",
                            filename="sample.png", watermark=False)
    assert service.record_get(unmarked.record_id)["watermark_id"] == "none"


def test_a_batch_of_records_is_submitted_in_order(service, client_generator, samples):
    generator_id, key = client_generator
    drafts = [record_sign(key=key, generator_id=generator_id, model="m", data=data) for data in samples.values()]
    progress = []
    created = service.records_submit(drafts, on_batch=lambda done, total: progress.append((done, total)))
    assert [service.record_get(c.record_id)["content_hash"] for c in created] == [d.content_hash for d in drafts]
    assert progress == [(len(drafts), len(drafts))]


@pytest.fixture
def signed_jpeg(service, client_generator, samples):
    """(data, record, pinned keys) of a JPEG signed client-side."""
    generator_id, key = client_generator
    data = samples["jpeg"]
    created = service.record_submit(record_sign(key=key, generator_id=generator_id, model="m", data=data))
    return data, dict(service.record_get(created.record_id)), service.keys_pinned(generator_id)


def test_offline_verification_fails_for_a_tampered_file(signed_jpeg):
    data, record, pinned = signed_jpeg
    tampered = data[:-200] + bytes(b ^ 0xFF for b in data[-200:-2]) + data[-2:]
    result = verify_offline(tampered, record, pinned)
    assert not result.authentic
    assert result.checks[-1].name == "content"
    assert "was changed after signing" in result.reason


def test_offline_verification_fails_for_a_signature_altered_in_the_database(service, signed_jpeg):
    data, record, pinned = signed_jpeg
    stored = Record.objects.get(pk=record["record_id"])
    altered = bytearray(stored.signature)
    altered[100] ^= 0x01
    Record.objects.filter(pk=stored.pk).update(signature=bytes(altered))

    result = verify_offline(data, dict(service.record_get(record["record_id"])), pinned)
    assert not result.authentic
    assert "signature does not verify with the pinned key" in result.reason


def test_offline_verification_fails_for_an_unknown_kid(service, client_generator, samples):
    generator_id, _ = client_generator
    pinned_before = service.keys_pinned(generator_id)
    rotated = SigningKey.generate()
    service.generator_rotate(generator_id, public_key=rotated.public_key_b64, kid=rotated.kid)
    data = samples["png"]
    created = service.record_submit(record_sign(key=rotated, generator_id=generator_id, model="m", data=data))

    result = verify_offline(data, dict(service.record_get(created.record_id)), pinned_before)
    assert not result.authentic
    assert f"unknown kid {rotated.kid!r}" in result.reason
    assert verify_offline(data, dict(service.record_get(created.record_id)),
                          service.keys_pinned(generator_id)).authentic  # pinned again after the rotation


def test_offline_verification_fails_with_a_wrong_pinned_key(signed_jpeg):
    data, record, pinned = signed_jpeg
    impostor = SigningKey.generate().public_key
    wrong = dataclasses.replace(pinned, keys={kid: impostor for kid in pinned.keys})
    result = verify_offline(data, record, wrong)
    assert not result.authentic
    assert "does not verify with the pinned key" in result.reason


def test_offline_verification_fails_for_another_generators_keys(service, signed_jpeg):
    data, record, _ = signed_jpeg
    other = service.generator_register(name="other")
    result = verify_offline(data, record, service.keys_pinned(other["generator_id"]))
    assert "the pinned keys are generator" in result.reason


def test_pinned_keys_round_trip_through_the_keys_document(service, client_generator):
    generator_id, key = client_generator
    document = service.keys_get(generator_id)
    assert PinnedKeys.from_document(document).keys == {key.kid: key.public_key}
    assert base64.b64decode(document["public_keys"][0]["key"]) == key.public_key


def test_an_image_phash_is_the_services_own_and_finds_the_record_without_a_token(service, client_generator, samples):
    generator_id, key = client_generator
    data = samples["png"]
    assert image_phash(samples["wav"]) is None
    created = service.record_submit(record_sign(key=key, generator_id=generator_id, model="m", data=data,
                                                phash=image_phash(data)))
    assert service.record_get(created.record_id)["phash"] == image_phash(data)

    # Re-saved without its metadata: the same pixels in other bytes, so no token and no exact hash: its pHash.
    copy = encode(decode(strip_metadata(data, "png")), "png", compress_level=1)
    found = service.verify(copy)
    assert (found["token_source"], found["record_id"], found["reason"]) == ("phash", created.record_id,
                                                                             "content_tampered")


def test_the_library_embeds_a_token_as_the_readme_shows(service, client_generator, samples):
    from svc_client import EmbeddingError, content_hash, content_phash, embed_token

    generator_id, key = client_generator
    data = samples["jpeg"]
    draft = record_sign(key=key, generator_id=generator_id, model="m", data=data, phash=content_phash(data))
    created = service.record_submit(draft)
    signed = embed_token(data, created.token, draft.content_hash)
    assert content_hash(signed) == draft.content_hash
    found = service.verify(signed)
    assert (found["authentic"], found["token_source"], found["record_id"]) == (True, "xmp", created.record_id)

    with pytest.raises(EmbeddingError, match="no place for a token"):
        embed_token(samples["txt"], created.token, content_hash(samples["txt"]))
    with pytest.raises(EmbeddingError, match="the record signed"):
        embed_token(samples["png"], created.token, draft.content_hash)  # another file than the one signed


class AnswerLostOnce(requests.Session):
    """A network that loses the first answer to a signing call after the service has sent it."""

    def __init__(self):
        super().__init__()
        self.keys: list[str | None] = []

    def request(self, method, url, **options):
        response = super().request(method, url, **options)
        if method == "POST":
            self.keys.append(options["headers"].get("Idempotency-Key"))
            if len(self.keys) == 1:
                raise requests.ConnectionError("the connection broke before the answer arrived")
        return response


@pytest.mark.parametrize("mode", ["server", "client"])
def test_a_signing_call_whose_answer_is_lost_is_retried_and_signed_once(service, client_generator, samples, mode):
    network = AnswerLostOnce()
    client = Client(service.transport.base_url, service.transport.api_key, session=network,
                    retry=RetryPolicy(sleep=lambda seconds: None))
    if mode == "server":
        hosted = service.generator_register(name="hosted")["generator_id"]
        created = client.sign(samples["png"], generator_id=hosted, model="m-1")
    else:
        generator_id, key = client_generator
        created = client.record_submit(record_sign(key=key, generator_id=generator_id, model="m-1",
                                                   data=samples["png"]))
    assert Record.objects.count() == 1 and str(Record.objects.get().pk) == created.record_id
    assert len(network.keys) == 2 and network.keys[0] == network.keys[1] is not None
