"""python manage.py reseal_secrets [--dry-run] [--batch-size N]

Seals every generator private key (the ML-DSA seeds and the C2PA keys: the CA's, the ES256 ones, the
uploaded ones) again under the newest KEY_ENCRYPTION_KEY id, and every webhook signing secret under the
newest SECRET_ENCRYPTION_KEY id (KEY_ENCRYPTION_KEY's when it is unset), then counts what is still sealed
under other ids: when that count is zero, the other ids can be removed from the ring
(docs/reliability.md, "Rotating the service's keys"). A process that holds no KEY_ENCRYPTION_KEY (the web
process beside a signer service) reseals the webhook secrets only; run it in the signer's environment for
the private keys.

Rows are read in batches (keyset order by primary key) and each one that needs it is resealed in its own
short transaction with its row locked, so signing and deliveries carry on. Idempotent and resumable: a
row already under the newest id is left alone, so a second run, or a run after an interruption, only
does what is left. `--dry-run` reads and counts, and writes nothing.
"""

import logging
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from django.core.management.base import BaseCommand, CommandError
from django.db.models import QuerySet

from core.keyring import holds_private_keys, key_encryption_ring, secret_encryption_ring
from core.sealing import SealedBlobError, sealed_key_id
from core.secret_ring import RingEntry
from generators.certificates import c2pa_secret_reseal
from generators.models import CertificateAuthority, GeneratorCertificate, GeneratorKey, GeneratorUploadedCertificate
from generators.services import generator_key_reseal
from webhooks.models import WebhookEndpoint
from webhooks.services import webhook_secret_reseal

logger = logging.getLogger(__name__)

MALFORMED = "(malformed)"


@dataclass(frozen=True)
class SealedColumn:
    label: str
    rows: Callable[[], QuerySet]
    column: str
    reseal: Callable[[object], bool]
    ring_name: str = "KEY_ENCRYPTION_KEY"
    ring: Callable[[], tuple[RingEntry, ...]] = key_encryption_ring
    held: Callable[[], bool] = holds_private_keys


SEALED_COLUMNS = (
    SealedColumn("generator private keys", lambda: GeneratorKey.objects.filter(encrypted_private_key__isnull=False),
                 "encrypted_private_key", lambda pk: generator_key_reseal(key_pk=pk)),
    SealedColumn("webhook secrets", lambda: WebhookEndpoint.objects.all(),
                 "encrypted_secret", lambda pk: webhook_secret_reseal(endpoint_id=pk),
                 ring_name="SECRET_ENCRYPTION_KEY", ring=secret_encryption_ring, held=lambda: True),
    SealedColumn("C2PA CA keys", lambda: CertificateAuthority.objects.filter(encrypted_private_key__isnull=False),
                 "encrypted_private_key", lambda pk: c2pa_secret_reseal(model=CertificateAuthority, pk=pk)),
    SealedColumn("C2PA ES256 keys", lambda: GeneratorCertificate.objects.filter(
        encrypted_es256_private_key__isnull=False), "encrypted_es256_private_key",
                 lambda pk: c2pa_secret_reseal(model=GeneratorCertificate, pk=pk)),
    SealedColumn("uploaded C2PA keys", lambda: GeneratorUploadedCertificate.objects.all(),
                 "encrypted_private_key", lambda pk: c2pa_secret_reseal(model=GeneratorUploadedCertificate, pk=pk)),
)


@dataclass
class Tally:
    resealed: int = 0
    current: int = 0
    unreadable: Counter = field(default_factory=Counter)  # key id -> rows that do not unseal


