from django.apps import AppConfig


class TransparencyConfig(AppConfig):
    name = "transparency"
    verbose_name = "Transparency log"

    def ready(self) -> None:
        from provenance.selectors import record_log_reader_register
        from signer.service import PurposePolicy, register_purpose
        from transparency.checkpoint_policy import checkpoint_refusal, checkpoint_signature
        from transparency.keys import log_keys_publish
        from transparency.selectors import record_logs

        # Records show their `log` object; provenance, below the log, reads it through this hook.
        record_log_reader_register(record_logs)
        # In the signer service: checkpoints are signed there, only for the log's own tree, and the signer
        # publishes the log's public keys when it starts.
        register_purpose("checkpoint", PurposePolicy(check=checkpoint_refusal, sign=checkpoint_signature,
                                                     start=log_keys_publish))
