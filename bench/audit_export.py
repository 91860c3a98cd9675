"""Audit export at scale: 1,000,000 events streamed by one real gunicorn worker, as CSV and as JSON.

Seeds one Scale-plan organization with N audit events in PostgreSQL (SQL generate_series, not the
service: seeding a million events through the API would take longer than the measurement), starts
gunicorn as production runs it (gunicorn.conf.py, one worker of the production class), and downloads
`GET /v1/audit/export?format=csv|json` with curl into `wc`, which counts the lines and bytes. Measured:
wall time and events per second of the whole download; the CPU seconds of the worker and of its
PostgreSQL backend (on a shared machine the wall time says how busy it was, the CPU what the
export costs); the worker's resident memory before, and its peak (VmHWM, reset through
/proc/<pid>/clear_refs before each download).

    .venv/bin/python bench/audit_export.py [--events 1000000] [--database-url postgres://...]

The seeded events stay in the benchmark's own database (default bench_audit_export) and are reused
by the next run when their count matches.
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.served_memory import vm_kb

ORG_NAME = "bench-audit-export"
DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_audit_export"

# One event a 20 ms step back from now; the four kinds the API writes most, with their real metadata shapes.
SEED_SQL = """
INSERT INTO audit_auditevent (id, org_id, type, timestamp, metadata)
SELECT gen_random_uuid(), %(org)s, kind, now() - i * interval '20 milliseconds',
       CASE kind
         WHEN 'sign' THEN jsonb_build_object('record_id', gen_random_uuid()::text, 'generator_id', %(generator)s::text,
                                             'model', 'bench-model-' || (i %% 7))
         WHEN 'verify' THEN jsonb_build_object('record_id', gen_random_uuid()::text, 'authentic', i %% 5 <> 0,
                                               'tampered', i %% 5 = 0, 'confidence', 'high', 'token_source', 'xmp')
         ELSE jsonb_build_object('generator_id', %(generator)s::text, 'kid', 'kid-' || i, 'name', 'bench generator',
                                 'mode', 'server')
       END
FROM (SELECT i, (ARRAY['sign', 'verify', 'sign', 'key_created'])[1 + i %% 4] AS kind
      FROM generate_series(1, %(events)s::int) AS i) AS seeded
"""


def seeded_org(events: int):
    """The benchmark organization with exactly `events` audit events and a verified owner."""
    import uuid

    from django.db import connection, transaction

    from accounts.models import Organization
    from audit.models import AuditEvent
    from tests.factories import make_user

    org, created = Organization.objects.get_or_create(name=ORG_NAME, defaults={"plan": "scale"})
    if created:
        make_user(org=org, email=f"{ORG_NAME}@example.com")
    if AuditEvent.objects.filter(org=org).count() != events:
        started = time.perf_counter()
        with transaction.atomic():
            AuditEvent.objects.filter(org=org).delete()
            with connection.cursor() as cursor:
                cursor.execute(SEED_SQL, {"org": org.pk, "generator": str(uuid.uuid4()), "events": events})
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE audit_auditevent")
        print(f"seeded {events:,} events in {time.perf_counter() - started:.1f} s")
    return org


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def database_backend() -> int:
    """The pid of the other PostgreSQL backend on this database: the worker's (its connection persists)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() AND backend_type = 'client backend'")
        [(pid,)] = cursor.fetchall()
    return pid


def download(url: str, key: str) -> tuple[int, int, float]:
    """(lines, bytes, seconds) of one export read to the end by curl and counted by wc."""
    started = time.perf_counter()
    curl = subprocess.Popen(["curl", "-sS", "--fail", "-H", f"Authorization: Bearer {key}", url],
                            stdout=subprocess.PIPE)
    counted = subprocess.run(["wc", "-lc"], stdin=curl.stdout, capture_output=True, text=True, check=True)
    curl.stdout.close()
    if curl.wait() != 0:
        raise SystemExit(f"curl failed on {url}")
    lines, size = (int(n) for n in counted.stdout.split())
    return lines, size, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--formats", nargs="*", default=["csv", "json"], choices=["csv", "json"])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    env = serve.prepared_database(args.database_url)
    serve.django_in_process(env)
    from tests.factories import make_api_key

    org = seeded_org(args.events)
    key = make_api_key(org=org, name="bench")
    workers = []
    with serve.gunicorn(env, workers=1, on_start=lambda process, port: workers.append(process.pid)) as base:
        time.sleep(1)
        worker = int(Path(f"/proc/{workers[0]}/task/{workers[0]}/children").read_text().split()[0])
        download(f"{base}/v1/audit?limit=100", key)  # warm: Django, the connection, the org's index pages
        print(f"PostgreSQL, {args.events:,} events of one organization; gunicorn, 1 worker "
              f"(production class and settings, DEBUG off); curl | wc on the same {os.cpu_count()}-core machine, "
              f"load average {os.getloadavg()[0]:.1f} at the start")
        backend = database_backend()
        print("| format | events | MB | seconds | events/s | worker CPU s | PostgreSQL CPU s | events per worker "
              "CPU s | worker RSS before MB | worker peak MB |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for format in args.formats:
            before = vm_kb(worker, "VmRSS:")
            Path(f"/proc/{worker}/clear_refs").write_text("5")  # VmHWM := current RSS
            cpu, database_cpu = cpu_seconds(worker), cpu_seconds(backend)
            lines, size, seconds = download(f"{base}/v1/audit/export?format={format}", key)
            cpu, database_cpu = cpu_seconds(worker) - cpu, cpu_seconds(backend) - database_cpu
            peak = vm_kb(worker, "VmHWM:")
            events = lines - 1 if format == "csv" else lines - 2  # CSV: a header; JSON: the [ and ] lines
            print(f"| {format} | {events:,} | {size / 1e6:.0f} | {seconds:.1f} | {events / seconds:,.0f} | "
                  f"{cpu:.1f} | {database_cpu:.1f} | {events / cpu:,.0f} | {before / 1024:.0f} | {peak / 1024:.0f} |")
            if events != args.events:
                raise SystemExit(f"{format}: {events:,} events streamed, {args.events:,} expected")


if __name__ == "__main__":
    main()
