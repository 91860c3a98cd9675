from django.apps import AppConfig


class GeneratorsConfig(AppConfig):
    name = "generators"
    verbose_name = "Generators"
