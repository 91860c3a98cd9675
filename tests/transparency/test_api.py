"""/v1/log routes and the `log` field of records and verify results, checked as a client would."""

import base64

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests import factories
from tests.transparency import rfc9162
from tests.transparency.logs import decode, leaf_from_api, make_key, make_records
from transparency import note, services
from transparency.entries import split_bundle

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _generous_rate_limit(settings):
    settings.VERIFY_RATE_PER_MINUTE = 100_000


@pytest.fixture
def log_of_600():
    """A log of 600 records: two full level-0 tiles, a partial one of 88, a partial level-1 tile of 2."""
    records = make_records(make_key(), 600)
    services.log_sequence()
    return records


def _checkpoint(api_client) -> note.Checkpoint:
    response = api_client.get("/v1/log/checkpoint")
    assert response.status_code == 200
    return note.parse_checkpoint(note.split_note(response.content.decode())[0])


def test_the_checkpoint_is_a_signed_note_verified_by_both_published_keys(api_client, log_of_600, settings):
    response = api_client.get("/v1/log/checkpoint")
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    keys = api_client.get("/v1/log/keys").json()
    assert keys["origin"] == settings.LOG_ORIGIN == "127.0.0.1/provenance-log"
    assert [k["algorithm"] for k in keys["keys"]] == ["ed25519", "ml-dsa-65"]
    for key in keys["keys"]:
        text = note.verify_note(response.content.decode(), key["vkey"])
        assert text.startswith(settings.LOG_ORIGIN + "\n600\n")


def test_there_is_no_checkpoint_before_the_first_one(api_client):
    response = api_client.get("/v1/log/checkpoint")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_a_record_shows_pending_then_its_index_and_a_proof_that_verifies(api_client, key_client, org):
    generator, seed = factories.make_client_generator(org=org)
    record_id = key_client(org).post("/v1/records", factories.record_body(generator=generator, seed=seed),
                                      format="json").json()["record_id"]
    make_records(make_key(), 40)
    assert api_client.get(f"/v1/records/{record_id}").json()["log"] == {"status": "pending"}
    services.log_sequence()
    record = api_client.get(f"/v1/records/{record_id}").json()
    log = record["log"]
    assert set(log) == {"status", "index", "tree_size", "inclusion_proof", "checkpoint"}
    assert (log["status"], log["tree_size"]) == ("integrated", 41)
    checkpoint = note.parse_checkpoint(note.split_note(log["checkpoint"])[0])
    assert checkpoint.tree_size == 41
    assert rfc9162.verify_inclusion(log["index"], 41, leaf_from_api(record), decode(log["inclusion_proof"]),
                                    checkpoint.root_hash)


def test_the_record_route_spends_one_query_on_its_log(api_client, log_of_600):
    path = f"/v1/records/{log_of_600[300].pk}"
    api_client.get(path)
    with CaptureQueriesContext(connection) as queries:
        assert api_client.get(path).json()["log"]["index"] == 300
    log_queries = [q for q in queries.captured_queries if "transparency_" in q["sql"]]
    assert len(log_queries) == 1


def test_inclusion_by_index_spends_one_query(api_client, log_of_600):
    api_client.get("/v1/log/inclusion?index=3")
    with CaptureQueriesContext(connection) as queries:
        body = api_client.get("/v1/log/inclusion?index=457").json()
    assert body["record_id"] == str(log_of_600[457].pk) and body["index"] == 457
    log_queries = [q for q in queries.captured_queries if "ratecounter" not in q["sql"]]  # the per-IP limit's
    assert len(log_queries) == 1  # tiles, checkpoint and the record's id: one statement


def test_inclusion_by_record_id_and_by_index_agree(api_client, log_of_600):
    by_id = api_client.get(f"/v1/log/inclusion?record_id={log_of_600[599].pk}").json()
    by_index = api_client.get("/v1/log/inclusion?index=599").json()
    assert by_id == by_index and by_id["record_id"] == str(log_of_600[599].pk)
    root = _checkpoint(api_client).root_hash
    leaf = leaf_from_api(api_client.get(f"/v1/records/{log_of_600[599].pk}").json())
    assert rfc9162.verify_inclusion(599, 600, leaf, decode(by_index["inclusion_proof"]), root)


@pytest.mark.parametrize(("query", "status"), [("index=600", 404), ("index=-1", 400), ("index=x", 400), ("", 400),
                                               ("index=1&record_id=00000000-0000-0000-0000-000000000000", 400),
                                               ("record_id=00000000-0000-0000-0000-000000000000", 404)])
def test_inclusion_refuses_what_is_not_in_the_tree(api_client, log_of_600, query, status):
    response = api_client.get(f"/v1/log/inclusion?{query}")
    assert response.status_code == status
    assert response.json()["error"] == {400: "validation_error", 404: "not_found"}[status]


