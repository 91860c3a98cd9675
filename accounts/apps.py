from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from accounts import blocklist, schema  # noqa: F401 - schema registers the OpenAPI authentication extension
        from accounts.services.auth import email_tokens_purge, two_factor_challenges_purge
        from core import housekeeping

        housekeeping.register("email tokens", email_tokens_purge)
        housekeeping.register("2FA challenges", two_factor_challenges_purge)
        housekeeping.register("blocklisted JWTs", blocklist.purge_expired)
