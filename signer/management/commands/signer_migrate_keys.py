"""python manage.py signer_migrate_keys --to BACKEND [--dry-run] [--batch-size N] [--generator UUID]

Moves the server-managed keys still sealed in the database into BACKEND; run where the signer runs (it has the
key-encryption key and the backend's configuration). docs/signer-migration.md says when and how.

- `--to sealed`: seals them again under the newest KEY_ENCRYPTION_KEY id (the signer's own), as
  reseal_secrets does for the private keys: the generators' ML-DSA-65 seeds, the ES256 keys of hybrid
  generators' certificates, the organizations' uploaded ES256 keys and the C2PA CAs' keys (all held by the
  signer; webhook secrets are the web process's, under SECRET_ENCRYPTION_KEY).
- `--to pkcs11` (any backend that takes keys in, KeyBackend.import_key): the ML-DSA-65 seeds and the
  certificates' ES256 keys are imported into the backend, labelled with their row's id; a key whose algorithm
  the backend cannot hold is left sealed and reported, not failed.

Each key moves in its own short transaction with its row locked, so signing carries on: until the commit the
sealed key signs, after it the backend's; the UPDATE that records the backend's reference clears the sealed
blob. Idempotent and resumable: a key already moved is counted as there; a run that died between an import
and its commit finds its imported key again by label (import_key reuses it). `--dry-run` writes nothing.
"""

import argparse
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Q, QuerySet

from core.errors import KeyUnavailable
from core.keyring import private_key_sealing_ring
from core.sealing import SealedBlobError, sealed_key_id
from generators.certificates import c2pa_secret_reseal, certificate_es256_private_key
from generators.models import CertificateAuthority, GeneratorCertificate, GeneratorKey, GeneratorUploadedCertificate
from generators.services import generator_key_reseal, generator_signing_seed
from signer.backends.base import BackendError, KeyBackend, UnsupportedAlgorithm
from signer.backends.registry import SEALED, backend_named

logger = logging.getLogger("signer")

MOVED, THERE, LEFT, FAILED = "moved", "already there", "left sealed", "failed"


class MoveFailed(Exception):
    """One key could not be moved (the message says why, never with key material); nothing of it changed."""


@dataclass(frozen=True)
class SealedKind:
    """One kind of server-managed private key: its rows, and how one row moves."""

    label: str
    algorithm: str
    model: type
    blob_column: str
    backend_column: str | None  # None: no backend can hold it (uploaded and CA keys), only resealing applies
    generator_path: str | None  # the lookup from the row to its generator's id; None: no generator's (a CA)
    reseal: Callable[[object], bool]
    move: Callable[[object, KeyBackend, Callable[[str], None]], str] | None

    def sealed_rows(self, generator: uuid.UUID | None) -> QuerySet:
        """Rows whose key is sealed in the database: the blob is there (whatever the backend column says: a
        certificate issued again after its key moved has a new sealed key)."""
        rows = self.model.objects.filter(**{f"{self.blob_column}__isnull": False})
        if generator is None:
            return rows
        return rows.filter(**{self.generator_path: generator}) if self.generator_path else rows.none()

    def rows_in(self, backend: str, generator: uuid.UUID | None) -> int:
        rows = self.model.objects.filter(**{self.backend_column: backend, f"{self.blob_column}__isnull": True})
        return (rows.filter(**{self.generator_path: generator}) if generator else rows).count()


def _move_generator_key(pk: uuid.UUID, backend: KeyBackend, imported: Callable[[str], None]) -> str:
    with transaction.atomic():
        key = GeneratorKey.objects.select_for_update().select_related("generator").filter(pk=pk).first()
        if key is None or key.encrypted_private_key is None:
            return THERE  # moved (or deleted) since it was read
        try:
            seed = generator_signing_seed(key)
        except KeyUnavailable:
            raise MoveFailed("its sealed seed does not unseal with the configured KEY_ENCRYPTION_KEY") from None
        label = f"generator-key {key.pk}"
        reference = _imported(backend, "ml-dsa-65", seed, label, bytes(key.public_key))
        imported(label)
        GeneratorKey.objects.filter(pk=pk).update(key_backend=backend.name, key_reference=reference,
                                                  encrypted_private_key=None)
    return MOVED


