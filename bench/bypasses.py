"""Each place the code steps around Django, against the plain Django version, on its routes, in one run.

In process, on PostgreSQL, with the Django test client (its handler split by path as config/wsgi.py
splits, tests/api_chain.py). For each bypass and each route it touches, the bypass and its plain Django
version alternate request by request, `--rounds` x `--requests` of each (the order flips every round);
the table gives the medians: CPU time of this process (the database server's work is not in it; the
wall time is) and wall time. Gain: (plain - bypass) / plain. Rows not on a request route (the
sequencer, the fingerprint search) time the function itself the same way. Bypasses since removed were
measured by this file as it was then (docs/architecture.md, "Where we step around Django").

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/h_bypass .venv/bin/python bench/bypasses.py [--rounds 6]

Routes: read = GET /v1/generators with an API key; sign = POST /v1/sign of a 256 x 256 PNG; insert =
POST /v1/records (client-managed, with a pHash); verify = POST /v1/verify of the signed PNG (its record
integrated in the log); record = GET /v1/records/<id> of that record (with its inclusion proof).
"""

import argparse
import contextlib
import io
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

PROJECT_MODULES = ("accounts", "audit", "billing", "core", "generators", "provenance", "transparency",
                   "verification", "webhooks", "teams", "dashboard")


def replace_everywhere(old, new) -> list[tuple]:
    """Rebind every project-module name bound to `old` to `new`; returns what to restore."""
    replaced = []
    for name, module in list(sys.modules.items()):
        if module is None or not name.startswith(PROJECT_MODULES):
            continue
        for attribute, value in list(vars(module).items()):
            if value is old:
                setattr(module, attribute, new)
                replaced.append((module, attribute, old))
    return replaced


@contextlib.contextmanager
def rebound(*pairs):
    restore = []
    try:
        for old, new in pairs:
            restore += replace_everywhere(old, new)
        yield
    finally:
        for module, attribute, value in restore:
            setattr(module, attribute, value)


class OrmLookup:
    """The plain Django version of a hot_sql.ChildWithParents: a select_related queryset, first row."""

    def __init__(self, queryset_for):
        self.queryset_for = queryset_for

    def get(self, value):
        rows = list(self.queryset_for(value)[:1])
        return rows[0] if rows else None


# --- the plain versions ------------------------------------------------------------------------------

def plain_lookups():
    import accounts.selectors
    import generators.selectors
    import verification.selectors
    from accounts.models import ApiKey, User
    from generators.models import Generator, GeneratorKey
    from provenance.models import Record

    records = lambda: Record.objects.select_related("org", "key", "generator")  # noqa: E731
    return rebound(
        (accounts.selectors._ACTIVE_KEY_BY_LOOKUP_ID, OrmLookup(
            lambda v: ApiKey.objects.select_related("org").filter(lookup_id=v, revoked_at__isnull=True))),
        (accounts.selectors._ACTIVE_USER_BY_ID, OrmLookup(
            lambda v: User.objects.select_related("org").filter(id=v, is_active=True))),
        (generators.selectors._CURRENT_KEY_WITH_GENERATOR, OrmLookup(
            lambda v: GeneratorKey.objects.select_related("generator").filter(generator=v, retired_at__isnull=True))),
        (verification.selectors._RECORD_WITH_RELATIONS, OrmLookup(lambda v: records().filter(id=v))),
        (verification.selectors._EARLIEST_WITH_HASH, OrmLookup(
            lambda v: records().filter(content_hash=v).order_by("signed_at", "id"))),
        (verification.selectors._NEWEST_SERVER_MARK, OrmLookup(
            lambda v: records().filter(watermark_id=v, generator__mode=Generator.Mode.SERVER).order_by("-signed_at"))),
    )


def plain_inserts():
    import audit.services
    import provenance.services
    from audit.models import AuditEvent
    from provenance.models import Record

    return rebound((provenance.services._insert_records, lambda rows: Record.objects.bulk_create(rows)),
                   (audit.services._insert_events, lambda rows: AuditEvent.objects.bulk_create(rows)))


def plain_usage_sql():
    from django.db.models import F
    from django.utils import timezone

    import billing.selectors
    import billing.services
    from billing.models import UsageCounter
    from billing.periods import period_start

    def used(org):
        rows = UsageCounter.objects.filter(org=org, period_start=period_start(timezone.now()))
        return next(iter(rows.values_list("signatures_used", flat=True)[:1]), 0)

    def increment(org, period, count, cap):
        rows = UsageCounter.objects.filter(org=org, period_start=period)
        capped = rows if cap is None else rows.filter(signatures_used__lte=cap - count)
        if not capped.update(signatures_used=F("signatures_used") + count):
            return None
        return rows.values_list("signatures_used", flat=True).get()  # the row stays locked until commit

    return rebound((billing.selectors.signatures_used_this_month, used), (billing.services._increment, increment))


