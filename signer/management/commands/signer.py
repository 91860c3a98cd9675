"""`manage.py signer [--socket PATH]`: run the signer service, the process that holds the keys."""

import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.keyring import signer_secret
from signer.backends.base import BackendError
from signer.backends.registry import (
    SEALED,
    backend_named,
    close_backends,
    configured_backend_names,
    default_backend_name,
)
from signer.server import SignerServer
from signer.service import purposes_start


def _check_key_backend() -> None:
    """Refuse to start when new generator keys could not be made: SIGNER_KEY_BACKEND names a backend that is
    not configured, or one whose store offers no ML-DSA-65 (SoftHSMv2, for one): registrations would fail."""
    name = default_backend_name()
    if name == SEALED:
        return
    try:
        offered = backend_named(name).algorithms()
    except KeyError:
        raise CommandError(f"SIGNER_KEY_BACKEND is {name!r}, which is not configured here "
                           f"(configured: {', '.join(configured_backend_names())})") from None
    except BackendError as error:
        raise CommandError(f"the {name} backend does not answer: {error}") from None
    if "ml-dsa-65" not in offered:
        offers = ", ".join(sorted(offered)) or "nothing"
        raise CommandError(f"SIGNER_KEY_BACKEND is {name!r}, whose store offers {offers} but not ml-dsa-65, the "
                           "algorithm of generator keys: choose another, or keep `sealed`")


class Command(BaseCommand):
    help = "Run the signer service on a Unix socket (settings.SIGNER_SOCKET unless --socket is given)."

    def add_arguments(self, parser):
        parser.add_argument("--socket", default=None, help="the Unix socket to listen on")

    def handle(self, *args, **options):
        path = options["socket"] or settings.SIGNER_SOCKET
        if not path:
            raise CommandError("give --socket PATH or set SIGNER_SOCKET")
        if not settings.DEVELOPMENT_KEY_FALLBACK and not settings.SIGNER_SERVICE:
            # Without it, settings let this environment go without KEY_ENCRYPTION_KEY: it would unseal nothing.
            raise CommandError("set SIGNER_SERVICE=true (with KEY_ENCRYPTION_KEY, LOG_SIGNING_KEY and SIGNER_SECRET) "
                               "in the signer's environment: DEBUG is off")
        _check_key_backend()
        server = SignerServer(path, signer_secret())
        purposes_start()  # before listening: the log's public keys are published before anything is signed
        signal.signal(signal.SIGTERM, lambda *_: server.stop())
        self.stdout.write(f"signer listening on {path}")
        self.stdout.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            server.stop()
        finally:
            close_backends()
