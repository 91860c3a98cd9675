"""The shared platform's tables, which lived in the `config` app until the platform moved to `core`.

A database migrated before the move has `config_ratecounter` and `config_idempotentrequest` (and the
`config` app's rows in django_migrations, left as they are): they are renamed and kept, counters and
stored responses included. A new database gets the tables created.
"""

from django.db import migrations, models

FORMER_TABLES = {"RateCounter": "config_ratecounter", "IdempotentRequest": "config_idempotentrequest"}


def adopt_or_create(apps, schema_editor):
    existing = set(schema_editor.connection.introspection.table_names())
    for name, former in FORMER_TABLES.items():
        model = apps.get_model("core", name)
        if former in existing:
            schema_editor.alter_db_table(model, former, model._meta.db_table)
        else:
            schema_editor.create_model(model)


def drop(apps, schema_editor):
    for name in FORMER_TABLES:
        schema_editor.delete_model(apps.get_model("core", name))


class Migration(migrations.Migration):

    initial = True

    dependencies = []

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="RateCounter",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("subject", models.CharField(max_length=200, unique=True)),
                        ("window_end", models.BigIntegerField(db_index=True)),
                        ("hits", models.BigIntegerField()),
                    ],
                    options={"db_table": "core_ratecounter"},
                ),
                migrations.CreateModel(
                    name="IdempotentRequest",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("org_id", models.UUIDField()),
                        ("key", models.CharField(max_length=255)),
                        ("fingerprint", models.CharField(max_length=64)),
                        ("created_at", models.DateTimeField(db_index=True)),
                        ("status", models.PositiveSmallIntegerField(default=0)),
                        ("headers", models.JSONField(default=list)),
                        ("body", models.BinaryField(default=b"")),
                    ],
                    options={"constraints": [models.UniqueConstraint(fields=("org_id", "key"),
                                                                     name="idempotency_org_key")]},
                ),
            ],
        ),
        # After the state: RunPython's `apps` then has both models.
        migrations.RunPython(adopt_or_create, drop),
    ]
