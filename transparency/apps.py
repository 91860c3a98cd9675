from django.apps import AppConfig


class TransparencyConfig(AppConfig):
    name = "transparency"
    verbose_name = "Transparency log"

    def ready(self) -> None:
        from provenance.selectors import record_log_reader_register
        from transparency.selectors import record_logs

        # Records show their `log` object; provenance, below the log, reads it through this hook.
        record_log_reader_register(record_logs)
