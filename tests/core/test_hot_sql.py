"""The hot-path lookups built from model metadata return exactly what the ORM returns."""

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from accounts.models import ApiKey, User
from core.hot_sql import ChildWithParents, RowInserter
from generators.models import GeneratorKey
from tests import factories

pytestmark = pytest.mark.django_db


def field_values(instance) -> dict:
    return {field.attname: getattr(instance, field.attname) for field in type(instance)._meta.concrete_fields}


def assert_same_rows(found, expected, parent_field: str):
    assert type(found) is type(expected)
    assert field_values(found) == field_values(expected)
    # The parent is attached as select_related would: no query to reach it.
    with CaptureQueriesContext(connection) as queries:
        parent = getattr(found, parent_field)
    assert len(queries) == 0
    assert field_values(parent) == field_values(getattr(expected, parent_field))
    assert found._state.adding is False and found._state.db == "default"


def test_generator_key_with_generator_matches_the_orm():
    # Covers the converters: a JSON list, binary key bytes, UUIDs and aware datetimes.
    org = factories.make_org(plan="pro")
    generator = factories.make_generator(org=org, formats=["image", "audio"])
    lookup = ChildWithParents(GeneratorKey, "generator", match=("generator",), where=GeneratorKey.objects.current())
    found = lookup.get(generator.pk)
    expected = GeneratorKey.objects.select_related("generator").get(generator=generator, retired_at__isnull=True)
    assert_same_rows(found, expected, "generator")
    assert found.generator.supported_formats == ["image", "audio"]
    assert isinstance(bytes(found.public_key), bytes) and len(bytes(found.public_key)) == 1952
    assert found.created_at.tzinfo is not None


def test_api_key_with_org_matches_the_orm_and_honours_the_extra_condition():
    org = factories.make_org()
    factories.make_api_key(org=org)
    api_key = ApiKey.objects.get(org=org)
    lookup = ChildWithParents(ApiKey, "org", match=("lookup_id",), where=ApiKey.objects.active())
    assert_same_rows(lookup.get(api_key.lookup_id), ApiKey.objects.select_related("org").get(pk=api_key.pk), "org")

    ApiKey.objects.filter(pk=api_key.pk).update(revoked_at=timezone.now())
    assert lookup.get(api_key.lookup_id) is None


def test_user_by_uuid_and_boolean_condition():
    org = factories.make_org()
    user = factories.make_user(org=org)
    lookup = ChildWithParents(User, "org", match=("id",), where=User.objects.filter(is_active=True))
    assert_same_rows(lookup.get(user.pk), User.objects.select_related("org").get(pk=user.pk), "org")
    assert lookup.get(uuid.uuid4()) is None
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert lookup.get(user.pk) is None


def test_a_record_with_its_three_parents_matches_the_orm():
    import base64

    from provenance.models import Record
    from provenance.services import Submission, record_submit

    org = factories.make_org()
    client_generator, seed = factories.make_client_generator(org=org)
    body = factories.record_body(generator=client_generator, seed=seed)
    record = record_submit(org=org, submission=Submission(
        **{name: body[name] for name in ("generator_id", "content_hash", "model", "watermark_id", "signed_payload")},
        signature=base64.b64decode(body["signature"])))
    lookup = ChildWithParents(Record, "org", "key", "generator", match=("id",))
    found = lookup.get(record.pk)
    expected = Record.objects.select_related("org", "key", "generator").get(pk=record.pk)
    for parent_field in ("org", "key", "generator"):
        assert_same_rows(found, expected, parent_field)
    assert bytes(found.signature) == bytes(expected.signature) and found.mark_in_file is None
    assert lookup.get(uuid.uuid4()) is None


def test_parents_must_be_tables_of_their_own():
    with pytest.raises(ValueError):
        ChildWithParents(ApiKey, "org", "org", match=("lookup_id",))
    with pytest.raises(ValueError):
        ChildWithParents(ApiKey, match=("lookup_id",))