def plain_webhook_list():
    import webhooks.events
    from webhooks.models import WebhookEndpoint

    original = webhooks.events.events_emit

    class _Org:
        """The organization with its endpoints read from their table, as plain Django would."""

        def __init__(self, org):
            self._org = org
            self.active_webhooks = [{"events": events} for events in WebhookEndpoint.objects.filter(
                org_id=org.pk, status=WebhookEndpoint.Status.ACTIVE).values_list("events", flat=True)]

        def __getattr__(self, name):
            return getattr(self._org, name)

    def events_emit(*, org, events):
        return original(org=_Org(org), events=events)

    return rebound((original, events_emit))


@contextlib.contextmanager
def plain_fingerprints():
    """The triggers off; the service inserts the Fingerprint rows after the records, as the ORM would."""
    from django.db import connection

    import provenance.services
    from provenance.models import Fingerprint, RecordFingerprint

    def fingerprints(pairs):
        Fingerprint.objects.bulk_create(
            [Fingerprint(kind=kind, value=value, band0=(value >> 48) & 65535, band1=(value >> 32) & 65535,
                         band2=(value >> 16) & 65535, band3=value & 65535) for kind, value in pairs],
            ignore_conflicts=True)

    insert_records = provenance.services._insert_records
    more_create = RecordFingerprint.objects.bulk_create

    def records_then_fingerprints(records):
        done = insert_records(records)
        fingerprints([(r.fingerprint_kind, r.phash_value) for r in records if r.phash_value is not None])
        return done

    def more_then_fingerprints(rows, *args, **kwargs):
        done = more_create(rows, *args, **kwargs)
        fingerprints([(row.kind, row.value) for row in rows])
        return done

    statements = ("ALTER TABLE provenance_record {} TRIGGER provenance_record_fingerprint",
                  "ALTER TABLE provenance_recordfingerprint {} TRIGGER provenance_recordfingerprint_add")
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement.format("DISABLE"))
    RecordFingerprint.objects.bulk_create = more_then_fingerprints
    try:
        with rebound((insert_records, records_then_fingerprints)):
            yield
    finally:
        del RecordFingerprint.objects.bulk_create
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement.format("ENABLE"))


def plain_log_snapshot():
    from django.db.models import Q

    import transparency.selectors as log
    from provenance.models import Record
    from transparency.models import LogState, LogTile

    def snapshot(wanted, record_at=None):
        which = Q(width__lt=log.TILE_WIDTH)
        for level, index in wanted:
            which |= Q(level=level, index=index)
        tiles = {(level, index): bytes(hashes) for level, index, hashes
                 in LogTile.objects.filter(which).values_list("level", "index", "hashes")}
        state = LogState.objects.filter(pk=LogState.SINGLETON).values_list("tree_size", "checkpoint").first()
        if state is None or not state[1]:
            return None
        record_id = (Record.objects.filter(log_index=record_at).values_list("pk", flat=True).first()
                     if record_at is not None else None)
        return log.LogSnapshot(tree_size=state[0], checkpoint=bytes(state[1]).decode(),
                               reader=log.TileReader(tiles, log._SUBTREES), record_id=record_id)

    return rebound((log._snapshot, snapshot))


def plain_log_indices(record_ids, *, first_index):
    """transparency.services._assign_indices in one ORM UPDATE (CASE over the ids)."""
    from django.db.models import Case, Value, When

    from provenance.models import Record

    indices = Case(*(When(pk=record_id, then=Value(first_index + offset))
                     for offset, record_id in enumerate(record_ids)))
    updated = Record.objects.filter(pk__in=record_ids, log_index__isnull=True).update(log_index=indices)
    if updated != len(record_ids):
        raise RuntimeError(f"{len(record_ids) - updated} records were integrated by someone else; batch rolled back")


@contextlib.contextmanager
def plain_middleware_chain():
    """Every request through settings.MIDDLEWARE, as Django's stock handler runs it."""
    from tests import api_chain

    split = api_chain.is_api_path
    api_chain.is_api_path = lambda path: False
    try:
        yield
    finally:
        api_chain.is_api_path = split


@contextlib.contextmanager
def plain_verification_body():
    """The verify routes' answer rendered by DRF's VerificationOutput serializer."""
    from verification import serializers

    with rebound((serializers.verification_body, lambda result: serializers.VerificationOutput(result).data)):
        yield


