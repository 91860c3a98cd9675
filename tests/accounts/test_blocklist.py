import io
import time
import uuid

import pytest
from django.core.management import call_command

from accounts import blocklist
from accounts.models import BlockedSessionToken

pytestmark = pytest.mark.django_db


def test_every_logged_out_token_stays_blocked_past_the_database_caches_cull_size():
    # Django's database cache keeps 300 entries and culls a third beyond that; the blocklist must not.
    jtis = [uuid.uuid4().hex for _ in range(400)]
    for jti in jtis:
        blocklist.block(jti, int(time.time()) + 3600)
    assert all(blocklist.is_blocked(jti) for jti in jtis)
    assert not blocklist.is_blocked(uuid.uuid4().hex)


def test_blocking_twice_is_harmless_and_purge_drops_only_expired_entries():
    live, dead = uuid.uuid4().hex, uuid.uuid4().hex
    blocklist.block(live, int(time.time()) + 3600)
    blocklist.block(live, int(time.time()) + 3600)
    blocklist.block(dead, int(time.time()) + 3600)
    BlockedSessionToken.objects.filter(jti=dead).update(expires_at="2000-01-01T00:00:00Z")
    call_command("purge_expired", stdout=io.StringIO())
    assert list(BlockedSessionToken.objects.values_list("jti", flat=True)) == [live]
