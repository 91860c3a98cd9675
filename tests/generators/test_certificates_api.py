"""The routes: PUT/DELETE /v1/generators/:id/c2pa-certificate, GET /v1/keys/:id with certificate chains,
GET /v1/c2pa/trust-anchors (JSON and PEM), and c2pa_signing at registration."""

import base64
import hashlib
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.utils import timezone

from audit.models import AuditEvent
from generators.certificates import generator_c2pa_credentials
from generators.models import CertificateAuthority, GeneratorKey, GeneratorUploadedCertificate
from record_format import certificates as certs
from tests import factories
from tests.generators.test_certificates import _external_ca, _key_pem, assert_trusted, c2pa_sign_and_read

pytestmark = pytest.mark.django_db


def _upload_body(*, leaf_days: int = 90, curve=None, key=None, ca=None, start=None) -> tuple[dict, list]:
    """A PUT body for an organization's own chain (leaf, intermediate, root) and the certificates."""
    root, mid, mid_key, _ = ca or _external_ca(root_in_chain=True)
    leaf_key = ec.generate_private_key(curve or ec.SECP256R1())
    leaf = certs.build_end_entity(leaf_key.public_key(), name=certs.subject_name(organization="Org", common_name="g"),
                                  issuer=mid, issuer_key=mid_key,
                                  validity=certs.validity_from(start or timezone.now(), leaf_days))
    body = {"certificate_chain": [certs.der_to_pem(certs.to_der(c)) for c in (leaf, mid, root)],
            "private_key": _key_pem(key or leaf_key).decode()}
    return body, [leaf, mid, root]


def _url(generator) -> str:
    return f"/v1/generators/{generator.pk}/c2pa-certificate"