# name, module holding the bypass, routes, plain version
BYPASSES = [
    ("compiled lookups", "core/hot_sql.py ChildWithParents", ("read", "sign", "verify", "insert"), plain_lookups),
    ("compiled inserts", "core/hot_sql.py RowInserter", ("sign", "insert"), plain_inserts),
    ("usage counter SQL", "billing/services.py _increment, billing/selectors.py", ("sign", "insert"), plain_usage_sql),
    ("webhook list on Organization", "Organization.active_webhooks", ("sign", "verify", "insert"), plain_webhook_list),
    ("fingerprint triggers", "provenance migrations 0003/0004", ("sign", "insert"), plain_fingerprints),
    ("log snapshot in one statement", "transparency/selectors.py _snapshot", ("record", "verify"),
     plain_log_snapshot),
    ("API middleware chain", "core/api_chain.py", ("read", "record", "sign", "verify", "insert"),
     plain_middleware_chain),
    ("verify answer built without DRF", "verification/serializers.py verification_body", ("verify",),
     plain_verification_body),
]


# --- the routes ------------------------------------------------------------------------------------

def picture() -> bytes:
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(7)
    base = rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)
    image = Image.fromarray(base).resize((256, 256), Image.Resampling.BICUBIC)
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


def routes() -> dict:
    from rest_framework.test import APIClient

    from tests import factories

    org = factories.make_org(plan="enterprise", name="bench-bypasses")
    generator = factories.make_generator(org=org, formats=["image"])
    client_generator, seed = factories.make_client_generator(org=org)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {factories.make_api_key(org=org)}")
    content = picture()
    sign_body = {"model": "bench", "generator_id": str(generator.pk)}
    signed = client.post("/v1/sign", {**sign_body, "content": io.BytesIO(content)}, format="multipart")
    assert signed.status_code == 201, signed.content[:300]
    from transparency.services import log_integrate_batch

    while log_integrate_batch().integrated:  # the signed record gets its index and proof, as the sequencer gives it
        pass
    record_id = signed["X-Service-Record-Id"]
    counter = iter(range(10**9))

    def read():
        return client.get("/v1/generators")

    def record():
        return client.get(f"/v1/records/{record_id}")

    def sign():
        return client.post("/v1/sign", {**sign_body, "content": io.BytesIO(content)}, format="multipart")

    def insert():
        body = factories.record_body(generator=client_generator, seed=seed, content=b"c%d" % next(counter),
                                     phash=f"{next(counter) * 2654435761 % 2**64:016x}")
        return client.post("/v1/records", body, format="json")

    def verify():
        return client.post("/v1/verify", {"content": io.BytesIO(signed.content)}, format="multipart")

    assert record().json()["log"]["status"] == "integrated", record().json()["log"]
    expected = {"read": 200, "record": 200, "sign": 201, "insert": 201, "verify": 200}
    calls = {"read": read, "record": record, "sign": sign, "insert": insert, "verify": verify}
    return {name: (call, expected[name]) for name, call in calls.items()}


def timed(call, status: int, count: int) -> tuple[list[float], list[float]]:
    cpu, wall = [], []
    for _ in range(count):
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        response = call()
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
        assert response.status_code == status, (response.status_code, response.content[:300])
    return cpu, wall


def compare(route, plain, rounds: int, count: int) -> dict:
    """Medians of `rounds` x `count` requests of each version, alternating request by request (the
    order flips every round), so both see the same drift of a shared machine."""
    call, status = route
    samples = {"bypass": ([], []), "plain": ([], [])}
    timed(call, status, 3)  # warm both code paths' caches
    with plain():
        timed(call, status, 3)
    for round_number in range(rounds):
        order = ("bypass", "plain") if round_number % 2 == 0 else ("plain", "bypass")
        for _ in range(count):
            for variant in order:
                with plain() if variant == "plain" else contextlib.nullcontext():
                    cpu, wall = timed(call, status, 1)
                samples[variant][0].extend(cpu)
                samples[variant][1].extend(wall)
    return {variant: (statistics.median(cpu) * 1000, statistics.median(wall) * 1000)
            for variant, (cpu, wall) in samples.items()}


