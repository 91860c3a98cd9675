"""Signed-note checkpoints: both log keys must have signed, with the pinned keys, for the pinned origin."""

import pytest

from svc_client.checkpoint import CheckpointError, checkpoint_verify, log_keys_from_document
from tests.client.fake_log import FakeLog, log_keys, mth, signed_checkpoint


@pytest.fixture(scope="module")
def log():
    log = FakeLog()
    for i in range(5):
        log.append(f"entry {i}".encode())
    log.publish()
    return log


def test_a_checkpoint_signed_by_both_pinned_keys_verifies(log):
    checkpoint = checkpoint_verify(log.checkpoint(), log_keys_from_document(log.keys_document()))
    assert (checkpoint.origin, checkpoint.tree_size) == (log.origin, 5)
    assert checkpoint.root_hash == mth(log.leaves)


def test_pinned_keys_are_read_from_json_a_list_or_vkey_lines(log):
    vkeys = [key.vkey for key in log.keys]
    for document in (log.keys_document(), vkeys, "\n".join(vkeys), {"keys": vkeys}):
        assert len(log_keys_from_document(document)) == 2


def test_a_checkpoint_missing_the_ml_dsa_signature_is_refused(log):
    note = signed_checkpoint(log.origin, 5, mth(log.leaves), log.keys[:1])
    with pytest.raises(CheckpointError, match="no signature by the pinned ml-dsa-65 key"):
        checkpoint_verify(note, log_keys_from_document(log.keys_document()))


def test_a_checkpoint_signed_by_other_keys_of_the_same_name_is_refused(log):
    note = signed_checkpoint(log.origin, 5, mth(log.leaves), log_keys(log.origin))
    with pytest.raises(CheckpointError, match="no signature by the pinned"):
        checkpoint_verify(note, log_keys_from_document(log.keys_document()))


def test_an_altered_checkpoint_body_is_refused(log):
    note = log.checkpoint().replace("\n5\n", "\n6\n", 1)
    with pytest.raises(CheckpointError, match="does not verify"):
        checkpoint_verify(note, log_keys_from_document(log.keys_document()))


def test_a_vkey_with_a_wrong_key_id_is_refused(log):
    name, _, material = log.keys[0].vkey.split("+", 2)
    with pytest.raises(CheckpointError, match="wrong key id"):
        log_keys_from_document([f"{name}+00000000+{material}"])
