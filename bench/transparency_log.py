"""Transparency log figures (targets: sequencing >= 5,000 records/s into a log of 1,000,000, an inclusion proof
served in < 5 ms, a checkpoint every second or less under load, POST /v1/records with the sequencer running
>= 90% of the figure without it, in the same run).

1. Fills the database to --records records (once; later runs reuse them). They are written by SQL with
   stand-in signatures (3,309 bytes, not real ML-DSA signatures: the sequencer never verifies, it hashes
   the canonical entry, so only the size matters) and sequenced in-process: records/s into the log.
2. Serves inclusion proofs through the routes (Django's test client in this process, so the figure is the
   application's time, not the network's): GET /v1/log/inclusion?index=N and GET /v1/records/:id.
3. POST /v1/records throughput (gunicorn, wrk, real signatures, as bench/records.py): one server, rounds of
   a window without and a window with `manage.py log_sequencer` running beside it (ABBA order), the median
   of the rounds' ratios and their spread; the sequencer's CPU (its process and its PostgreSQL backend);
   the intervals between the checkpoints it signed during its windows.

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


def post_runs(env: dict[str, str], args) -> dict:
    """POST /v1/records with and without the sequencer, in interleaved rounds against one server.

    One gunicorn serves every window (a fresh server per window added its start-up variance). Each round
    measures every mode once, in ABBA order (the order flips every round, so a drift in the machine's load
    favours neither mode), and gives one ratio per mode against the round's `without`: the ratios' median
    is the figure, their spread is reported. Before each window the bench itself integrates what is
    pending (outside the measurement), so a `with` window's sequencer only has that window's records.
    The sequencer runs as production runs it: `manage.py log_sequencer`, its own process, started and
    settled before its window and stopped after it.
    """
    from bench.records import prepare

    singles, _ = prepare(env)
    lua = serve.rotating_lua("POST", "/v1/records", singles)
    modes = args.modes.split(",")
    result = {"rates": {mode: [] for mode in modes}, "ratios": {mode: [] for mode in modes if mode != "without"},
              "intervals": [], "non_2xx": 0, "cpu": {"process": 0.0, "backend": 0.0}, "records_with": 0,
              "web_cpu": {mode: 0.0 for mode in modes}, "requests": {mode: 0 for mode in modes}}
    server: dict[str, int] = {}
    with serve.gunicorn(env, workers=args.workers, worker_class=args.worker_class, threads=args.threads,
                        on_start=lambda process, port: server.update(pid=process.pid)) as url:
        serve.wrk(url, lua=lua, duration=5, connections=args.connections)  # warm the workers and the database
        for round_number in range(args.repeats):
            order = modes if round_number % 2 == 0 else modes[::-1]
            rates = {mode: _window(url, lua, mode, env, args, result, server["pid"]) for mode in order}
            for mode in result["ratios"]:
                result["ratios"][mode].append(rates[mode] / rates["without"])
            print(f"  round {round_number + 1}: " + ", ".join(f"{mode} {rates[mode]:.0f}/s" for mode in order),
                  flush=True)
    result["intervals"].sort()
    return result


def _window(url: str, lua: str, mode: str, env: dict[str, str], args, result: dict, server_pid: int) -> float:
    """One measured window in `mode`; returns its requests/s and adds to `result`'s totals: the sequencer's
    CPU, and the CPU the requests cost (the gunicorn workers and their PostgreSQL backends)."""
    from transparency.services import log_sequence

    log_sequence()  # every window starts with nothing pending
    # "idle": the process runs but sleeps (a control for its mere presence).
    asleep = ["--interval", "3600"] if mode == "idle" else []
    sequencer = None
    if mode != "without":
        sequencer = subprocess.Popen([sys.executable, "manage.py", "log_sequencer", *asleep], cwd=serve.ROOT,
                                     env=env)
        _wait_until_settled(sequencer.pid)
    try:
        backend = _backend_pid() if sequencer else None
        before = (_cpu_seconds(sequencer.pid), _cpu_seconds(backend) if backend else 0.0) if sequencer else None
        web = {pid: _cpu_seconds(pid) for pid in _web_pids(server_pid)}
        with CheckpointWatch() as watch:
            stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
        result["web_cpu"][mode] += sum(_cpu_seconds(pid) - used for pid, used in web.items() if _alive(pid))
        result["requests"][mode] += stats["requests"]
        if mode == "with":
            result["cpu"]["process"] += _cpu_seconds(sequencer.pid) - before[0]
            result["cpu"]["backend"] += (_cpu_seconds(backend) - before[1]) if backend else 0.0
            result["records_with"] += stats["requests"]
            result["intervals"] += [b - a for a, b in zip(watch.times, watch.times[1:], strict=False)]
    finally:
        if sequencer:
            sequencer.terminate()
            sequencer.wait(timeout=30)
    result["rates"][mode].append(stats["requests_per_second"])
    result["non_2xx"] += stats["non_2xx"] + stats["socket_errors"]
    return stats["requests_per_second"]


def _web_pids(server_pid: int) -> list[int]:
    """The gunicorn workers (the master's children) and the PostgreSQL backends of this database but the
    sequencer's and this process's own (CONN_MAX_AGE keeps a worker's connection for the whole run)."""
    from django.db import connection

    workers = [int(pid) for pid in Path(f"/proc/{server_pid}/task/{server_pid}/children").read_text().split()]
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                       "AND pid <> pg_backend_pid() "
                       "AND application_name NOT LIKE 'log_sequencer%' AND backend_type = 'client backend'")
        backends = [row[0] for row in cursor.fetchall()]
    return workers + backends


def _alive(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").exists()


def _backend_pid() -> int | None:
    """The PostgreSQL server process of the sequencer's connection (it names itself `log_sequencer`)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'log_sequencer' "
                       "AND datname = current_database()")
        row = cursor.fetchone()
    return row[0] if row else None


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
    serve.django_in_process(env)
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
    # The control: a public log route with the same per-IP limit (a Redis round trip) and one small SQL
    # statement but no proof, timed in the same run, so a loaded machine's share of the figure shows.
    for label, paths in (("GET /v1/log/inclusion?index=N", [f"/v1/log/inclusion?index={i}" for i in indexes]),
                         ("GET /v1/records/:id (with `log`)", [f"/v1/records/{i}" for i in ids]),
                         ("GET /v1/log/checkpoint (control: no proof)", ["/v1/log/checkpoint"] * args.proofs)):
        timings = time_route(paths)
        print(f"| {label} | {percentile(timings, 0.5):.2f} | {percentile(timings, 0.99):.2f} "
              f"| {statistics.mean(timings):.2f} |")


def post_table(env: dict[str, str], args) -> None:
    cache = "Redis" if env.get("REDIS_URL") else "database cache"
    print(f"\nPOST /v1/records: gunicorn {args.workers} x {args.worker_class} workers, PostgreSQL, {cache}; wrk "
          f"{args.connections} connections; one server, {args.repeats} rounds of every mode in ABBA order, "
          f"{args.duration} s windows; load average before: {os.getloadavg()[0]:.1f}", flush=True)
    result = post_runs(env, args)
    labels = {"without": "without the sequencer", "with": "with the sequencer running",
              "idle": "with the sequencer started but asleep"}
    print("\n| POST /v1/records | requests/s (median) | every window |\n|---|---|---|")
    for mode, runs in result["rates"].items():
        print(f"| {labels[mode]} | {statistics.median(runs):.0f} | {' / '.join(f'{rate:.0f}' for rate in runs)} |")
    for mode, ratios in result["ratios"].items():
        ordered = sorted(ratios)
        quartiles = statistics.quantiles(ordered, n=4) if len(ordered) > 1 else [ordered[0]] * 3
        print(f"\n{labels[mode].capitalize()} / without, round by round: {' / '.join(f'{r:.0%}' for r in ratios)}; "
              f"median {statistics.median(ratios):.0%}, quartiles {quartiles[0]:.0%}-{quartiles[2]:.0%}, "
              f"min {ordered[0]:.0%}, max {ordered[-1]:.0%}.")
    print(f"Non-2xx responses and socket errors: {result['non_2xx']}; load average after: {os.getloadavg()[0]:.1f}.")
    records, cpu = result["records_with"], result["cpu"]
    if records:
        sequencer = (cpu["process"] + cpu["backend"]) / records
        print(f"The sequencer used {cpu['process']:.2f} CPU s in its process and {cpu['backend']:.2f} in its "
              f"PostgreSQL backend over its measured windows, for {records:,} records: "
              f"{sequencer * 1e6:.0f} us a record.")
        if sum(result["requests"].values()):
            request = sum(result["web_cpu"].values()) / sum(result["requests"].values())
            print(f"A request cost the server {request * 1e6:.0f} us of CPU (gunicorn workers and their PostgreSQL "
                  f"backends, every window): on CPU alone, the sequencer leaves "
                  f"{request / (request + sequencer):.1%} of the throughput (a bound that the machine's load "
                  f"does not move, unlike the ratios above).")
    intervals = result["intervals"]
    if intervals:
        print(f"Checkpoint intervals under that load ({len(intervals)}): median {statistics.median(intervals):.2f} s, "
              f"p99 {percentile(intervals, 0.99):.2f} s, max {intervals[-1]:.2f} s.")


if __name__ == "__main__":
    main()
