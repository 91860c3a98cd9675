# record_org_newest also carries each record's format and disclosures (INCLUDE), so the compliance report's
# GROUP BY over an organization's period is an index-only scan instead of a visit to every row's page
# (docs/performance.md, "Compliance report"). Built beside the old index without blocking writes
# (core/covering_index.py); the name stays.

from django.db import migrations, models

from core.covering_index import index_swap

INDEX = dict(table="provenance_record", name="record_org_newest", key='"org_id", "signed_at" DESC')


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("provenance", "0013_record_disclosures"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(index_swap(**INDEX, include=("format", "disclosures")),
                                                      index_swap(**INDEX, include=()))],
            state_operations=[
                migrations.RemoveIndex(model_name="record", name="record_org_newest"),
                migrations.AddIndex(
                    model_name="record",
                    index=models.Index(fields=["org", "-signed_at"], include=("format", "disclosures"),
                                       name="record_org_newest"),
                ),
            ],
        ),
    ]