def _hybrid_generator(client) -> str:
    response = client.post("/v1/generators", {"name": "hybrid", "c2pa_signing": "hybrid"}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["generator_id"]


def test_c2pa_signing_is_chosen_at_registration_and_shown(key_client, org):
    client = key_client(org)
    generator_id = _hybrid_generator(client)
    assert client.get(f"/v1/generators/{generator_id}").json()["c2pa_signing"] == "hybrid"
    plain = client.post("/v1/generators", {"name": "plain"}, format="json").json()
    assert plain["c2pa_signing"] == "ml-dsa-65"
    listed = {g["generator_id"]: g["c2pa_signing"] for g in client.get("/v1/generators").json()["generators"]}
    assert listed == {generator_id: "hybrid", plain["generator_id"]: "ml-dsa-65"}


@pytest.mark.parametrize("value", ["rsa", "", 7, None, ["hybrid"]])
def test_a_bad_c2pa_signing_is_a_validation_error(key_client, org, value):
    response = key_client(org).post("/v1/generators", {"name": "g", "c2pa_signing": value}, format="json")
    assert response.status_code == 400 and response.json()["error"] == "validation_error"
    assert "c2pa_signing" in response.json()["details"]


def test_hybrid_is_refused_for_a_client_managed_generator(key_client, org):
    from tests.generators.test_api import _public_key_body

    response = key_client(org).post("/v1/generators", {"name": "g", "c2pa_signing": "hybrid",
                                                       "public_keys": [_public_key_body()]}, format="json")
    assert response.status_code == 400 and response.json()["details"].keys() == {"c2pa_signing"}


def test_the_public_keys_route_shows_each_keys_chains(api_client, key_client, org):
    client = key_client(org)
    generator_id = _hybrid_generator(client)
    client.post(f"/v1/generators/{generator_id}/rotate", {}, format="json")
    response = api_client.get(f"/v1/keys/{generator_id}")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    body = response.json()
    assert body["c2pa_signing"] == "hybrid" and len(body["public_keys"]) == 2
    retired, current = body["public_keys"]
    assert retired["certificates"] == {}  # a retired key is not issued anything on a public GET
    assert set(current["certificates"]) == {"ml-dsa-65", "es256"}
    ml_dsa = certs.load_pem_chain("".join(current["certificates"]["ml-dsa-65"]))
    assert ml_dsa[0].public_key().public_bytes_raw() == base64.b64decode(current["key"])
    anchors = [bytes(r.certificate) for r in CertificateAuthority.objects.filter(kind="root")]
    for pems in current["certificates"].values():
        chain = [certs.to_der(c) for c in certs.load_pem_chain("".join(pems))]
        assert len(chain) == 2 and certs.verify_chain(chain, anchors, timezone.now()).trusted
    # Issued once: a second GET shows the same certificates and issues nothing.
    stored = GeneratorKey.objects.get(kid=current["kid"]).certificate.es256_certificate
    assert api_client.get(f"/v1/keys/{generator_id}").json()["public_keys"][1] == current
    assert GeneratorKey.objects.get(kid=current["kid"]).certificate.es256_certificate == stored


def test_an_ml_dsa_generators_keys_have_only_the_ml_dsa_chain(api_client, org):
    generator = factories.make_generator(org=org)
    [key] = api_client.get(f"/v1/keys/{generator.pk}").json()["public_keys"]
    assert list(key["certificates"]) == ["ml-dsa-65"] and "PRIVATE" not in str(key)


def test_trust_anchors_as_json_and_pem(api_client, org):
    response = api_client.get("/v1/c2pa/trust-anchors")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    anchors = response.json()["trust_anchors"]
    assert sorted(a["algorithm"] for a in anchors) == ["ecdsa-p384", "ml-dsa-65"]
    for anchor in anchors:
        [certificate] = certs.load_pem_chain(anchor["certificate"])
        assert certs.is_self_signed(certificate) and certs.is_ca(certificate)
        assert anchor["sha256"] == hashlib.sha256(certs.to_der(certificate)).hexdigest()
        assert anchor["subject"] == certificate.subject.rfc4514_string()
        assert anchor["not_after"].endswith("Z") and anchor["not_before"] < anchor["not_after"]
    pem = api_client.get("/v1/c2pa/trust-anchors?format=pem")
    assert pem.status_code == 200 and pem["Content-Type"] == "application/x-pem-file"
    assert pem["Access-Control-Allow-Origin"] == "*"
    assert [certs.to_der(c) for c in certs.load_pem_chain(pem.content)] == [
        certs.to_der(certs.load_pem_chain(a["certificate"])[0]) for a in anchors]
    # The PEM bundle is what c2pa-python takes as its trust settings: a hybrid signature reads Trusted.
    key = GeneratorKey.objects.select_related("generator__org").get(
        generator=factories.make_generator(org=org))
    key.generator.c2pa_signing = "hybrid"
    key.generator.save()
    credentials = generator_c2pa_credentials(key)
    assert_trusted(c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key,
                                      [certs.to_der(c) for c in certs.load_pem_chain(pem.content)]))
    bad = api_client.get("/v1/c2pa/trust-anchors?format=der")
    assert bad.status_code == 400 and bad.json()["error"] == "validation_error"


def test_a_preflight_on_trust_anchors_answers_cors(api_client):
    response = api_client.options("/v1/c2pa/trust-anchors", HTTP_ORIGIN="https://example.org",
                                  HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET")
    assert response.status_code == 200 and response["Access-Control-Allow-Origin"] == "*"
    assert "GET" in response["Access-Control-Allow-Methods"]


def test_an_owner_uploads_a_chain_and_signatures_use_it(session_client, owner, org):
    generator = factories.make_generator(org=org)
    generator.c2pa_signing = "hybrid"
    generator.save()
    body, (leaf, mid, root) = _upload_body()
    response = session_client(owner).put(_url(generator), body, format="json")
    assert response.status_code == 200, response.json()
    shown = response.json()
    assert shown["generator_id"] == str(generator.pk) and shown["subject"] == "CN=g,O=Org"
    assert shown["sha256"] == hashlib.sha256(certs.to_der(leaf)).hexdigest()
    assert len(shown["certificate_chain"]) == 2 and "PRIVATE" not in response.content.decode()
    key = GeneratorKey.objects.select_related("generator__org").get(generator=generator)
    credentials = generator_c2pa_credentials(key)
    assert credentials.es256_chain == (certs.to_der(leaf), certs.to_der(mid))
    assert_trusted(c2pa_sign_and_read(credentials.es256_chain, credentials.es256_private_key, [certs.to_der(root)]))
    event = AuditEvent.objects.get(org=org, type="generator.c2pa_certificate_uploaded")
    assert event.metadata["generator_id"] == str(generator.pk) and event.metadata["actor_id"] == str(owner.pk)
    assert event.metadata["sha256"] == shown["sha256"]
    # Sealed at rest: no PEM or DER of the key in the row.
    sealed = bytes(GeneratorUploadedCertificate.objects.get(generator=generator).encrypted_private_key)
    key_der = credentials.es256_private_key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption())
    assert key_der not in sealed and b"PRIVATE KEY" not in sealed
    # The public keys route shows the uploaded chain for the current key.
    public = session_client(owner).get(f"/v1/keys/{generator.pk}").json()["public_keys"][0]["certificates"]
    assert public["es256"] == shown["certificate_chain"]


