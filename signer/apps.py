from django.apps import AppConfig


class SignerConfig(AppConfig):
    name = "signer"
    verbose_name = "Signer service"