def _move_es256_key(pk: uuid.UUID, backend: KeyBackend, imported: Callable[[str], None]) -> str:
    with transaction.atomic():
        # The generator key's row first: issuing certificates locks it before it replaces an ES256 key, so the
        # key read here is the one the certificate stays with until the commit.
        GeneratorKey.objects.select_for_update().filter(pk=pk).first()
        row = GeneratorCertificate.objects.select_for_update().filter(pk=pk).first()
        if row is None or row.encrypted_es256_private_key is None:
            return THERE
        try:
            private_key = certificate_es256_private_key(row)
        except SealedBlobError:
            raise MoveFailed("its sealed ES256 key does not unseal with the configured KEY_ENCRYPTION_KEY") from None
        certified = x509.load_der_x509_certificate(bytes(row.es256_certificate)).public_key().public_bytes(
            Encoding.X962, PublicFormat.UncompressedPoint)
        label = f"generator-certificate {row.pk}"
        scalar = private_key.private_numbers().private_value.to_bytes(32, "big")
        reference = _imported(backend, "es256", scalar, label, certified)
        imported(label)
        GeneratorCertificate.objects.filter(pk=pk).update(es256_key_backend=backend.name,
                                                          es256_key_reference=reference,
                                                          encrypted_es256_private_key=None)
    return MOVED


def _imported(backend: KeyBackend, algorithm: str, private_key: bytes, label: str, public_key: bytes) -> str:
    try:
        new = backend.import_key(algorithm, private_key, label)
    except UnsupportedAlgorithm:
        raise
    except BackendError as error:
        raise MoveFailed(f"the {backend.name} backend refused it: {error}") from None
    if new.public_key != public_key:  # never record a key that would not verify what it signs
        raise MoveFailed(f"the {backend.name} backend holds a different public key under {label!r}")
    return new.reference


KINDS = (
    SealedKind("generator keys", "ml-dsa-65", GeneratorKey, "encrypted_private_key", "key_backend",
               "generator_id", lambda pk: generator_key_reseal(key_pk=pk), _move_generator_key),
    SealedKind("C2PA ES256 keys", "es256", GeneratorCertificate, "encrypted_es256_private_key", "es256_key_backend",
               "key__generator_id", lambda pk: c2pa_secret_reseal(model=GeneratorCertificate, pk=pk),
               _move_es256_key),
    SealedKind("uploaded C2PA keys", "es256", GeneratorUploadedCertificate, "encrypted_private_key", None,
               "generator_id", lambda pk: c2pa_secret_reseal(model=GeneratorUploadedCertificate, pk=pk), None),
    SealedKind("C2PA CA keys", "es256 and ml-dsa-65", CertificateAuthority, "encrypted_private_key", None, None,
               lambda pk: c2pa_secret_reseal(model=CertificateAuthority, pk=pk), None),
)


@dataclass
class Tally:
    moved: int = 0
    there: int = 0
    left: int = 0
    failed: int = 0
    why_left: str = ""

    def add(self, outcome: str) -> None:
        field = {MOVED: "moved", THERE: "there", LEFT: "left", FAILED: "failed"}[outcome]
        setattr(self, field, getattr(self, field) + 1)