def test_delete_goes_back_to_the_deployments_certificates(key_client, org):
    client = key_client(org)
    generator_id = _hybrid_generator(client)
    generator = GeneratorKey.objects.get(generator_id=generator_id).generator
    body, _ = _upload_body()
    assert client.put(_url(generator), body, format="json").status_code == 200
    response = client.delete(_url(generator))
    assert response.status_code == 200 and response.json() == {"removed": True}
    assert client.delete(_url(generator)).json() == {"removed": False}
    key = GeneratorKey.objects.select_related("generator__org").get(generator=generator)
    chain = generator_c2pa_credentials(key).es256_chain
    assert chain[1] == bytes(CertificateAuthority.objects.get(family="es256", kind="intermediate").certificate)
    assert AuditEvent.objects.filter(org=org, type="generator.c2pa_certificate_removed").count() == 1


def test_another_organizations_generator_is_404(key_client, org, other_org):
    generator = factories.make_generator(org=other_org)
    body, _ = _upload_body()
    client = key_client(org)
    assert client.put(_url(generator), body, format="json").status_code == 404
    assert client.delete(_url(generator)).json()["error"] == "not_found"
    assert not GeneratorUploadedCertificate.objects.exists()


def test_a_member_may_not_change_the_certificate_but_an_admin_may(session_client, member, admin_user, org):
    generator = factories.make_generator(org=org)
    body, _ = _upload_body()
    response = session_client(member).put(_url(generator), body, format="json")
    assert response.status_code == 403 and response.json()["error"] == "forbidden"
    assert session_client(member).delete(_url(generator)).status_code == 403
    assert session_client(admin_user).put(_url(generator), body, format="json").status_code == 200


def test_no_credential_is_401(api_client, org):
    generator = factories.make_generator(org=org)
    assert api_client.put(_url(generator), {}, format="json").status_code == 401


def test_a_client_managed_generator_cannot_take_an_upload(key_client, org):
    generator, _ = factories.make_client_generator(org=org)
    body, _ = _upload_body()
    response = key_client(org).put(_url(generator), body, format="json")
    assert response.status_code == 400 and response.json()["error"] == "generator_client_managed"


def test_a_revoked_generator_is_404(key_client, org):
    client = key_client(org)
    generator = factories.make_generator(org=org)
    client.put(f"/v1/generators/{generator.pk}/revoke")
    body, _ = _upload_body()
    assert client.put(_url(generator), body, format="json").status_code == 404


