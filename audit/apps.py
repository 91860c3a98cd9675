from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "audit"
    verbose_name = "Audit log"

    def ready(self) -> None:
        from accounts.security_events import security_event_writer_register
        from audit.services import audit_write

        # accounts, below audit, audits a member's password and second-factor changes through this hook.
        security_event_writer_register(audit_write)
