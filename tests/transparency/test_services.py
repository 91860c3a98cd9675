"""The sequencer and checkpoints: order, exactly-once integration, crash recovery, signatures."""

import base64
import random
from datetime import timedelta

import pytest
from dilithium_py.ml_dsa import ML_DSA_65
from django.core.management import call_command

from provenance.models import Record
from tests.transparency import rfc9162
from tests.transparency.logs import decode, leaves_from_records, make_key, make_records
from transparency import note, selectors, services
from transparency.models import LogState, LogTile

pytestmark = pytest.mark.django_db


def _state() -> LogState:
    return LogState.objects.get(pk=LogState.SINGLETON)


def _leaves_in_log_order(api_client) -> list[bytes]:
    from tests.transparency.logs import leaf_from_api

    ids = Record.objects.filter(log_index__isnull=False).order_by("log_index").values_list("id", flat=True)
    return [leaf_from_api(api_client.get(f"/v1/records/{record_id}").json()) for record_id in ids]




def test_the_sequencer_integrates_pending_records_in_order_and_signs_a_checkpoint(api_client, settings):
    settings.VERIFY_RATE_PER_MINUTE = 100_000
    key = make_key()
    records = make_records(key, 12)
    assert services.log_sequence() == 12
    indexes = dict(Record.objects.values_list("id", "log_index"))
    assert [indexes[r.pk] for r in records] == list(range(12))
    state = _state()
    assert state.tree_size == 12
    assert bytes(state.root_hash) == rfc9162.mth(_leaves_in_log_order(api_client))
    checkpoint = note.parse_checkpoint(note.split_note(bytes(state.checkpoint).decode())[0])
    assert (checkpoint.origin, checkpoint.tree_size, checkpoint.root_hash) == (settings.LOG_ORIGIN, 12,
                                                                                 bytes(state.root_hash))


def test_both_checkpoint_signatures_verify_with_the_published_keys():
    make_records(make_key(), 3)
    services.log_sequence()
    signed = selectors.latest_checkpoint()
    keys = selectors.log_public_keys()["keys"]
    for key in keys:
        note.verify_note(signed, key["vkey"])
    ml_dsa = next(k for k in keys if k["algorithm"] == "ml-dsa-65")
    text, signatures = note.split_note(signed)
    signature = next(s for s in signatures if s.key_id.hex() == ml_dsa["key_id"])
    assert ML_DSA_65.verify(base64.b64decode(ml_dsa["public_key"]), text.encode(), signature.signature)


def test_a_thousand_records_in_random_batches_stay_consistent():
    rng = random.Random(5)
    key = make_key()
    sizes, roots = [0], [rfc9162.sha256(b"")]
    while sizes[-1] < 1000:
        make_records(key, rng.randint(1, 120))
        services.log_sequence(limit=rng.randint(1, 300))
        state = _state()
        sizes.append(state.tree_size)
        roots.append(bytes(state.root_hash))
    leaves = leaves_from_records()
    for size, root in zip(sizes, roots, strict=True):
        assert rfc9162.mth(leaves[:size]) == root
        proof = selectors.consistency_between(first=size, second=None)
        assert rfc9162.verify_consistency(size, sizes[-1], root, roots[-1], decode(proof["consistency_proof"]))
    for index in rng.sample(range(sizes[-1]), 50):
        log = selectors.inclusion_for_index(index=index)
        assert rfc9162.verify_inclusion(index, sizes[-1], leaves[index], decode(log["inclusion_proof"]), roots[-1])


def test_a_batch_killed_midway_leaves_nothing_and_the_rerun_integrates_each_record_once(monkeypatch):
    key = make_key()
    make_records(key, 300)
    services.log_sequence()
    before = (_state().tree_size, bytes(_state().root_hash), {(t.level, t.index, bytes(t.hashes))
                                                              for t in LogTile.objects.all()})
    make_records(key, 400)

    def crash(state):
        raise KeyboardInterrupt  # indices and tiles are written by now: the crash comes at the last step

    monkeypatch.setattr(services, "_checkpoint_sign", crash)
    with pytest.raises(KeyboardInterrupt):
        services.log_sequence()
    assert (_state().tree_size, bytes(_state().root_hash),
            {(t.level, t.index, bytes(t.hashes)) for t in LogTile.objects.all()}) == before
    assert Record.objects.filter(log_index__isnull=True).count() == 400
    monkeypatch.undo()
    assert services.log_sequence() == 400
    assert sorted(Record.objects.values_list("log_index", flat=True)) == list(range(700))
    assert note.parse_checkpoint(note.split_note(selectors.latest_checkpoint())[0]).tree_size == 700


def test_a_record_that_commits_late_with_an_earlier_time_is_integrated_next():
    key = make_key()
    make_records(key, 5)
    services.log_sequence()
    late = make_records(key, 1, signed_at=Record.objects.order_by("signed_at").first().signed_at - timedelta(hours=1))
    services.log_sequence()
    assert Record.objects.get(pk=late[0].pk).log_index == 5


def test_an_idle_sequencer_signs_nothing_new_until_the_keys_change(settings):
    make_records(make_key(), 2)
    services.log_sequence()
    first = bytes(_state().checkpoint)
    assert services.log_integrate_batch().checkpoint_signed is False
    assert bytes(_state().checkpoint) == first
    settings.LOG_SIGNING_KEY = "a-rotated-log-key"
    assert services.log_integrate_batch().checkpoint_signed is True
    new_keys = selectors.log_public_keys()["keys"]
    note.verify_note(selectors.latest_checkpoint(), new_keys[0]["vkey"])


def test_the_checkpoint_can_be_signed_on_demand_from_an_empty_log():
    LogState.objects.all().delete()
    call_command("log_checkpoint", stdout=open("/dev/null", "w"))  # noqa: SIM115
    checkpoint = note.parse_checkpoint(note.split_note(selectors.latest_checkpoint())[0])
    assert (checkpoint.tree_size, checkpoint.root_hash) == (0, rfc9162.sha256(b""))


def test_the_sequencer_command_runs_once():
    make_records(make_key(), 3)
    call_command("log_sequencer", "--once", stdout=open("/dev/null", "w"))  # noqa: SIM115
    assert _state().tree_size == 3


def test_record_creation_is_untouched_by_the_log(key_client, org):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests import factories

    generator, seed = factories.make_client_generator(org=org)
    client = key_client(org)
    with CaptureQueriesContext(connection) as queries:
        response = client.post("/v1/records", factories.record_body(generator=generator, seed=seed), format="json")
    assert response.status_code == 201
    assert not any("transparency_" in query["sql"] for query in queries.captured_queries)
    assert Record.objects.get(pk=response.json()["record_id"]).log_index is None
