"""Transparency log figures (targets: sequencing >= 5,000 records/s into a log of 1,000,000, an inclusion proof
served in < 5 ms, a checkpoint every second or less under load, POST /v1/records with the sequencer running
>= 90% of the figure without it, in the same run).

1. Fills the database to --records records (once; later runs reuse them). They are written by SQL with
   stand-in signatures (3,309 bytes, not real ML-DSA signatures: the sequencer never verifies, it hashes
   the canonical entry, so only the size matters) and sequenced in-process: records/s into the log.
2. Serves inclusion proofs through the routes (Django's test client in this process, so the figure is the
   application's time, not the network's): GET /v1/log/inclusion?index=N and GET /v1/records/:id.
3. POST /v1/records throughput (gunicorn, wrk, real signatures, as bench/records.py), runs alternating
   without and with `manage.py log_sequencer` running beside gunicorn, and the intervals between the
   checkpoints the sequencer signed during the runs with it.

    .venv/bin/python bench/transparency_log.py [--records 1000000] [--duration 10] [--repeats 3]
        [--database-url postgres://postgres@127.0.0.1:5432/tlog_bench]
"""

import os
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve

MODEL = "bench-log"
FILL_SQL = """
INSERT INTO provenance_record (id, org_id, generator_id, key_id, model, watermark_id, content_hash, signature,
                               signed_at)
SELECT gen_random_uuid(), %(org)s, %(generator)s, %(key)s, %(model)s, 'wm-' || i,
       'sha3-256:' || md5(i::text) || md5((i + 1)::text),
       substring(decode(repeat(md5(i::text), 207), 'hex') FROM 1 FOR 3309),
       now() - interval '400 days' + i * interval '1 millisecond'
FROM generate_series(%(start)s::bigint, %(stop)s::bigint) AS i
"""


def fill(target: int) -> int:
    """Make the bench records up to `target`; returns how many were added."""
    from django.db import connection

    from accounts.models import Organization
    from generators.models import GeneratorKey
    from provenance.models import Record
    from tests import factories

    existing = Record.objects.filter(model=MODEL).count()
    org = Organization.objects.filter(name=MODEL).first() or factories.make_org(name=MODEL, plan="scale")
    generator, _ = factories.make_client_generator(org=org, name=MODEL)
    key = GeneratorKey.objects.get(generator=generator)
    with connection.cursor() as cursor:
        for start in range(existing, target, 100_000):
            stop = min(start + 100_000, target) - 1
            cursor.execute(FILL_SQL, {"org": org.pk, "generator": generator.pk, "key": key.pk, "model": MODEL,
                                      "start": start, "stop": stop})
            print(f"  filled {stop + 1:,} records", flush=True)
        cursor.execute("VACUUM ANALYZE provenance_record")
    return max(0, target - existing)


def sequence_all() -> tuple[int, float, int]:
    """Integrate every pending record; returns (records, seconds, tree size after)."""
    from django.db import connection

    from transparency.models import LogState
    from transparency.services import log_sequence

    started = time.perf_counter()
    count = log_sequence()
    seconds = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE provenance_record")
        cursor.execute("VACUUM ANALYZE transparency_logtile")
    return count, seconds, LogState.objects.get(pk=1).tree_size


def time_route(paths: list[str]) -> list[float]:
    from django.test import Client

    client = Client()
    for path in paths[:50]:  # warm the connection, caches and index pages
        client.get(path)
    timings = []
    for path in paths:
        started = time.perf_counter()
        response = client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content
    return sorted(timings)


def percentile(sorted_values: list[float], share: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * share))]


class CheckpointWatch:
    """Polls the state row every 20 ms and notes when a new checkpoint appears."""

    def __init__(self):
        self.times: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        from django.db import connection

        from transparency.models import LogState

        last = None
        while not self._stop.is_set():
            stamp = LogState.objects.filter(pk=1).values_list("checkpoint_at", flat=True).first()
            if stamp != last:
                if last is not None:
                    self.times.append(stamp.timestamp())
                last = stamp
            time.sleep(0.02)
        connection.close()


def post_runs(env: dict[str, str], args) -> tuple[dict[str, list[float]], list[float], int]:
    """Alternating wrk runs without and with the sequencer; requests/s per mode, checkpoint intervals."""
    from bench.records import prepare
    from transparency.services import log_sequence

    singles, _ = prepare(env)
    lua = serve.rotating_lua("POST", "/v1/records", singles)
    rates: dict[str, list[float]] = {mode: [] for mode in args.modes.split(",")}
    intervals, non_2xx, cpu_seconds = [], 0, 0.0
    for _ in range(args.repeats):
        for mode in args.modes.split(","):
            log_sequence()  # both modes start with nothing pending
            # The sequencer starts, and settles, before the server: its start-up is not part of the measurement.
            # "idle": the process runs but sleeps (a control for its mere presence and start-up).
            asleep = ["--interval", "3600"] if mode == "idle" else []
            command = [sys.executable, "manage.py", "log_sequencer", *asleep]
            sequencer = subprocess.Popen(command, cwd=serve.ROOT, env=env) if mode != "without" else None
            if sequencer:
                _wait_until_settled(sequencer.pid)
            try:
                with serve.gunicorn(env, workers=args.workers, worker_class=args.worker_class,
                                    threads=args.threads) as url:
                    serve.wrk(url, lua=lua, duration=3, connections=args.connections)
                    cpu_before = _cpu_seconds(sequencer.pid) if sequencer else 0.0
                    with CheckpointWatch() as watch:
                        stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
                    if mode == "with":
                        cpu_seconds += _cpu_seconds(sequencer.pid) - cpu_before
            finally:
                if sequencer:
                    sequencer.terminate()
                    sequencer.wait(timeout=30)
            rates[mode].append(stats["requests_per_second"])
            non_2xx += stats["non_2xx"]
            if mode == "with":
                intervals += [b - a for a, b in zip(watch.times, watch.times[1:], strict=False)]
            print(f"  {mode} sequencer: {stats['requests_per_second']:.0f} requests/s", flush=True)
    return rates, sorted(intervals), non_2xx, cpu_seconds


