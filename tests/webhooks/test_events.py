"""`event_emit`, the one seam of webhook events, and the `emitted` fixture that listens there."""

import pytest

from webhooks import events
from webhooks.events import event_emit

pytestmark = pytest.mark.django_db


def test_the_emitted_fixture_captures_an_emitter_it_does_not_know_by_name(org, emitted):
    # This module is none of the app services the fixture once patched by name: its events count too.
    event_emit(org=org, kind="generator.revoked", data={"generator_id": "g"})
    events.event_emit(org=org, kind="quota.warning", data={})
    assert emitted == [(org.pk, "generator.revoked", {"generator_id": "g"}), (org.pk, "quota.warning", {})]


def test_an_unknown_kind_is_refused_and_not_announced(org, emitted):
    with pytest.raises(ValueError):
        event_emit(org=org, kind="record.deleted", data={})
    assert emitted == []


def test_a_listener_hears_nothing_once_it_stops(org):
    heard = []
    stop = events.event_listen(lambda org, kind, data: heard.append(kind))
    event_emit(org=org, kind="quota.warning", data={})
    stop()
    event_emit(org=org, kind="quota.limit", data={})
    assert heard == ["quota.warning"]
