"""provenance 0002: records stored before fingerprint kinds get theirs."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from generators.models import GeneratorKey
from provenance.disclosures import CarriedDisclosure
from provenance.models import Record
from provenance.phash_bands import phash_bands, signed_value
from tests import factories

BEFORE = [("provenance", "0001_initial")]
AFTER = [("provenance", "0002_fingerprint_kind")]


def _migrate(targets) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor


@pytest.mark.django_db(transaction=True)
def test_stored_phashes_become_image_phashes_with_their_signed_value(org):
    key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    old_record = _migrate(BEFORE).loader.project_state(BEFORE).apps.get_model("provenance", "Record")
    try:
        phashes = ["8f0f12345678abcd", "7fffffffffffffff", "8000000000000000", "0000000000000001", None]
        for index, phash in enumerate(phashes):
            bands = phash_bands(phash) if phash else (None,) * 4
            old_record.objects.create(org_id=org.pk, generator_id=key.generator_id, key_id=key.pk, model="m",
                                      watermark_id=f"wm-{index}", content_hash="sha3-256:" + "0" * 64,
                                      signature=b"\0", phash=phash, phash_band0=bands[0], phash_band1=bands[1],
                                      phash_band2=bands[2], phash_band3=bands[3])
    finally:
        _migrate(AFTER)
    try:
        # Only the columns 0002 has: the model's later fields (log_index) are not there yet.
        stored = {phash: (kind, value) for phash, kind, value
                  in Record.objects.values_list("phash", "fingerprint_kind", "phash_value")}
        assert stored == {phash: ("image-phash", signed_value(phash)) for phash in phashes[:-1]} | {None: (None, None)}
    finally:
        # Back to the latest schema: later tests of this worker that commit would meet 0002's otherwise.
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())


def _content_hash_indexes() -> list[list[str]]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Record._meta.db_table)
    return sorted(details["columns"] for details in constraints.values()
                  if details["index"] and not details["primary_key"] and details["columns"][0] == "content_hash")


@pytest.mark.django_db(transaction=True)
def test_0009_replaces_the_content_hash_index_and_clears_client_records_kept_marks(org):
    before = [("provenance", "0008_record_mark_in_file")]
    key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    old_record = _migrate(before).loader.project_state(before).apps.get_model("provenance", "Record")
    try:
        assert ["content_hash"] in _content_hash_indexes()
        for fmt, kept in [("image", True), ("image", False), (None, True), (None, False), (None, None)]:
            old_record.objects.create(org_id=org.pk, generator_id=key.generator_id, key_id=key.pk, model="m",
                                      watermark_id="none", content_hash="sha3-256:" + "0" * 64, signature=b"\0",
                                      format=fmt, mark_in_file=kept)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert _content_hash_indexes() == [["content_hash", "signed_at", "id"]]
    # A server-signed record's file carries its own mark; a client's file may carry another record's.
    assert sorted(Record.objects.values_list("format", "mark_in_file"), key=str) == sorted(
        [("image", True), ("image", False), (None, None), (None, False), (None, None)], key=str)
    # The fingerprint triggers survive (SQLite drops them when a migration rebuilds the table).
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s",
                           [Record._meta.db_table])
        else:
            cursor.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal",
                           [Record._meta.db_table])
        assert cursor.fetchone()[0] >= 1


@pytest.mark.django_db(transaction=True)
def test_0013_derives_disclosures_from_the_generators_mode_and_the_watermark(org):
    before = [("provenance", "0012_record_spare_indexes")]
    server_key = GeneratorKey.objects.get(generator=factories.make_generator(org=org))
    client_generator, _ = factories.make_client_generator(org=org)
    client_key = GeneratorKey.objects.get(generator=client_generator)
    old_record = _migrate(before).loader.project_state(before).apps.get_model("provenance", "Record")
    try:
        for key, watermark_id in [(server_key, "0123456789abcdef"), (server_key, "none"), (client_key, "wm-1"),
                                  (client_key, "none")]:
            old_record.objects.create(org_id=org.pk, generator_id=key.generator_id, key_id=key.pk, model=watermark_id,
                                      watermark_id=watermark_id, content_hash="sha3-256:" + "0" * 64, signature=b"\0")
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    stored = {(generator_id, watermark_id): flags
              for generator_id, watermark_id, flags in Record.objects.values_list("generator_id", "watermark_id",
                                                                                  "disclosures")}
    # Server-managed: the token in the metadata always, the mark where one was embedded; client-managed: nothing.
    both = CarriedDisclosure.MARK | CarriedDisclosure.METADATA
    assert stored == {(server_key.generator_id, "0123456789abcdef"): both,
                      (server_key.generator_id, "none"): CarriedDisclosure.METADATA,
                      (client_generator.pk, "wm-1"): 0, (client_generator.pk, "none"): 0}