def _wait_until_settled(pid: int, timeout: float = 60.0) -> None:
    """Until the process's start-up is over (its CPU time stops growing): on a busy machine a Python start
    takes seconds of CPU, which would otherwise land in the measured window."""
    deadline, last = time.monotonic() + timeout, -1.0
    while time.monotonic() < deadline:
        used = _cpu_seconds(pid)
        if used - last < 0.02:
            return
        last = used
        time.sleep(0.5)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--proofs", type=int, default=2000, help="inclusion proofs timed per route")
    parser.add_argument("--modes", default="without,with",
                        help="POST runs, alternating: without, with (the sequencer running), idle (started, asleep)")
    parser.add_argument("--parts", default="sequencing,proofs,post",
                        help="which measurements to run (comma-separated; the fill always runs)")
    parser.set_defaults(database_url="postgres://postgres@127.0.0.1:5432/tlog_bench")
    args = parser.parse_args()
    env = serve.prepared_env(args)
    env["VERIFY_RATE_PER_MINUTE"] = str(10**9)  # the proofs are timed from one address
    os.environ.update(env)
    import django

    django.setup()
    parts = set(args.parts.split(","))
    added = fill(args.records)
    print(f"\n{args.records:,} bench records ({added:,} added this run)", flush=True)
    if "sequencing" in parts:
        sequencing_table()
    if "proofs" in parts:
        proofs_table(args)
    if "post" in parts:
        post_table(env, args)


def sequencing_table() -> None:
    count, seconds, size = sequence_all()
    print(f"\n| sequencing | records | seconds | records/s | tree size after |\n|---|---|---|---|---|\n"
          f"| pending records into the log, batches of 5,000 | {count:,} | {seconds:.1f} | "
          f"{count / seconds if seconds else 0:,.0f} | {size:,} |")


def proofs_table(args) -> None:
    from provenance.models import Record
    from transparency.services import log_sequence

    log_sequence()
    size = Record.objects.exclude(log_index=None).count()
    rng = random.Random(9)
    indexes = [rng.randrange(size) for _ in range(args.proofs)]
    ids = list(Record.objects.filter(log_index__in=indexes[:args.proofs // 2]).values_list("id", flat=True))
    print(f"\nInclusion proofs against a tree of {size:,}, in process through the routes "
          f"({args.proofs} requests each):\n\n| route | p50 ms | p99 ms | mean ms |\n|---|---|---|---|")
    for label, paths in (("GET /v1/log/inclusion?index=N", [f"/v1/log/inclusion?index={i}" for i in indexes]),
                         ("GET /v1/records/:id (with `log`)", [f"/v1/records/{i}" for i in ids])):
        timings = time_route(paths)
        print(f"| {label} | {percentile(timings, 0.5):.2f} | {percentile(timings, 0.99):.2f} "
              f"| {statistics.mean(timings):.2f} |")


def post_table(env: dict[str, str], args) -> None:
    print(f"\nPOST /v1/records: {serve.describe(args, env)}; runs alternate without and with the sequencer", flush=True)
    rates, intervals, non_2xx, cpu_seconds = post_runs(env, args)
    pairs = [w / wo for w, wo in zip(rates["with"], rates["without"], strict=True)]
    without, with_ = statistics.median(rates["without"]), statistics.median(rates["with"])
    print("\n| POST /v1/records | requests/s (median) | every run |\n|---|---|---|")
    labels = {"without": "without the sequencer", "with": "with the sequencer running",
              "idle": "with the sequencer started but asleep"}
    for mode, runs in rates.items():
        print(f"| {labels[mode]} | {statistics.median(runs):.0f} | {' / '.join(f'{rate:.0f}' for rate in runs)} |")
    print(f"\nWith the sequencer: {with_ / without:.0%} of the throughput without it (medians); run by run "
          f"{' / '.join(f'{ratio:.0%}' for ratio in pairs)}, median {statistics.median(pairs):.0%}; "
          f"non-2xx responses: {non_2xx}.")
    records = sum(rates["with"]) * args.duration
    print(f"The sequencer process used {cpu_seconds:.2f} CPU s in its runs (measured windows only), for about "
          f"{records:,.0f} records: {cpu_seconds / records * 1e6:.0f} us a record.")
    if intervals:
        print(f"Checkpoint intervals under that load ({len(intervals)}): median {statistics.median(intervals):.2f} s, "
              f"p99 {percentile(intervals, 0.99):.2f} s, max {intervals[-1]:.2f} s.")


if __name__ == "__main__":
    main()