def _bad_uploads():
    ca = _external_ca(root_in_chain=True)
    _root, mid, mid_key, _ = ca
    good, (_leaf, *_rest) = _upload_body(ca=ca)
    other_ca = _external_ca(root_in_chain=True)
    mid_pem = certs.der_to_pem(certs.to_der(mid))
    ca_key = _key_pem(mid_key).decode()
    return [
        ("key not matching", {**good, "private_key": _key_pem(ec.generate_private_key(ec.SECP256R1())).decode()},
         "private_key"),
        ("CA certificate as leaf", {"certificate_chain": [mid_pem], "private_key": ca_key}, "certificate_chain"),
        ("wrong curve", _upload_body(ca=ca, curve=ec.SECP384R1())[0], "private_key"),
        ("expired", _upload_body(ca=_external_ca(root_in_chain=True, start=timezone.now() - timedelta(days=30)),
                                 leaf_days=2, start=timezone.now() - timedelta(days=10))[0],
         "certificate_chain"),
        ("garbage PEM", {**good, "certificate_chain": ["-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----"]},
         "certificate_chain"),
        ("garbage key", {**good, "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----"},
         "private_key"),
        ("chain that does not link", {**good, "certificate_chain": [good["certificate_chain"][0],
                                                                   certs.der_to_pem(certs.to_der(other_ca[1]))]},
         "certificate_chain"),
        ("self-signed leaf", _self_signed_upload(), "certificate_chain"),
        ("empty chain", {**good, "certificate_chain": []}, "certificate_chain"),
        ("too many certificates", {**good, "certificate_chain": good["certificate_chain"] * 4}, "certificate_chain"),
        ("a certificate over the size bound", {**good, "certificate_chain": ["A" * 20000]}, "certificate_chain"),
        ("a key over the size bound", {**good, "private_key": "A" * 5000}, "private_key"),
        ("wrong types", {"certificate_chain": "pem", "private_key": 5}, "certificate_chain"),
    ]


def _self_signed_upload() -> dict:
    key = ec.generate_private_key(ec.SECP256R1())
    name = certs.subject_name(organization="o", common_name="self")
    root = certs.build_root(key, name=name, validity=certs.validity_from(timezone.now(), 30))
    leaf = certs.build_end_entity(key.public_key(), name=name, issuer=root, issuer_key=key,
                                  validity=certs.validity_from(timezone.now(), 30))
    return {"certificate_chain": [certs.der_to_pem(certs.to_der(leaf))], "private_key": _key_pem(key).decode()}


def test_bad_uploads_are_validation_errors_that_say_which_field(key_client, org):
    client = key_client(org)
    generator = factories.make_generator(org=org)
    for label, body, field in _bad_uploads():
        response = client.put(_url(generator), body, format="json")
        assert response.status_code == 400, (label, response.status_code)
        assert response.json()["error"] == "validation_error", label
        assert field in response.json()["details"], (label, response.json())
    assert not GeneratorUploadedCertificate.objects.exists()
    assert not AuditEvent.objects.filter(type="generator.c2pa_certificate_uploaded").exists()


def test_a_huge_body_is_refused_before_parsing(key_client, org):
    generator = factories.make_generator(org=org)
    response = key_client(org).put(_url(generator), {"certificate_chain": ["A" * 12_000_000], "private_key": "x"},
                                   format="json")
    assert response.status_code in (400, 413) and response.json()["error"] in ("payload_too_large", "validation_error")


def test_a_time_stamp_authoritys_root_is_listed_for_stamps_only(api_client, org, settings, tmp_path):
    from cryptography.hazmat.primitives import serialization

    from generators.certificates import signing_trust_anchors
    from tests.tsa_server import make_pki

    tsa_root = make_pki()["root"]
    (tmp_path / "tsa.pem").write_bytes(tsa_root.public_bytes(serialization.Encoding.PEM))
    settings.TSA_ROOTS_FILE = str(tmp_path / "tsa.pem")
    anchors = api_client.get("/v1/c2pa/trust-anchors").json()["trust_anchors"]
    uses = {anchor["subject"]: anchor["use"] for anchor in anchors}
    assert uses.pop(tsa_root.subject.rfc4514_string()) == "time-stamping"
    assert set(uses.values()) == {"signing"} and len(uses) == 2
    # Verification trusts manifest signers up to the signing roots only, never up to an authority's root.
    assert tsa_root.public_bytes(serialization.Encoding.DER) not in signing_trust_anchors()
    assert len(signing_trust_anchors()) == 2
