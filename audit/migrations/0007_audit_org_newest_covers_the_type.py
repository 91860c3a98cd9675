# audit_org_newest also carries each event's type (INCLUDE), so counting an organization's events of one type
# over a period (the compliance report's verifications) is an index-only scan (docs/performance.md,
# "Compliance report"). Built beside the old index without blocking writes (core/covering_index.py); the
# name stays.

from django.db import migrations, models

from core.covering_index import index_swap

INDEX = dict(table="audit_auditevent", name="audit_org_newest", key='"org_id", "timestamp" DESC')


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY runs outside a transaction

    dependencies = [
        ("audit", "0006_c2pa_certificate_event_types"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(index_swap(**INDEX, include=("type",)),
                                                      index_swap(**INDEX, include=()))],
            state_operations=[
                migrations.RemoveIndex(model_name="auditevent", name="audit_org_newest"),
                migrations.AddIndex(
                    model_name="auditevent",
                    index=models.Index(fields=["org", "-timestamp"], include=("type",), name="audit_org_newest"),
                ),
            ],
        ),
    ]
