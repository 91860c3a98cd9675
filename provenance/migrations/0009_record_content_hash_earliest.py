"""Verification's exact-hash lookup: an index on (content_hash, signed_at), replacing content_hash's own.

The composite index answers every equality lookup the single-column one did (its leading column), and
gives the earliest record of a hash from its first row. The old index is dropped by name, found through
introspection (PostgreSQL also had a `varchar_pattern_ops` twin for LIKE, which nothing uses), rather than
with AlterField: on SQLite an AlterField rebuilds provenance_record and drops its fingerprint trigger.

`mark_in_file` now holds whether the record's *own* mark is in its file (verification/services.py). A
server-signed record's file carries its own mark, so its kept answers stand; a client-managed record's
file may carry another record's mark, so its kept "true" answers are cleared and read again once.
"""

from django.db import migrations, models


def _drop_single_column_indexes(apps, schema_editor):
    connection = schema_editor.connection
    table = apps.get_model("provenance", "Record")._meta.db_table
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, table)
    for name, details in constraints.items():
        if details["index"] and not details["unique"] and not details["primary_key"] \
                and details["columns"] == ["content_hash"]:
            schema_editor.execute(f"DROP INDEX {schema_editor.quote_name(name)}")


def _create_single_column_index(apps, schema_editor):
    record = apps.get_model("provenance", "Record")
    field = record._meta.get_field("content_hash")
    schema_editor.execute(schema_editor._create_index_sql(record, fields=[field]))


def _clear_client_records_marks(apps, schema_editor):
    apps.get_model("provenance", "Record").objects.filter(format__isnull=True, mark_in_file=True).update(
        mark_in_file=None)


class Migration(migrations.Migration):

    dependencies = [
        ("provenance", "0008_record_mark_in_file"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="record",
            index=models.Index(fields=["content_hash", "signed_at"], name="record_content_hash_earliest"),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.AlterField(model_name="record", name="content_hash",
                                                    field=models.CharField(max_length=73))],
            database_operations=[migrations.RunPython(_drop_single_column_indexes, _create_single_column_index)],
        ),
        migrations.RunPython(_clear_client_records_marks, migrations.RunPython.noop),
    ]
