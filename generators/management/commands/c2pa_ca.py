"""python manage.py c2pa_ca show | rotate [--root] | install --chain chain.pem --key key.pem

The deployment's C2PA certificate authorities (generators/certificate_authority.py). `show` lists them,
making them on first use. `rotate` makes a new intermediate in each family (ES256 and ML-DSA-65), with
`--root` under a new root too; new end-entity certificates come from the new ones, and the old ones stay,
so what they issued keeps verifying until it expires. `install` hands ES256 issuing to an intermediate
from another CA (one on the C2PA trust list): the PEM chain, intermediate first, with or without its root,
and the intermediate's unencrypted PEM private key, which is sealed in the database.
"""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import IntegrityError

from generators import certificate_authority as authority
from generators.models import CertificateAuthority
from record_format import certificates as certs

# Generous for a PEM chain of a few certificates and one key; a bigger file is not what was meant.
MAX_FILE_BYTES = 200_000


class Command(BaseCommand):
    help = "Show, rotate or install the deployment's C2PA certificate authorities."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="command", required=True)
        commands.add_parser("show", help="list the CAs (made on first use)")
        rotate = commands.add_parser("rotate", help="a new intermediate in each family")
        rotate.add_argument("--root", action="store_true", help="under a new root too")
        install = commands.add_parser("install", help="issue ES256 certificates under another CA's intermediate")
        install.add_argument("--chain", required=True, help="PEM: the intermediate first, then its issuers")
        install.add_argument("--key", required=True, help="PEM: the intermediate's unencrypted private key")

    def handle(self, *args, command: str, **options):
        if command == "rotate":
            self._rotate(new_root=options["root"])
        elif command == "install":
            self._install(options["chain"], options["key"])
        else:
            authority.trust_anchors()  # makes the CA on first use
        self._show()

    def _rotate(self, *, new_root: bool) -> None:
        try:
            made = authority.ca_rotate(new_root=new_root)
        except IntegrityError:
            raise CommandError("another rotation ran at the same time; run this again") from None
        self.stdout.write("rotated: " + ", ".join(str(ca) for ca in made))

    def _install(self, chain_path: str, key_path: str) -> None:
        try:
            installed = authority.ca_install(chain_pem=_read(chain_path), key_pem=_read(key_path))
        except authority.CaInstallError as error:
            raise CommandError(f"not installed: {error}") from None
        self.stdout.write(f"installed: {installed}; new ES256 certificates are issued under it")

    def _show(self) -> None:
        for ca in CertificateAuthority.objects.order_by("family", "kind", "generation"):
            subject = certs.load_der(ca.certificate).subject.rfc4514_string()
            self.stdout.write(f"{ca}  {subject}  until {ca.not_after:%Y-%m-%d}")


def _read(path: str) -> str:
    file = Path(path)
    try:
        if file.stat().st_size > MAX_FILE_BYTES:
            raise CommandError(f"{path} is over {MAX_FILE_BYTES} bytes")
        return file.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise CommandError(f"cannot read {path}: {error}") from None
