"""One organization's hanging webhook endpoint beside a second organization's verify traffic: the second
organization's throughput and p99 with the hang, against the same run without it (target: within 10%
and 100 ms).

Production shape: gunicorn with gunicorn.conf.py (WEB_CONCURRENCY=2 workers, its worker class and one
thread each), PostgreSQL, Redis, DEBUG off, WEBHOOK_ALLOW_PRIVATE_TARGETS on so deliveries reach the
local receivers (bench/webhooks.py's: an asyncio process answering 204, or one that reads each
request and never answers). Organization B (its own `verify.attempted` endpoint, healthy) is loaded
by wrk with anonymous POST /v1/verify of a file it signed. Beside it, organization A's anonymous
verifications arrive from `--a-clients` clients, one request every `--a-interval` seconds each; A's
`verify.attempted` endpoints answer (run "healthy") or hang (run "hang"), and A puts them back to
`active` every 5 s, as an attacker would, so they never rest in `failing`. Runs alternate, each on a
freshly started server; the median of `--repeats` is shown.

    nice -n 10 .venv/bin/python bench/webhook_isolation.py [--duration 15] [--repeats 3] [--connections 16]
        [--a-clients 3] [--a-interval 0.3] [--a-endpoints 1] --database-url ... --redis-url ...
"""

import contextlib
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import serve
from bench.sign_verify import photo
from bench.webhooks import start_receiver

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def production_gunicorn(env: dict[str, str]):
    """gunicorn exactly as deployed (-c gunicorn.conf.py, 2 workers); yields the base URL."""
    port = serve.free_port()
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "config.wsgi:application", "-c", "gunicorn.conf.py",
                                "--no-control-socket"], cwd=ROOT, start_new_session=True,
                               env={**env, "GUNICORN_BIND": f"127.0.0.1:{port}", "WEB_CONCURRENCY": "2",
                                    "LOG_LEVEL": "WARNING"})
    try:
        serve._wait_for_port(port)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def verify_lua(body_path: str, content_type: str) -> str:
    return f"""local file = io.open("{body_path}", "rb")
local body = file:read("*a")
file:close()
request = function()
  return wrk.format("POST", "/v1/verify", {{["Content-Type"] = "{content_type}"}}, body)
end
"""


class OrgATraffic:
    """A's clients: each sends an anonymous verification every `interval` s; one more puts A's endpoints
    back to `active` every 5 s. Records every status and latency."""

    def __init__(self, url: str, content: bytes, clients: int, interval: float, key: str, endpoint_ids: list[str]):
        import requests

        self.http, self.url, self.content, self.interval = requests, url, content, interval
        self.key, self.endpoint_ids = key, endpoint_ids
        self.stop = threading.Event()
        self.answers: list[tuple[int, float]] = []
        self.threads = [threading.Thread(target=self._verify) for _ in range(clients)]
        self.threads.append(threading.Thread(target=self._reactivate))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _verify(self) -> None:
        session = self.http.Session()
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                status = session.post(f"{self.url}/v1/verify", files={"content": ("a.jpg", self.content)},
                                      timeout=120).status_code
            except self.http.RequestException:
                status = 0
            self.answers.append((status, time.monotonic() - started))
            self.stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def _reactivate(self) -> None:
        while not self.stop.wait(5):
            for endpoint_id in self.endpoint_ids:
                with contextlib.suppress(self.http.RequestException):
                    self.http.patch(f"{self.url}/v1/webhooks/{endpoint_id}", json={"status": "active"},
                                    headers={"Authorization": f"Bearer {self.key}"}, timeout=60)


def setup(env: dict[str, str], healthy_port: int, hang_port: int, endpoints: int) -> dict:
    """Organizations A-healthy, A-hang and B, each with an image generator, a key and its endpoints."""
    pairs = serve.scale_organizations(env, "bench-isolation", 3)  # sets Django up
    from tests import factories
    from webhooks.services import webhook_create

    made = {}
    for (org, _), label, port, count in ((pairs[0], "healthy", healthy_port, endpoints),
                                         (pairs[1], "hang", hang_port, endpoints), (pairs[2], "b", healthy_port, 1)):
        ids = [str(webhook_create(org=org, url=f"http://127.0.0.1:{port}/{label}/{n}",
                                  events=["verify.attempted"]).endpoint.pk) for n in range(count)]
        generator = factories.make_generator(org=org, formats=["image"])
        made[label] = {"org": org, "key": factories.make_api_key(org=org), "generator": str(generator.pk),
                       "endpoints": ids}
    return made


def sign_all(env: dict[str, str], made: dict) -> None:
    import requests

    picture = photo(0.3)
    with production_gunicorn(env) as url:
        for entry in made.values():
            response = requests.post(f"{url}/v1/sign", headers={"Authorization": f"Bearer {entry['key']}"},
                                     data={"generator_id": entry["generator"], "model": "bench"},
                                     files={"content": ("p.jpg", picture)}, timeout=120)
            assert response.status_code == 201, response.text[:300]
            entry["signed"] = response.content


