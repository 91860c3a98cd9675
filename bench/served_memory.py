"""Peak resident memory of a served gunicorn worker for one large upload: what production holds.

bench/hostile.py measures in a process that also runs the Django test client, which holds the file
it uploads and the multipart body it builds. Here a real gunicorn worker (1 worker, production's class)
serves `curl`, and its high-water mark (VmHWM) is read from /proc before and after the request.

    .venv/bin/python bench/served_memory.py [--case sign-mp4-1080p-60s-50MB ...]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import hostile, serve


def _gunicorn_master(url: str) -> int:
    """The pid of the gunicorn master listening on `url`'s port."""
    port = url.rsplit(":", 1)[1]
    found = subprocess.run(["pgrep", "-f", f"gunicorn config.wsgi:application --bind 127.0.0.1:{port}"],
                           capture_output=True, text=True).stdout.split()
    return min(int(pid) for pid in found)


def worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(children[0])


def vm_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    raise RuntimeError(field)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", nargs="*", default=["sign-mp4-1080p-60s-50MB", "verify-mp4-1080p-60s-50MB",
                                                      "sign-wav-16bit-stereo-50MB", "verify-wav-8bit-mono-50MB"])
    parser.add_argument("--database-url", default=serve.DEFAULT_DATABASE_URL)
    args = parser.parse_args()
    env = {**serve.server_env(args.database_url, None), "VERIFY_RATE_PER_MINUTE": "100000"}
    serve.ensure_database(args.database_url)
    serve.manage(env, "migrate", "--noinput")
    serve.manage(env, "createcachetable")
    [(org, _)] = serve.scale_organizations(env, "bench-served", 1)
    from tests import factories

    generator = factories.make_generator(org=org, formats=["image", "audio", "text", "video"])
    key = factories.make_api_key(org=org)
    print("| case | status | seconds | worker before MB | worker peak MB |")
    print("|---|---|---|---|---|")
    for name in args.case:
        route, build = hostile.corpus()[name]
        with tempfile.NamedTemporaryFile() as upload:
            upload.write(build())
            upload.flush()
            with serve.gunicorn(env, workers=1) as url:
                time.sleep(1)
                worker = worker_pid(_gunicorn_master(url))
                subprocess.run(["curl", "-s", "-o", "/dev/null", f"{url}/v1/openapi.json"], check=True)  # warm
                before = vm_kb(worker, "VmRSS:")
                Path(f"/proc/{worker}/clear_refs").write_text("5")
                command = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-F", f"content=@{upload.name}"]
                if route == "sign":
                    command += ["-H", f"Authorization: Bearer {key}", "-F", "model=bench",
                                "-F", f"generator_id={generator.pk}"]
                started = time.perf_counter()
                status = subprocess.run([*command, f"{url}/v1/{route}"], capture_output=True, text=True).stdout
                seconds = time.perf_counter() - started
                peak = vm_kb(worker, "VmHWM:")
            print(f"| {name} | {status} | {seconds:.2f} | {before / 1024:.0f} | {peak / 1024:.0f} |")


if __name__ == "__main__":
    main()