def test_consistency_proofs_verify_between_sizes(api_client, log_of_600):
    make_records(make_key(), 100)
    old_root = _checkpoint(api_client).root_hash
    services.log_sequence()
    new_root = _checkpoint(api_client).root_hash
    proof = api_client.get("/v1/log/consistency?first=600").json()
    assert (proof["first"], proof["second"]) == (600, 700)
    assert rfc9162.verify_consistency(600, 700, old_root, new_root, decode(proof["consistency_proof"]))
    between = api_client.get("/v1/log/consistency?first=600&second=700").json()
    assert between["consistency_proof"] == proof["consistency_proof"]


@pytest.mark.parametrize(("query", "status"), [("first=5&second=4", 400), ("first=1&second=701", 404),
                                               ("first=601", 404), ("first=-1", 400), ("second=3", 400)])
def test_consistency_refuses_bad_sizes(api_client, log_of_600, query, status):
    assert api_client.get(f"/v1/log/consistency?{query}").status_code == status


def test_tiles_follow_the_tlog_tiles_layout(api_client, log_of_600):
    full = api_client.get("/v1/log/tile/0/001")
    assert full.status_code == 200 and len(full.content) == 8192
    assert full["Content-Type"] == "application/octet-stream" and "immutable" in full["Cache-Control"]
    partial = api_client.get("/v1/log/tile/0/002.p/88").content
    level1 = api_client.get("/v1/log/tile/1/000.p/2").content
    tile0 = api_client.get("/v1/log/tile/0/000").content
    leaves = [tile[i:i + 32] for tile in (tile0, full.content, partial) for i in range(0, len(tile), 32)]
    assert level1 == rfc9162.mth(leaves[:256]) + rfc9162.mth(leaves[256:512])
    assert rfc9162.mth(leaves) == _checkpoint(api_client).root_hash
    assert api_client.get("/v1/log/tile/0/002.p/10").content == partial[:320]  # a smaller, older width


def test_entry_bundles_hash_to_the_level_zero_tiles(api_client, log_of_600):
    bundle = split_bundle(api_client.get("/v1/log/tile/entries/002.p/88").content)
    assert len(bundle) == 88
    tile = api_client.get("/v1/log/tile/0/002.p/88").content
    assert [rfc9162.leaf(entry) for entry in bundle] == [tile[i:i + 32] for i in range(0, len(tile), 32)]
    record = api_client.get(f"/v1/records/{log_of_600[512].pk}").json()
    assert rfc9162.leaf(bundle[0]) == leaf_from_api(record)
    assert len(split_bundle(api_client.get("/v1/log/tile/entries/000").content)) == 256


@pytest.mark.parametrize(("path", "status"), [("0/002", 404), ("0/002.p/89", 404), ("entries/002", 404),
                                              ("entries/003.p/1", 404), ("2/000.p/1", 404), ("0/2", 400),
                                              ("0/x000/002", 400), ("0/002.p/256", 400), ("64/000", 400),
                                              ("0/002.p/", 400), ("nope", 400), ("0/000/", 400),
                                              ("0/" + "x999/" * 8 + "999", 404),
                                              ("entries/" + "x999/" * 8 + "999", 404)])
def test_tiles_beyond_the_tree_or_malformed(api_client, log_of_600, path, status):
    response = api_client.get(f"/v1/log/tile/{path}")
    assert response.status_code == status
    assert response.json()["error"] == {400: "validation_error", 404: "not_found"}[status]


def test_log_routes_are_public_and_limited_per_ip(api_client, log_of_600, settings):
    settings.VERIFY_RATE_PER_MINUTE = 1
    assert api_client.get("/v1/log/tile/0/000").status_code == 200
    response = api_client.get("/v1/log/checkpoint")
    assert response.status_code == 429 and "Retry-After" in response


def test_a_verify_result_carries_the_log_of_its_record(api_client, key_client, org):
    from tests.media import photo_bytes

    generator = factories.make_generator(org=org, formats=["image"])
    signed = key_client(org).post("/v1/sign", {"content": _upload(photo_bytes()), "model": "m",
                                               "generator_id": str(generator.pk)}, format="multipart")
    assert signed.status_code == 201
    pending = api_client.post("/v1/verify", {"content": _upload(signed.content)}, format="multipart").json()
    assert pending["log"] == {"status": "pending"}
    services.log_sequence()
    batch = api_client.post("/v1/verify/batch", {"items": [{"content": base64.b64encode(signed.content).decode()},
                                                            {"content": base64.b64encode(b"x").decode()}]},
                            format="json").json()
    assert batch[0]["log"]["status"] == "integrated" and batch[0]["log"]["index"] == 0
    assert batch[1]["log"] is None


def _upload(data: bytes):
    import io

    return io.BytesIO(data)