def delivery_counts(endpoint_ids: list[str]) -> dict[str, int]:
    from webhooks.delivery import deliveries_settle
    from webhooks.models import WebhookDelivery

    deliveries_settle()
    counts = {"success": 0, "failed": 0, "pending": 0}
    for status, pending in WebhookDelivery.objects.filter(endpoint_id__in=endpoint_ids).values_list("status",
                                                                                                    "pending"):
        counts["pending" if pending else status] += 1
    return counts


def main() -> None:
    parser = serve.server_arguments(__doc__)
    parser.set_defaults(duration=15, connections=16)
    parser.add_argument("--a-clients", type=int, default=3, help="organization A's concurrent clients")
    parser.add_argument("--a-interval", type=float, default=0.3, help="seconds between one A client's requests")
    parser.add_argument("--a-endpoints", type=int, default=1, help="A's verify.attempted endpoints")
    args = parser.parse_args()
    env = {**serve.prepared_env(args), "WEBHOOK_ALLOW_PRIVATE_TARGETS": "true", "VERIFY_RATE_PER_MINUTE": "10000000"}
    healthy, healthy_port = start_receiver("healthy")
    hanging, hang_port = start_receiver("hang")
    try:
        made = setup(env, healthy_port, hang_port, args.a_endpoints)
        sign_all(env, made)
        from bench.load import multipart_body

        body, headers = multipart_body({}, made["b"]["signed"])
        with tempfile.NamedTemporaryFile(suffix=".multipart", delete=False) as file:
            file.write(body)
        lua = verify_lua(file.name, headers["Content-Type"])
        load_before = os.getloadavg()
        results: dict[str, list[dict]] = {"healthy": [], "hang": []}
        for _ in range(args.repeats):
            for mode in ("healthy", "hang"):
                a = made[mode]
                with production_gunicorn(env) as url:
                    serve.wrk(url, lua=lua, duration=2, connections=args.connections)  # warm both workers
                    with OrgATraffic(url, a["signed"], args.a_clients, args.a_interval, a["key"],
                                     a["endpoints"]) as traffic:
                        stats = serve.wrk(url, lua=lua, duration=args.duration, connections=args.connections)
                    stats["a_answers"] = traffic.answers
                results[mode].append(stats)
        os.unlink(file.name)

        def median(mode: str, key: str) -> float:
            return statistics.median(stats[key] for stats in results[mode])

        print(f"gunicorn -c gunicorn.conf.py (2 workers, its worker class, 1 thread each), PostgreSQL, "
              f"{'Redis' if env.get('REDIS_URL') else 'database cache'}; B: wrk {args.connections} connections, "
              f"{args.duration} s a run; A: {args.a_clients} clients x 1 verify / {args.a_interval:g} s, "
              f"{args.a_endpoints} endpoint(s); {args.repeats} runs each, alternating, medians; load average "
              f"before {load_before[0]:.1f}, after {os.getloadavg()[0]:.1f}\n")
        print("| A's endpoint | B verify/s | B p50 ms | B p99 ms | B non-2xx | every run, B req/s | A answered "
              "| A slowest s |")
        print("|---|---|---|---|---|---|---|---|")
        for mode in ("healthy", "hang"):
            answers = [answer for stats in results[mode] for answer in stats["a_answers"]]
            runs = "/".join(f"{stats['requests_per_second']:.0f}" for stats in results[mode])
            print(f"| {mode} | {median(mode, 'requests_per_second'):.0f} | {median(mode, 'p50_ms'):.1f} "
                  f"| {median(mode, 'p99_ms'):.1f} | {sum(stats['non_2xx'] for stats in results[mode])} "
                  f"| {runs} "
                  f"| {sum(1 for status, _ in answers if status == 200)}/{len(answers)} "
                  f"| {max(seconds for _, seconds in answers):.2f} |")
        ratio = median("hang", "requests_per_second") / median("healthy", "requests_per_second")
        p99_added = median("hang", "p99_ms") - median("healthy", "p99_ms")
        print(f"\nB's throughput with A's endpoint hanging / without: {ratio:.3f} (target >= 0.90); "
              f"p99 added: {p99_added:+.1f} ms (target <= 100)")
        print(f"A's hanging endpoint deliveries: {delivery_counts(made['hang']['endpoints'])}; "
              f"A's healthy: {delivery_counts(made['healthy']['endpoints'])}; "
              f"B's: {delivery_counts(made['b']['endpoints'])}")
    finally:
        for process in (healthy, hanging):
            process.terminate()
            process.wait(timeout=10)


if __name__ == "__main__":
    main()
