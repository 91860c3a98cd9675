"""Key-ring settings: `id:secret` lists, newest first; today's plain values keep their meaning."""

import pytest

from core.secret_ring import RingEntry, RingError, read_key_encryption_key, read_token_signing_key


def test_a_ring_lists_its_keys_newest_first() -> None:
    assert read_key_encryption_key("k2:new-secret,k1:old-secret") == (
        RingEntry("k2", "new-secret"), RingEntry("k1", "old-secret"))


def test_a_plain_value_of_today_is_the_one_legacy_key_taken_verbatim() -> None:
    assert read_key_encryption_key("a-secret-with-a-trailing-space ") == (
        RingEntry("legacy", "a-secret-with-a-trailing-space "),)


def test_the_legacy_secret_can_stand_beside_new_keys_with_or_without_its_id() -> None:
    assert read_key_encryption_key("k2:new, old-secret") == (RingEntry("k2", "new"), RingEntry("legacy", "old-secret"))
    assert read_key_encryption_key("k2:new,legacy:old:with:colons") == (
        RingEntry("k2", "new"), RingEntry("legacy", "old:with:colons"))


def test_token_signing_key_keeps_accepting_several_plain_secrets() -> None:
    assert read_token_signing_key("first, second") == (RingEntry("legacy", "first"), RingEntry("legacy-2", "second"))
    assert read_token_signing_key("t2:new,first") == (RingEntry("t2", "new"), RingEntry("legacy", "first"))


@pytest.mark.parametrize("value, says", [
    ("k2:new,,k1:old", "entry 2 is empty"),
    ("k2:new,", "entry 2 is empty"),
    ("   ", "is empty"),
    ("k2:new,k2:other", "'k2' is listed twice"),
    ("k2:same,k1:same", "ids 'k2' and 'k1' have the same secret"),
    ("k2:", "(id 'k2') has an empty secret"),
    ("k2:new,k1:  ", "(id 'k1') has an empty secret"),
    ("bad id:secret", "entry 1 has a malformed key id"),
    (":secret", "entry 1 has a malformed key id"),
    ("-k:secret", "entry 1 has a malformed key id"),
    ("k" * 33 + ":secret", "entry 1 has a malformed key id"),
    ("k2:new,legacy:old,plain", "'legacy' is listed twice"),
    ("plain-one,plain-two", "2 entries have no id"),
    ("legacy:old,old-again", "'legacy' is listed twice"),
])
def test_malformed_key_encryption_rings_are_refused_with_a_clear_message(value: str, says: str) -> None:
    with pytest.raises(RingError) as raised:
        read_key_encryption_key(value)
    message = str(raised.value)
    assert message.startswith("KEY_ENCRYPTION_KEY") and says in message


def test_messages_never_echo_a_secret() -> None:
    for value in ("bad id:top-secret-value", "k1:top-secret-value,k2:top-secret-value", "k1:x,,top-secret-value"):
        with pytest.raises(RingError) as raised:
            read_token_signing_key(value)
        assert "top-secret" not in str(raised.value) and "bad id" not in str(raised.value)


@pytest.mark.parametrize("value", ["t1:a,t1:b", "t1:", "t1:a,,t2:b", "", "same,same"])
def test_malformed_token_rings_are_refused(value: str) -> None:
    with pytest.raises(RingError, match=r"^TOKEN_SIGNING_KEY"):
        read_token_signing_key(value)
