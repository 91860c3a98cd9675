# Record.disclosures: the Disclosure flags a record's signed file carried. Existing rows get what can be derived,
# one UPDATE per derivation (each row is written once, so the migration is one pass over the table however
# large): client-managed records carry none (the service wrote no file); server-managed records carry their
# token in the file's metadata, and a mark where their watermark_id is not "none". Whether a manifest was
# embedded was never stored, so those rows leave the C2PA flag off: a lower bound (docs/decisions.md,
# "Disclosures per record"). Records whose generator row is gone do not exist (cascade), so none stays null.

from django.db import migrations, models

MARK, METADATA = 1, 2  # provenance.models.Disclosure, as it was when written
NO_WATERMARK = "none"


def _derive(apps, schema_editor):
    record = apps.get_model("provenance", "Record")
    generator = apps.get_model("generators", "Generator")
    of_mode = lambda mode: models.Exists(generator.objects.filter(pk=models.OuterRef("generator_id"), mode=mode))  # noqa: E731
    records = record.objects.using(schema_editor.connection.alias)
    records.filter(of_mode("client")).update(disclosures=0)
    server = records.filter(of_mode("server"))
    server.exclude(watermark_id=NO_WATERMARK).update(disclosures=MARK | METADATA)
    server.filter(watermark_id=NO_WATERMARK).update(disclosures=METADATA)


class Migration(migrations.Migration):

    dependencies = [
        ("generators", "0003_key_backends"),
        ("provenance", "0012_record_spare_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="record",
            name="disclosures",
            field=models.SmallIntegerField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(_derive, migrations.RunPython.noop, elidable=True),
    ]
