"""POST /v1/sign with signatures from the signer service beside the same route signing in process, side by
side in one run (docs/performance.md, "The signer service").

Own PostgreSQL and Redis (tests/own_services.py), migrated; two gunicorns (gunicorn.conf.py, DEBUG off,
2 workers each) on one database: one holds KEY_ENCRYPTION_KEY and signs in process, the other holds no key
and asks a `manage.py signer` (sealed backend). Closed-loop clients send server-managed signing requests to
one server at a time, alternating rounds, so both see the same machine; the idle server costs nothing.
Beside throughput it prints the CPU a request of every server process (the gunicorn, the signer, PostgreSQL's
backends, Redis): on a CPU-bound machine their ratio is what the throughput ratio tends to, and unlike
throughput it holds when other work shares the machine.

    .venv/bin/python bench/signer_route.py [--clients 8] [--seconds 10] [--rounds 3] [--content text|image]
        [--workers 2] [--no-pkcs11]

Then, unless --no-pkcs11, the PKCS#11 backend's signing rates on SoftHSMv2 (bench/signer_pkcs11.py).
"""

import argparse
import contextlib
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.faults import gunicorn_process as gunicorn
from bench.faults import signer_envs, stack, start_signer
from tests.waiting import process_tree


def _body(generator_id: str, content: str, image: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    if content == "text":
        part = (b'Content-Disposition: form-data; name="content"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\n'
                + f"bench text {uuid.uuid4()} ".encode() * 20)
    else:
        part = b'Content-Disposition: form-data; name="content"; filename="a.jpg"\r\nContent-Type: image/jpeg\r\n\r\n' \
            + image
    head = (f'--{boundary}\r\nContent-Disposition: form-data; name="generator_id"\r\n\r\n{generator_id}\r\n'
            f'--{boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nbench\r\n--{boundary}\r\n').encode()
    return head + part + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def _round(port: int, key: str, generator_id: str, args, image: bytes) -> tuple[int, list[float], int]:
    """(201 answers, their latencies in seconds, other answers) of `args.clients` clients for `args.seconds`."""
    latencies, others, lock = [], [0], threading.Lock()
    deadline = time.monotonic() + args.seconds

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while time.monotonic() < deadline:
            body, content_type = _body(generator_id, args.content, image)
            started = time.perf_counter()
            conn.request("POST", "/v1/sign", body=body,
                         headers={"Authorization": f"Bearer {key}", "Content-Type": content_type})
            response = conn.getresponse()
            response.read()
            elapsed = time.perf_counter() - started
            with lock:
                if response.status == 201:
                    latencies.append(elapsed)
                else:
                    others[0] += 1
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(latencies), latencies, others[0]


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have spent."""
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--content", choices=("text", "image"), default="text")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers of each server")
    parser.add_argument("--signer-workers", type=int, default=None,
                        help="gunicorn workers of the server that asks the signer (default: --workers)")
    parser.add_argument("--no-pkcs11", action="store_true", help="skip the PKCS#11 (SoftHSMv2) signing rates")
    args = parser.parse_args()
    with stack() as (env, pg, redis_server):
        from bench.sign_verify import photo
        from tests import factories

        org = factories.make_org(plan="enterprise", name="bench-signer")
        generator = factories.make_generator(org=org, formats=["text", "image"])
        key = factories.make_api_key(org=org)
        image = photo(0.25) if args.content == "image" else b""
        signer_env, web_env = signer_envs(env, str(Path(tempfile.mkdtemp(prefix="bench-signer-")) / "signer.sock"))
        signer = start_signer(signer_env)
        results = {"in process": [0, [], 0, 0.0, 0.0], "through the signer": [0, [], 0, 0.0, 0.0]}
        postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
        try:
            with gunicorn({**env, "WEB_CONCURRENCY": str(args.workers)}) as (in_process, local_server), \
                    gunicorn({**web_env, "WEB_CONCURRENCY": str(args.signer_workers or args.workers)}) as (
                        through_signer, remote_server):
                ports = {"in process": in_process, "through the signer": through_signer}
                servers = {"in process": local_server, "through the signer": remote_server}
                for port in ports.values():  # warm each server's workers (imports, connections, caches)
                    _round(port, key, str(generator.pk), argparse.Namespace(**{**vars(args), "seconds": 2}), image)
                for round_number in range(args.rounds):
                    order = list(ports) if round_number % 2 == 0 else list(reversed(ports))
                    for mode in order:
                        parts = {"web": process_tree(servers[mode].pid), "signer": [signer.pid],
                                 "PostgreSQL": process_tree(postmaster), "Redis": [redis_server.process.pid]}
                        before = {part: _cpu_seconds(pids) for part, pids in parts.items()}
                        count, latencies, others = _round(ports[mode], key, str(generator.pk), args, image)
                        spent = {part: _cpu_seconds(pids) - before[part] for part, pids in parts.items()}
                        total = results[mode]
                        total[0] += count
                        total[1] += latencies
                        total[2] += others
                        total[3] += args.seconds
                        total[4] += sum(spent.values())
                        print(f"round {round_number + 1}, {mode}: {count / args.seconds:.1f} signed/s, "
                              f"p50 {statistics.median(latencies) * 1000:.1f} ms, "
                              f"p99 {_percentile(latencies, 0.99) * 1000:.1f} ms, other answers {others}; CPU per "
                              "request: " + ", ".join(f"{part} {cpu / count * 1000:.2f}"
                                                      for part, cpu in spent.items())
                              + f", all {sum(spent.values()) / count * 1000:.2f} ms")
        finally:
            signer.terminate()
            signer.wait(timeout=60)
    print(f"\nPOST /v1/sign, server-managed {args.content}, {args.clients} clients, {args.rounds} rounds of "
          f"{args.seconds:.0f} s each, alternating; gunicorn workers: {args.workers} in process, "
          f"{args.signer_workers or args.workers} through the signer:\n")
    print("| signing | signed/s | p50 ms | p99 ms | other answers |\n|---|---|---|---|---|")
    rates, cpu_per_request = {}, {}
    for mode, (count, latencies, others, seconds, cpu) in results.items():
        cpu_per_request[mode] = cpu / count
        rates[mode] = (count / seconds, statistics.median(latencies), _percentile(latencies, 0.99))
        print(f"| {mode} | {count / seconds:.1f} | {rates[mode][1] * 1000:.1f} | {rates[mode][2] * 1000:.1f} | "
              f"{others} |")
    local, remote = rates["in process"], rates["through the signer"]
    print(f"\nThrough the signer / in process: throughput {remote[0] / local[0]:.1%}, "
          f"p50 {1000 * (remote[1] - local[1]):+.2f} ms, p99 {1000 * (remote[2] - local[2]):+.2f} ms")
    local_cpu, remote_cpu = cpu_per_request["in process"], cpu_per_request["through the signer"]
    print(f"CPU a request of all server processes: in process {local_cpu * 1000:.2f} ms, through the signer "
          f"{remote_cpu * 1000:.2f} ms: the throughput a CPU-bound machine keeps through the signer, "
          f"{local_cpu / remote_cpu:.1%}")
    if not args.no_pkcs11:
        # The PKCS#11 backend's signing rate beside it (SoftHSMv2; bench/signer_pkcs11.py on its own token).
        print("\nPKCS#11 (SoftHSMv2) beside signing in process:")
        subprocess.run([sys.executable, str(Path(__file__).with_name("signer_pkcs11.py")), "--seconds", "2"],
                       check=False)


if __name__ == "__main__":
    main()