class Command(BaseCommand):
    help = ("Seal every generator private key again under the newest KEY_ENCRYPTION_KEY id, and every webhook "
            "secret under the newest SECRET_ENCRYPTION_KEY id.")

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would be resealed; write nothing")
        parser.add_argument("--batch-size", type=int, default=200, help="rows read per query (default 200)")

    def handle(self, *args, dry_run: bool, batch_size: int, **options):
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1")
        verb = "would reseal" if dry_run else "resealed"
        failures, rings_shown = 0, set()
        for sealed in SEALED_COLUMNS:
            if not sealed.held():
                self.stdout.write(f"{sealed.label}: skipped (this process holds no {sealed.ring_name}: run this "
                                  "command in the signer service's environment for them)")
                continue
            ring = sealed.ring()
            newest, configured = ring[0].key_id, {entry.key_id for entry in ring}
            if sealed.ring_name not in rings_shown:
                rings_shown.add(sealed.ring_name)
                self.stdout.write(f"{sealed.ring_name}: newest id {newest}; configured "
                                  f"{', '.join(e.key_id for e in ring)}")
            tally = _reseal_column(sealed, newest, configured, batch_size, dry_run)
            unreadable = sum(tally.unreadable.values())
            failures += unreadable
            self.stdout.write(f"{sealed.label}: {tally.resealed} {verb}, {tally.current} already under {newest}, "
                              f"{unreadable} unreadable{_by_id(tally.unreadable)}")
            logger.info("reseal_secrets %s: %s %s, %s already under %s, %s unreadable", sealed.label, tally.resealed,
                        verb, tally.current, newest, unreadable)
        self._report_remaining()
        if failures and not dry_run:
            raise CommandError(f"{failures} sealed secrets do not unseal with the configured keys and were left as "
                               "they are: keep every id they name in their ring (see the errors logged)")

    def _report_remaining(self) -> None:
        remaining, newest_ids = {}, {}
        for sealed in SEALED_COLUMNS:
            if not sealed.held():
                continue
            newest = sealed.ring()[0].key_id
            newest_ids[sealed.ring_name] = newest
            remaining[sealed.label] = _count_by_id(sealed, newest)
        total = sum(sum(counts.values()) for counts in remaining.values())
        if not total:
            removable = "; ".join(f"every id but {newest} can be removed from {name}" for name, newest in
                                  newest_ids.items())
            self.stdout.write(f"still under other ids: 0; {removable}")
            return
        parts = [f"{label}{_by_id(counts)}" for label, counts in remaining.items() if counts]
        self.stdout.write(f"still under other ids: {total} ({'; '.join(parts)})")


def _reseal_column(sealed: SealedColumn, newest: str, configured: set[str], batch_size: int,
                   dry_run: bool) -> Tally:
    tally = Tally()
    for pk, blob in _rows(sealed, batch_size):
        key_id = _key_id(blob)
        if key_id == newest:
            tally.current += 1
        elif dry_run:
            if key_id in configured:
                tally.resealed += 1
            else:
                tally.unreadable[key_id] += 1
        else:
            _reseal_row(sealed, pk, key_id, tally)
    return tally


def _reseal_row(sealed: SealedColumn, pk: object, key_id: str, tally: Tally) -> None:
    try:
        if sealed.reseal(pk):
            tally.resealed += 1
        else:  # resealed or deleted since it was read
            tally.current += 1
    except SealedBlobError as error:
        logger.error("reseal_secrets: %s row %s (key id %s) does not unseal: %s", sealed.label, pk, key_id, error)
        tally.unreadable[key_id] += 1


def _rows(sealed: SealedColumn, batch_size: int) -> Iterator[tuple[object, bytes]]:
    """(primary key, sealed blob) of every row, one query per batch, in primary-key order."""
    rows = sealed.rows().order_by("pk")
    after = None
    while True:
        batch = list((rows if after is None else rows.filter(pk__gt=after)).values_list("pk", sealed.column)[
            :batch_size])
        yield from ((pk, bytes(blob)) for pk, blob in batch)
        if len(batch) < batch_size:
            return
        after = batch[-1][0]


def _key_id(blob: bytes) -> str:
    try:
        return sealed_key_id(blob)
    except SealedBlobError:
        return MALFORMED


def _count_by_id(sealed: SealedColumn, newest: str) -> Counter:
    counts: Counter = Counter()
    for _, blob in _rows(sealed, 1000):
        key_id = _key_id(blob)
        if key_id != newest:
            counts[key_id] += 1
    return counts


def _by_id(counts: Counter) -> str:
    return f" ({', '.join(f'{key_id}: {n}' for key_id, n in sorted(counts.items()))})" if counts else ""
