from django.apps import AppConfig


class SignerConfig(AppConfig):
    name = "signer"
    verbose_name = "Signer service"

    def ready(self) -> None:
        from signer import authority
        from signer.service import register_operation

        # The CA keys and every sealed C2PA key are used here only: with a signer service, web workers ask.
        register_operation("issue-certificates", authority.certificates_issue)
        register_operation("ensure-authorities", authority.authorities_ensure)
        register_operation("seal-secret", authority.secret_seal)
