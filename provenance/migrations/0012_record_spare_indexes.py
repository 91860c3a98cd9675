# Two spare indexes of provenance_record go, without rebuilding anything: the watermark id keeps one plain
# B-tree (renamed record_watermark_id; its varchar_pattern_ops copy for LIKE is dropped, no query uses it)
# and the organization's own index goes, record_org_newest (organization first) serving the foreign key.
# As in 0010, SQLite keeps the organization's spare index: altering the field would rebuild the table
# and lose the fingerprint triggers of migration 0003.

import django.db.models.deletion
from django.db import migrations, models

WATERMARK_INDEX = "record_watermark_id"


def _index_names(schema_editor, record, column: str) -> list[str]:
    return schema_editor._constraint_names(record, [column], index=True, unique=False, primary_key=False)


def _forwards(apps, schema_editor):
    record = apps.get_model("provenance", "Record")
    quote = schema_editor.quote_name
    for name in _index_names(schema_editor, record, "watermark_id"):
        if name == WATERMARK_INDEX:
            continue
        if schema_editor.connection.vendor == "postgresql" and not name.endswith("_like"):
            schema_editor.execute(f"ALTER INDEX {quote(name)} RENAME TO {quote(WATERMARK_INDEX)}")
        else:
            schema_editor.execute(f"DROP INDEX {quote(name)}")
    if not _index_names(schema_editor, record, "watermark_id"):  # SQLite: dropped above, made again by name
        schema_editor.execute(f"CREATE INDEX {quote(WATERMARK_INDEX)} ON {quote(record._meta.db_table)} "
                              f"({quote('watermark_id')})")
    if schema_editor.connection.vendor == "postgresql":
        for name in _index_names(schema_editor, record, "org_id"):
            schema_editor.execute(f"DROP INDEX {quote(name)}")


def _backwards(apps, schema_editor):
    record = apps.get_model("provenance", "Record")
    watermark = record._meta.get_field("watermark_id")
    schema_editor.execute(f"DROP INDEX IF EXISTS {schema_editor.quote_name(WATERMARK_INDEX)}")
    schema_editor.execute(schema_editor._create_index_sql(record, fields=[watermark]))
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(schema_editor._create_like_index_sql(record, watermark))
        if not _index_names(schema_editor, record, "org_id"):
            schema_editor.execute(schema_editor._create_index_sql(record, fields=[record._meta.get_field("org")]))


class Migration(migrations.Migration):

    dependencies = [
        ('accounts', '0004_organization_active_webhooks'),
        ('provenance', '0011_record_signature_timestamp'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name='record',
                    name='org',
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name='records', to='accounts.organization'),
                ),
                migrations.AlterField(
                    model_name='record',
                    name='watermark_id',
                    field=models.CharField(max_length=128),
                ),
                migrations.AddIndex(
                    model_name='record',
                    index=models.Index(fields=['watermark_id'], name='record_watermark_id'),
                ),
            ],
            database_operations=[migrations.RunPython(_forwards, _backwards)],
        ),
    ]