def sequencer_batch(rounds: int, size: int) -> dict:
    """transparency.services._assign_indices (UPDATE ... FROM unnest) against plain_log_indices, on
    `size` pending records inside a transaction that is rolled back."""
    from django.db import transaction

    from provenance.models import Record
    from transparency.services import _assign_indices

    ids = list(Record.objects.filter(log_index__isnull=True).values_list("pk", flat=True)[:size])
    first = Record.objects.exclude(log_index=None).count() + 10**6
    samples = {"bypass": ([], []), "plain": ([], [])}
    for round_number in range(rounds):
        order = ("bypass", "plain") if round_number % 2 == 0 else ("plain", "bypass")
        for variant in order:
            assign = _assign_indices if variant == "bypass" else plain_log_indices
            with transaction.atomic():
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                assign(ids, first_index=first)
                samples[variant][0].append(time.process_time() - cpu_start)
                samples[variant][1].append(time.perf_counter() - wall_start)
                transaction.set_rollback(True)
    return {variant: (statistics.median(cpu) * 1000, statistics.median(wall) * 1000)
            for variant, (cpu, wall) in samples.items()}


def fingerprint_search(rounds: int) -> dict:
    """verification.selectors' nearest-fingerprint search in one PostgreSQL statement against the same
    choice made by the ORM and Python (its SQLite path), over the fingerprints this database holds."""
    from provenance.phash_bands import band_neighbours, phash_bands
    from verification import selectors

    values = [f"{(n * 0x9E3779B97F4A7C15) % 2**64:016x}" for n in range(1, 11)]
    samples = {"bypass": ([], []), "plain": ([], [])}
    for round_number in range(rounds * 2):
        order = ("bypass", "plain") if round_number % 2 == 0 else ("plain", "bypass")
        for variant in order:
            nearest = selectors._nearest_in_sql if variant == "bypass" else selectors._nearest_in_python
            for value in values:
                neighbours = [band_neighbours(band, selectors._BAND_RADIUS) for band in phash_bands(value)]
                cpu_start, wall_start = time.process_time(), time.perf_counter()
                nearest("image-phash", value, neighbours)
                samples[variant][0].append(time.process_time() - cpu_start)
                samples[variant][1].append(time.perf_counter() - wall_start)
    return {variant: (statistics.median(cpu) * 1000, statistics.median(wall) * 1000)
            for variant, (cpu, wall) in samples.items()}


@contextlib.contextmanager
def all_of(plains):
    with contextlib.ExitStack() as stack:
        for plain in plains:
            stack.enter_context(plain())
        yield


def print_row(name: str, route: str, result: dict) -> None:
    (cpu_b, wall_b), (cpu_p, wall_p) = result["bypass"], result["plain"]
    print(f"| {name} | {route} | {cpu_b:.2f} | {cpu_p:.2f} | {(cpu_p - cpu_b) / cpu_p:+.0%} "
          f"| {wall_b:.2f} | {wall_p:.2f} | {(wall_p - wall_b) / wall_p:+.0%} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--requests", type=int, default=8, help="requests of a route per round and version")
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL", serve.DEFAULT_DATABASE_URL))
    parser.add_argument("--only", help="bypass names containing this text")
    parser.add_argument("--combine", help="comma-separated bypass names: their plain versions together, "
                        "against the code as it is, on each hot route")
    parser.add_argument("--batch", type=int, default=256, help="records in the sequencer's batch")
    args = parser.parse_args()

    serve.django_in_process(serve.prepared_database(args.database_url, ALLOWED_HOSTS="testserver",
                                                    VERIFY_RATE_PER_MINUTE="1000000"))
    from tests.api_chain import split_test_client_chains

    split_test_client_chains()
    by_name = routes()
    print(f"{args.rounds} rounds x {args.requests} requests per version; medians in ms\n")
    print("| bypass | route | bypass CPU | plain CPU | CPU gain | bypass wall | plain wall | wall gain |")
    print("|---|---|---|---|---|---|---|---|")
    if args.combine:
        names = args.combine.split(",")
        plains = [plain for name, _where, _routes, plain in BYPASSES if name in names]
        assert len(plains) == len(names), f"unknown bypass among {names}"
        for route_name in ("read", "record", "sign", "verify", "insert"):
            print_row(" + ".join(names) + " removed", route_name,
                      compare(by_name[route_name], lambda: all_of(plains), args.rounds, args.requests))
        return
    for name, _where, route_names, plain in BYPASSES:
        if args.only and args.only not in name:
            continue
        for route_name in route_names:
            print_row(name, route_name, compare(by_name[route_name], plain, args.rounds, args.requests))
    if not args.only or args.only in "log index assignment":
        for _ in range(args.batch if by_name["insert"] else 0):  # enough pending records for the batch
            by_name["insert"][0]()
        print_row("log index assignment", f"sequencer, {args.batch} records",
                  sequencer_batch(args.rounds * 2, args.batch))
    if not args.only or args.only in "fingerprint search":
        from provenance.models import Fingerprint

        print_row("fingerprint search", f"verify without token or mark, {Fingerprint.objects.count()} values",
                  fingerprint_search(args.rounds))


if __name__ == "__main__":
    main()
