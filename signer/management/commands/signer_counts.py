"""`manage.py signer_counts [--days N]`: the signatures the signer made per UTC day, organization, generator,
purpose and algorithm, as a table (newest day first). With Redis, what the signers counted and did not fold
yet is folded first, so the table is exact up to now; without Redis a running signer stores its counts every
second."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.db.models import F
from django.utils import timezone

from accounts.models import Organization
from signer.counting import counts_flush
from signer.models import SignatureCount

COLUMNS = ("day", "organization", "generator", "purpose", "algorithm", "signatures")


class Command(BaseCommand):
    help = "Print the signer's signature counts per day, organization, generator, purpose and algorithm."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, default=7, help="UTC days to show, today included (default 7)")

    def handle(self, *args, days: int, **options):
        if not 1 <= days <= 36_600:
            raise CommandError("--days must be 1 to 36600")
        counts_flush()
        since = timezone.now().date() - timedelta(days=days - 1)
        # The deployment's own rows (no organization) first, on SQLite and PostgreSQL alike.
        rows = list(SignatureCount.objects.filter(day__gte=since).order_by(
            "-day", F("org_id").asc(nulls_first=True), F("generator_id").asc(nulls_first=True), "purpose",
            "algorithm"))
        names = dict(Organization.objects.filter(pk__in={r.org_id for r in rows}).values_list("pk", "name"))
        table = [COLUMNS, *(_row(count, names) for count in rows)]
        widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
        for line in table:
            self.stdout.write("  ".join(cell.rjust(w) if i == len(COLUMNS) - 1 else cell.ljust(w)
                                        for i, (cell, w) in enumerate(zip(line, widths, strict=True))).rstrip())
        total = sum(count.count for count in rows)
        self.stdout.write(f"{total} signatures in {len(rows)} rows since {since.isoformat()} (UTC)")


def _row(count: SignatureCount, names: dict) -> tuple[str, ...]:
    organization = f"{names.get(count.org_id, '?')} ({count.org_id})" if count.org_id else "(deployment)"
    generator = str(count.generator_id) if count.generator_id else "-"
    return (count.day.isoformat(), organization, generator, count.purpose, count.algorithm, str(count.count))
