"""The record a read watermark names: the newest server-marked one, with its parents, by SQL built once."""

import datetime as dt

import pytest
from django.db import connection
from django.db.models.sql.compiler import SQLCompiler
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from generators.models import GeneratorKey
from provenance.models import Record
from tests import factories
from verification.selectors import record_for_watermark

pytestmark = pytest.mark.django_db
MARK = 0x1234


def _record(org, generator, *, age_seconds: int, mark: str = f"{MARK:016x}") -> Record:
    key = GeneratorKey.objects.filter(generator=generator).first()
    return Record.objects.create(org=org, generator=generator, key=key, model="m", watermark_id=mark,
                                 content_hash="sha3-256:" + "0" * 64, signature=b"\0",
                                 signed_at=timezone.now() - dt.timedelta(seconds=age_seconds))


def test_the_newest_server_marked_record_with_its_parents_in_one_statement(monkeypatch):
    org = factories.make_org()
    server = factories.make_generator(org=org)
    client, _ = factories.make_client_generator(org=org)
    _record(org, server, age_seconds=60)
    newest = _record(org, server, age_seconds=30)
    _record(org, client, age_seconds=0)  # newer, but a client's record: its mark is only a claim
    _record(org, server, age_seconds=0, mark=f"{MARK + 1:016x}")

    def no_orm_compiling(*args, **kwargs):
        raise AssertionError("the watermark lookup compiled a queryset")

    monkeypatch.setattr(SQLCompiler, "as_sql", no_orm_compiling)
    with CaptureQueriesContext(connection) as queries:
        found = record_for_watermark(MARK)
        assert (found.pk, found.org.name, found.generator.mode, found.key.pk) == (
            newest.pk, org.name, "server", newest.key_id)
    assert len(queries) == 1
    assert record_for_watermark(MARK + 2) is None
