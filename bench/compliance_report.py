"""GET /v1/compliance/report at scale: the report of a period holding 1,000,000 signatures (PostgreSQL).

Fills the database once (reused on later runs) with N records of one organization over 30 days, written
with COPY (psycopg 3) 100,000 a transaction, each with the `sign` audit event every signature writes, and
one verification event per five records; and as many of each of --others organizations (default one),
interleaved row by row over the same period, so the measured organization's rows share every table page
with another's and the report cannot read the whole table instead of its own rows. Formats:
image 50%, audio 15%, text 15%, video 10%, none (client-managed) 10%; server-managed records carry metadata
and a mark (video: metadata only), one image in five a C2PA manifest too, one record in a hundred no recorded
disclosures. Signatures are 16-byte stand-ins: a real one (3,309 bytes) lives in TOAST, leaving an 18-byte
pointer in the row, so the rows the report scans are about the real size.

Then, for each format (json, csv, pdf), times what the route runs after authentication: the two aggregate
queries and the document (JSON: the serializer and json.dumps), over the whole period, and prints the plan
of each query (its index and whether the scan is index-only).

    .venv/bin/python bench/compliance_report.py [--records 1000000] [--rounds 10]
        [--others 1] [--database-url postgres://postgres@127.0.0.1:5432/bench_compliance_report]
"""

import argparse
import json
import random
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

START = datetime(2026, 3, 1, tzinfo=UTC)
PERIOD = timedelta(days=30)
BATCH = 100_000
FORMATS = [("image", 50), ("audio", 15), ("text", 15), ("video", 10), (None, 10)]
RECORD_COLUMNS = ("id", "org_id", "generator_id", "key_id", "model", "watermark_id", "content_hash", "signature",
                  "format", "disclosures", "signed_at")
EVENT_COLUMNS = ("id", "org_id", "type", "timestamp", "metadata")


def _disclosures(format: str | None, rng: random.Random) -> int | None:
    from provenance.disclosures import CarriedDisclosure

    if rng.random() < 0.01:
        return None
    if format is None:
        return 0
    flags = CarriedDisclosure.METADATA | (CarriedDisclosure.MARK if format != "video" else 0)
    if format == "image" and rng.random() < 0.2:
        flags |= CarriedDisclosure.C2PA
    return int(flags)


def _rows(owners: list[tuple], start: int, stop: int, total: int, rng: random.Random):
    """(record rows, audit event rows) for records `start`..`stop - 1` of `total`, spread evenly over PERIOD and
    dealt to `owners` ((organization, server key, client key) each) in turn, so each one's rows share pages."""
    formats = [format for format, share in FORMATS for _ in range(share)]
    records, events = [], []
    for index in range(start, stop):
        org, server_key, client_key = owners[index % len(owners)]
        format = formats[(index // len(owners)) % len(formats)]
        key = client_key if format is None else server_key
        moment = START + PERIOD * index / total
        record_id = uuid.uuid4()
        records.append((record_id, org.pk, key.generator_id, key.pk, f"model-{index % 5}",
                        "none" if format in (None, "video") else f"{rng.getrandbits(64):016x}",
                        f"sha3-256:{rng.getrandbits(256):064x}", b"\x5a" * 16, format, _disclosures(format, rng),
                        moment))
        events.append((uuid.uuid4(), org.pk, "sign", moment, json.dumps({"record_id": str(record_id)})))
        if (index // len(owners)) % 5 == 0:
            events.append((uuid.uuid4(), org.pk, "verify", moment + timedelta(seconds=1),
                           json.dumps({"record_id": str(record_id), "authentic": True})))
    return records, events


def _copy(cursor, table: str, columns: tuple[str, ...], rows: list[tuple]) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def _owner(name: str) -> tuple:
    """The organization `name` (made once) with a server-managed and a client-managed generator's keys."""
    from accounts.models import Organization
    from generators.models import GeneratorKey
    from tests import factories

    org = Organization.objects.filter(name=name).first() or factories.make_org(name=name, plan="scale")
    server = org.generators.filter(mode="server").first() or factories.make_generator(
        org=org, formats=["image", "audio", "text", "video"])
    client = org.generators.filter(mode="client").first() or factories.make_client_generator(org=org)[0]
    return org, GeneratorKey.objects.get(generator=server), GeneratorKey.objects.get(generator=client)


def seed(count: int, others: int):
    """The measured organization with `count` records and their events, and `others` organizations with as
    many, interleaved row by row over the same period (made once, resumed where a run stopped)."""
    from django.db import connection, transaction

    from provenance.models import Record

    owners = [_owner("bench-compliance"), *(_owner(f"bench-compliance-other-{n}") for n in range(others))]
    total = count * len(owners)
    rng = random.Random(total)
    for start in range(Record.objects.filter(org__name__startswith="bench-compliance").count(), total, BATCH):
        stop = min(start + BATCH, total)
        records, events = _rows(owners, start, stop, total, rng)
        with transaction.atomic(), connection.cursor() as cursor:
            _copy(cursor, "provenance_record", RECORD_COLUMNS, records)
            _copy(cursor, "audit_auditevent", EVENT_COLUMNS, events)
        print(f"  {stop:,} of {total:,} records", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE provenance_record")
        cursor.execute("VACUUM ANALYZE audit_auditevent")
    return owners[0][0]


def _render(report, format: str) -> bytes:
    from provenance.compliance import compliance_download
    from provenance.serializers import ComplianceReportOutput

    if format == "json":
        return json.dumps(ComplianceReportOutput(report).data).encode()
    return compliance_download(report=report, format=format).content


def timed(org, period, format: str, rounds: int) -> tuple[list[float], int]:
    from provenance.compliance import compliance_report

    timings = []
    for _ in range(rounds):
        started = time.perf_counter()
        report = compliance_report(org=org, period=period)
        body = _render(report, format)
        timings.append((time.perf_counter() - started) * 1000)
    return timings, len(body)


def plans(org, period) -> list[str]:
    """Each query the report makes, EXPLAINed as it ran: the index it reads, whether the scan is index-only."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from provenance.compliance import compliance_report

    with CaptureQueriesContext(connection) as captured:
        compliance_report(org=org, period=period)
    described = []
    for query in captured.captured_queries:
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query['sql']}")
            lines = [row[0] for row in cursor.fetchall()]
        described.append(" / ".join(line.strip() for line in lines if "Scan" in line or "Execution" in line))
    return described


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--others", type=int, default=1, help="other organizations, each with as many records")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/bench_compliance_report")
    args = parser.parse_args()
    serve.django_in_process(serve.prepared_database(args.database_url))
    from provenance.compliance import Period

    org = seed(args.records, args.others)
    period = Period(since=START, until=START + PERIOD)
    print(f"GET /v1/compliance/report's work after authentication, {args.records:,} signatures in the period, "
          f"{args.rounds} rounds each")
    print("| format | bytes | mean ms | p50 ms | max ms |")
    print("|---|---|---|---|---|")
    for format in ("json", "csv", "pdf"):
        timings, size = timed(org, period, format, args.rounds)
        print(f"| {format} | {size:,} | {statistics.mean(timings):.0f} | {statistics.median(timings):.0f} "
              f"| {max(timings):.0f} |", flush=True)
    for line in plans(org, period):
        print(f"plan: {line}")


if __name__ == "__main__":
    main()