def test_the_where_queryset_may_name_a_parents_fields_and_its_values_are_parameters():
    org = factories.make_org(name="Studio")
    factories.make_api_key(org=org)
    api_key = ApiKey.objects.get(org=org)
    named = ChildWithParents(ApiKey, "org", match=("lookup_id",), where=ApiKey.objects.filter(org__name="Studio"))
    assert_same_rows(named.get(api_key.lookup_id), ApiKey.objects.select_related("org").get(pk=api_key.pk), "org")
    hostile = ApiKey.objects.filter(org__name="x' OR '1'='1")
    assert ChildWithParents(ApiKey, "org", match=("lookup_id",), where=hostile).get(api_key.lookup_id) is None


def test_the_where_queryset_is_of_the_child_and_reaches_only_the_parents_joined_here():
    with pytest.raises(ValueError):
        ChildWithParents(ApiKey, "org", match=("lookup_id",), where=User.objects.filter(is_active=True))
    through_another_key = ChildWithParents(ApiKey, "org", match=("lookup_id",),
                                           where=ApiKey.objects.filter(user__is_active=True))
    with pytest.raises(ValueError):
        through_another_key.get("x")


def test_one_query_and_values_are_parameters_not_sql():
    factories.make_api_key(org=factories.make_org())
    lookup = ChildWithParents(ApiKey, "org", match=("lookup_id",))
    with CaptureQueriesContext(connection) as queries:
        assert lookup.get("x' OR '1'='1") is None
    assert len(queries) == 1


def test_every_match_value_is_required():
    lookup = ChildWithParents(ApiKey, "org", match=("lookup_id",))
    with pytest.raises(ValueError):
        lookup.get()


def test_row_inserter_writes_what_bulk_create_would_and_splits_past_the_parameter_limit(monkeypatch):
    from audit.models import AuditEvent
    from core import hot_sql

    org = factories.make_org()
    monkeypatch.setattr(hot_sql, "MAX_PARAMETERS", 12)  # 5 fields a row: 2 rows a statement
    inserter = RowInserter(AuditEvent)
    events = [AuditEvent(org=org, type="sign", metadata={"n": n, "text": "é"}) for n in range(5)]
    with CaptureQueriesContext(connection) as queries:
        inserter.insert(events)
    assert len(queries) == 3
    stored = {event.pk: event for event in AuditEvent.objects.filter(org=org)}
    assert set(stored) == {event.pk for event in events}
    for event in events:
        assert field_values(stored[event.pk]) == field_values(event)
        assert event._state.adding is False


def test_row_inserter_needs_the_primary_key():
    from audit.models import AuditEvent

    event = AuditEvent(org=factories.make_org(), type="sign", metadata={})
    event.pk = None
    with pytest.raises(ValueError):
        RowInserter(AuditEvent).insert([event])


def test_order_takes_the_first_of_several_matches_as_the_orm_orders_them():
    from datetime import timedelta

    from provenance.models import Record

    org = factories.make_org()
    generator, _ = factories.make_client_generator(org=org)
    key = generator.keys.get()
    now = timezone.now()
    # Two share the earliest time: the id settles it, as in the ORM's order_by("signed_at", "id").
    records = Record.objects.bulk_create([
        Record(org=org, generator=generator, key=key, model="m", watermark_id="none",
               content_hash="sha3-256:" + "a" * 64, signature=b"x", signed_at=now + timedelta(seconds=offset))
        for offset in (5, 0, 0, 9)])
    lookup = ChildWithParents(Record, "org", "key", "generator", match=("content_hash",), order=("signed_at", "id"))
    expected = Record.objects.filter(content_hash="sha3-256:" + "a" * 64).order_by("signed_at", "id").first()
    assert lookup.get("sha3-256:" + "a" * 64).pk == expected.pk
    assert expected.pk == min((r for r in records if r.signed_at == now), key=lambda r: r.pk).pk
    assert "ORDER BY" in lookup._compiled[0]
