"""What a generator declares its files disclose: provider, system, version and IPTC digital source type."""

import pytest

from generators.models import Generator

URL = "/v1/generators"
TYPE_URI = "http://cv.iptc.org/newscodes/digitalsourcetype/"


def test_the_declared_disclosure_is_stored_and_answered_as_given(key_client, org):
    body = {"name": "g", "provider_name": "Acme AI", "system_name": "Acme Diffusion", "system_version": "3.1",
            "digital_source_type": "compositeWithTrainedAlgorithmicMedia"}
    response = key_client(org).post(URL, body, format="json")
    assert response.status_code == 201, response.content
    answered = response.json()
    assert {name: answered[name] for name in body} == body
    generator = Generator.objects.get(pk=answered["generator_id"])
    assert (generator.provider_name, generator.system_version) == ("Acme AI", "3.1")
    assert key_client(org).get(f"{URL}/{generator.pk}").json()["digital_source_type"] == \
        "compositeWithTrainedAlgorithmicMedia"


def test_without_a_declaration_the_source_type_is_trained_algorithmic_media(key_client, org):
    answered = key_client(org).post(URL, {"name": "g"}, format="json").json()
    assert (answered["digital_source_type"], answered["provider_name"], answered["system_name"],
            answered["system_version"]) == ("trainedAlgorithmicMedia", "", "", "")


@pytest.mark.parametrize("value", [TYPE_URI + "trainedAlgorithmicMedia", "https://cv.iptc.org/newscodes/"
                                   "digitalsourcetype/algorithmicMedia", "  digitalCreation "])
def test_a_source_type_uri_or_term_is_accepted(key_client, org, value):
    response = key_client(org).post(URL, {"name": "g", "digital_source_type": value}, format="json")
    assert response.status_code == 201
    assert response.json()["digital_source_type"] == value.strip()


@pytest.mark.parametrize("body", [
    {"digital_source_type": "aiGenerated"},
    {"digital_source_type": TYPE_URI + "notATerm"},
    {"digital_source_type": "http://example.com/digitalsourcetype/trainedAlgorithmicMedia"},
    {"digital_source_type": ""},
    {"provider_name": "x" * 201},
    {"system_version": "1" * 101},
])
def test_a_bad_declaration_is_400_and_registers_nothing(key_client, org, body):
    response = key_client(org).post(URL, {"name": "g", **body}, format="json")
    assert response.status_code == 400
    assert response.json()["error"] == "validation_error"
    assert set(response.json()["details"]) == set(body)
    assert not Generator.objects.filter(org=org).exists()
