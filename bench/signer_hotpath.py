"""CPU per signature of the signer's path, one part at a time, robust to a busy machine: CPU seconds, not wall
time (docs/performance.md, "The signer service").

Own PostgreSQL and Redis (tests/own_services.py), migrated; a `manage.py signer` (sealed backend). The same
record signatures are made (a) in this process as a web worker without a signer makes them and (b) through the
signer by `--threads` threads of this process, each on its kept connection; printed: the CPU per signature of
this process and of the signer (from /proc), and what the split adds.

Then the latency a signature takes, wall time from the call to the signature in hand, one signature at a time
on one thread (no queue), in blocks alternating between the two ways so both see the same machine: its
percentiles each way and what the split adds at each.

    .venv/bin/python bench/signer_hotpath.py [--signatures 3000] [--threads 4] [--latency 20000]
"""

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.faults import signer_envs, stack, start_signer
from bench.signer_route import _cpu_seconds


def _cpu_of_threads(work, threads: int) -> float:
    """CPU seconds this process spends running `work` on `threads` threads."""
    before = time.process_time()
    runners = [threading.Thread(target=work) for _ in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    return time.process_time() - before


def _latency_table(*, sign_one, socket_path: str, secret: str, count: int, block: int = 500) -> None:
    """Wall time of each signature, one at a time, blocks of `block` alternating in process and through the
    signer; prints percentiles each way."""
    from django.test import override_settings

    timings: dict[str, list[float]] = {"in process": [], "through the signer": []}
    for number in range(2 * max(1, count // block)):
        mode = ("in process", "through the signer")[number % 2]
        with override_settings(SIGNER_SOCKET=socket_path if mode == "through the signer" else "",
                               SIGNER_SECRET=secret):
            sign_one()
            for _ in range(block):
                started = time.perf_counter()
                sign_one()
                timings[mode].append(time.perf_counter() - started)
    print(f"\nwall time a signature, one at a time ({len(timings['in process'])} each way, blocks of {block}):")
    print("| percentile | in process | through the signer | the split adds |\n|---|---|---|---|")
    for share in (0.5, 0.9, 0.99, 0.999):
        local, remote = (sorted(values)[min(len(values) - 1, int(share * len(values)))]
                         for values in timings.values())
        print(f"| p{share * 100:g} | {local * 1e3:.3f} ms | {remote * 1e3:.3f} ms | {(remote - local) * 1e3:+.3f} ms |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signatures", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--latency", type=int, default=20000, help="signatures timed one at a time, each way")
    args = parser.parse_args()
    with stack() as (env, _, _):
        from django.test import override_settings

        from core import signer_client
        from generators.models import GeneratorKey
        from signer import counting
        from signer.signing import signature_of
        from tests import factories

        org = factories.make_org(plan="enterprise", name="bench-signer-hotpath")
        generator = factories.make_generator(org=org, formats=["text"])
        key = GeneratorKey.objects.get(generator=generator, retired_at__isnull=True)
        socket_path = str(Path(tempfile.mkdtemp(prefix="bench-signer-")) / "signer.sock")
        signer_env, _ = signer_envs(env, socket_path)
        signer = start_signer(signer_env)
        each = args.signatures // args.threads
        message = os.urandom(700)

        def sign_many() -> None:
            for _ in range(each):
                signature_of(key=key, org_id=str(org.pk), purpose="record", algorithm="ml-dsa-65", message=message)

        try:
            figures = {}
            for mode in ("in process", "through the signer", "in process", "through the signer"):
                socket_setting = socket_path if mode == "through the signer" else ""
                with override_settings(SIGNER_SOCKET=socket_setting, SIGNER_SECRET=signer_env["SIGNER_SECRET"]):
                    sign_many()  # warm: connections, caches
                    signer_before = _cpu_seconds([signer.pid])
                    here = _cpu_of_threads(sign_many, args.threads)
                    there = _cpu_seconds([signer.pid]) - signer_before
                count = each * args.threads
                figures.setdefault(mode, []).append((here / count, there / count))
                print(f"{mode}: this process {here / count * 1e6:.0f} µs, signer {there / count * 1e6:.0f} µs "
                      f"of CPU a signature ({count} signatures, {args.threads} threads)")
            local = min(here for here, _ in figures["in process"])
            remote = min(here + there for here, there in figures["through the signer"])
            print(f"\nCPU a signature: in process {local * 1e6:.0f} µs, through the signer {remote * 1e6:.0f} µs "
                  f"(this process and the signer): the split adds {(remote - local) * 1e6:.0f} µs")
            _latency_table(sign_one=lambda: signature_of(key=key, org_id=str(org.pk), purpose="record",
                                                         algorithm="ml-dsa-65", message=message),
                           socket_path=socket_path, secret=signer_env["SIGNER_SECRET"], count=args.latency)
        finally:
            signer.terminate()
            signer.wait(timeout=60)
            signer_client._connections.drop(socket_path)
            counting.counts_flush()  # what this process counted in process, before its Redis and database go
            counting.stop_flusher()


if __name__ == "__main__":
    main()
