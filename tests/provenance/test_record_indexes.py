"""provenance_record's indexes: the lookups that grow with the table read the index meant for them, and
migration 0012 leaves no spare index behind (docs/performance.md, "Growth to 10^7 records")."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from generators.models import GeneratorKey
from provenance.models import Record
from tests import factories
from verification import selectors


def _indexes_on(columns: list[str]) -> list[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Record._meta.db_table)
    return sorted(name for name, details in constraints.items()
                  if details["index"] and not details["primary_key"] and details["columns"] == columns)


def _plan(sql: str, params: list) -> str:
    """The plan's text; PostgreSQL is told to avoid sequential scans (a test's table is tiny)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
        return "\n".join(" ".join(map(str, row)) for row in cursor.fetchall())


def _records(org, count: int = 20) -> None:
    key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    Record.objects.bulk_create(
        Record(org=org, generator_id=key.generator_id, key=key, model="m", watermark_id=f"{i:016x}",
               content_hash="sha3-256:" + f"{i:064x}", signature=b"\0", format="image") for i in range(count))


@pytest.mark.django_db
def test_the_watermark_lookup_reads_the_plain_watermark_index(org):
    _records(org)
    sql, where_params, *_ = selectors._NEWEST_SERVER_MARK._compiled or selectors._NEWEST_SERVER_MARK._compile()
    assert "record_watermark_id" in _plan(sql, [f"{5:016x}", *where_params])
    assert selectors.record_for_watermark(5).watermark_id == f"{5:016x}"


@pytest.mark.django_db
def test_the_watermark_id_has_one_index_and_the_organization_none_of_its_own():
    assert _indexes_on(["watermark_id"]) == ["record_watermark_id"]  # no varchar_pattern_ops copy
    # PostgreSQL: record_org_newest (organization first) serves the foreign key; SQLite keeps its spare one.
    assert len(_indexes_on(["org_id"])) == (0 if connection.vendor == "postgresql" else 1)
    # PostgreSQL lists the columns it INCLUDEs (migration 0014) after the key's; SQLite has no INCLUDE.
    covered = ["format", "disclosures"] if connection.vendor == "postgresql" else []
    assert _indexes_on(["org_id", "signed_at", *covered]) == ["record_org_newest"]


@pytest.mark.django_db
def test_an_organizations_records_are_found_through_an_index_led_by_the_organization(org):
    _records(org)
    sql, params = Record.objects.filter(org=org).values_list("id").query.sql_with_params()
    plan = _plan(sql, list(params))
    # Any of the three indexes led by the organization serves it (record_org_newest, or with model or format
    # second: on a near-empty table the planner's pick among them follows the statistics of the moment).
    led_by_org = ("record_org_newest", "record_org_model_newest", "record_org_format_newest")
    assert any(name in plan for name in led_by_org) or (connection.vendor == "sqlite" and "org_id" in plan), plan


@pytest.mark.django_db(transaction=True)
def test_0012_renames_and_drops_without_losing_the_fingerprint_trigger():
    before = [("provenance", "0011_record_signature_timestamp")]
    executor = MigrationExecutor(connection)
    executor.migrate(before)
    try:
        postgresql = connection.vendor == "postgresql"
        assert len(_indexes_on(["watermark_id"])) == (2 if postgresql else 1)  # with the _like copy
        assert len(_indexes_on(["org_id"])) == 1
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert _indexes_on(["watermark_id"]) == ["record_watermark_id"]
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
                           [Record._meta.db_table])
        else:
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                           [Record._meta.db_table])
        assert cursor.fetchone()[0] >= 1
