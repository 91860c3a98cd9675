from django.apps import AppConfig


class GeneratorsConfig(AppConfig):
    name = "generators"
    verbose_name = "Generators"

    def ready(self) -> None:
        from audit.selectors import audit_names_register
        from generators.models import Generator

        # The audit log shows a generator's name for the `generator_id` in an event (audit sits below generators).
        audit_names_register(key="generator_id", names="generators", rows=Generator.objects.for_org, column="name")
