"""`manage.py signer [--socket PATH]`: run the signer service, the process that holds the keys."""

import signal

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.keyring import signer_secret
from signer.backends.registry import close_backends
from signer.server import SignerServer
from signer.service import purposes_start


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