class Command(BaseCommand):
    help = "Move the server-managed keys still sealed in the database into a signer backend (or reseal them)."

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, dest="target", help="`sealed`, or a configured backend: pkcs11")
        parser.add_argument("--dry-run", action="store_true", help="say what would move; change nothing")
        parser.add_argument("--batch-size", type=int, default=200, help="rows read per query (default 200)")
        parser.add_argument("--generator", type=uuid.UUID, default=None, help="only this generator's keys")
        # Tests only (tests/signer/test_migrate_keys.py): after the first import, say so and wait to be killed,
        # the transaction open, to check that a run that dies between an import and its commit resumes.
        parser.add_argument("--pause-after-import", action="store_true", help=argparse.SUPPRESS)

    def handle(self, *args, target: str, dry_run: bool, batch_size: int, generator: uuid.UUID | None,
               pause_after_import: bool, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        backend = None if target == SEALED else self._backend(target)
        if backend is None:
            self.stdout.write(f"target: sealed under KEY_ENCRYPTION_KEY id {private_key_sealing_ring().newest_id}")
        imported = self._pause if pause_after_import else (lambda label: None)
        total = Tally()
        for kind in KINDS:
            if backend is not None and kind.move is None:
                continue
            tally = (_reseal_kind(kind, generator, batch_size, dry_run) if backend is None
                     else _move_kind(kind, backend, generator, batch_size, dry_run, imported))
            self.stdout.write(f"{kind.label} ({kind.algorithm}): {_describe(tally, dry_run, target)}")
            for field in ("moved", "there", "left", "failed"):
                setattr(total, field, getattr(total, field) + getattr(tally, field))
        prefix = "dry run, nothing changed: " if dry_run else ("nothing moved: " if not total.moved else "")
        self.stdout.write(f"summary: {prefix}{_describe(total, dry_run, target)}")
        if total.failed and not dry_run:
            raise CommandError(f"{total.failed} keys could not be moved and stay sealed (see the errors logged)")

    def _backend(self, name: str) -> KeyBackend:
        try:
            return backend_named(name)
        except KeyError:
            raise CommandError(f"no key backend {name!r} is configured here (docs/key-backends.md)") from None
        except BackendError as error:
            raise CommandError(f"the {name} backend does not start: {error}") from None

    def _pause(self, label: str) -> None:
        self.stdout.write(f"imported {label}; pausing before the commit")
        self.stdout.flush()
        while True:
            time.sleep(3600)


def _describe(tally: Tally, dry_run: bool, target: str) -> str:
    moved = "would move" if dry_run else "moved"
    left = f", {tally.left} left sealed" + (f" ({tally.why_left})" if tally.why_left else "")
    return f"{tally.moved} {moved}, {tally.there} already there ({target}){left}, {tally.failed} failed"


def _move_kind(kind: SealedKind, backend: KeyBackend, generator: uuid.UUID | None, batch_size: int,
               dry_run: bool, imported: Callable[[str], None]) -> Tally:
    tally = Tally(there=kind.rows_in(backend.name, generator))
    holds = kind.algorithm in backend.algorithms()
    for pk in _keys(kind.sealed_rows(generator), batch_size):
        if not holds:
            tally.add(LEFT)
            tally.why_left = tally.why_left or f"the backend cannot hold {kind.algorithm}"
        elif dry_run:
            tally.add(MOVED)
        else:
            holds = _move_one(kind, pk, backend, imported, tally)
    return tally


def _move_one(kind: SealedKind, pk: object, backend: KeyBackend, imported: Callable[[str], None],
              tally: Tally) -> bool:
    """Moves one key, counting the outcome; False when the backend turns out not to take this algorithm in."""
    try:
        tally.add(kind.move(pk, backend, imported))
    except UnsupportedAlgorithm as error:
        logger.info("signer_migrate_keys: %s left sealed: %s", kind.label, error)
        tally.add(LEFT)
        tally.why_left = f"the backend does not take {kind.algorithm} keys in"
        return False
    except MoveFailed as error:
        logger.error("signer_migrate_keys: %s row %s stays sealed: %s", kind.label, pk, error)
        tally.add(FAILED)
    return True


def _reseal_kind(kind: SealedKind, generator: uuid.UUID | None, batch_size: int, dry_run: bool) -> Tally:
    ring = private_key_sealing_ring()
    tally = Tally()
    for pk, blob in _keys(kind.sealed_rows(generator), batch_size, kind.blob_column):
        key_id = _key_id(bytes(blob))
        if key_id == ring.newest_id:
            tally.add(THERE)
        elif key_id not in ring.keys:
            logger.error("signer_migrate_keys: %s row %s is sealed under %s, not configured here", kind.label, pk,
                         key_id)
            tally.add(FAILED)
        elif dry_run:
            tally.add(MOVED)
        else:
            tally.add(_reseal_one(kind, pk))
    return tally


def _reseal_one(kind: SealedKind, pk: object) -> str:
    try:
        return MOVED if kind.reseal(pk) else THERE
    except SealedBlobError as error:
        logger.error("signer_migrate_keys: %s row %s does not unseal: %s", kind.label, pk, error)
        return FAILED


def _keys(rows: QuerySet, batch_size: int, column: str | None = None) -> Iterator:
    """Primary keys of `rows` (with `column`: (primary key, column) pairs), one query per batch, in primary-key
    order (keyset: rows that move drop out of `rows` without shifting the next batch)."""
    after = None
    while True:
        page = (rows if after is None else rows.filter(Q(pk__gt=after))).order_by("pk")
        batch = list((page.values_list("pk", column) if column else page.values_list("pk", flat=True))[:batch_size])
        yield from batch
        if len(batch) < batch_size:
            return
        after = batch[-1][0] if column else batch[-1]


def _key_id(blob: bytes) -> str:
    try:
        return sealed_key_id(blob)
    except SealedBlobError:
        return "(malformed)"
