"""A served worker's memory during and after large verifications (a real gunicorn, gunicorn.conf.py, DEBUG off).

The worker serves small images of each format (its idle size), then a 49-megapixel lossless WebP of a few
dozen bytes, then the same file again and a 49-megapixel PNG: each measured one on a worker that has
served a large one before, its peak (VmHWM, reset through /proc/<pid>/clear_refs before the request)
under 500 MB, and its resident size back within 50 MB of idle once the request is over.
bench/served_memory.py prints the same figures for every family's large files.
"""

import io
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
from PIL import Image

from tests import hostile_media
from tests.proc_sockets import child_pids, free_port
from tests.production_env import production_env
from tests.waiting import process_tree, serving, stop_process, wait_until

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"
MB = 1024 * 1024
PEAK_LIMIT = 500 * MB
AFTER_MARGIN = 50 * MB

pytestmark = pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="Linux /proc")


def _status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    raise AssertionError(field)


def _small(fmt: str) -> bytes:
    buffer = io.BytesIO()
    Image.effect_mandelbrot((640, 480), (-2.0, -1.2, 1.0, 1.2), 60).convert("RGB").save(buffer, fmt)
    return buffer.getvalue()


def _flat_png_49mp() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (7000, 7000), (128, 90, 60)).save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One gunicorn worker with production's settings on a throwaway SQLite database; yields (url, master pid)."""
    if not GUNICORN.exists():
        pytest.skip(f"gunicorn is not installed at {GUNICORN}")
    folder = tmp_path_factory.mktemp("worker-memory")
    env = production_env("worker-memory", f"sqlite:///{folder / 'db.sqlite3'}", VERIFY_RATE_PER_MINUTE="100000")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=300)
    subprocess.run([sys.executable, "manage.py", "createcachetable"], cwd=ROOT, env=env, check=True,
                   capture_output=True, timeout=120)
    port, log = free_port(), folder / "gunicorn.log"
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(GUNICORN), "config.wsgi:application", "-c", "gunicorn.conf.py", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--graceful-timeout", "5", "--log-level", "info", "--no-control-socket"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: "Worker ready" in log.read_text(errors="replace") and serving(url),
                   pids=lambda: process_tree(process.pid), cpu_budget=120, what="gunicorn serving",
                   alive=lambda: process.poll() is None, details=lambda: log.read_text(errors="replace"))
        yield url, process.pid
    finally:
        stop_process(process, grace=20)


def _worker(master: int) -> int:
    [pid] = child_pids(master)
    return pid


def _verify(url: str, content: bytes) -> requests.Response:
    return requests.post(f"{url}/v1/verify", files={"content": (uuid.uuid4().hex, content)}, timeout=120)


def _settled_rss(master: int, worker: int, idle: int) -> int:
    """The worker's RSS once it is back within the margin of idle (its post-request work runs after the
    response is sent), bounded by the CPU it spends getting there."""
    wait_until(lambda: _status_kb(worker, "VmRSS:") <= idle + AFTER_MARGIN, pids=lambda: [worker],
               cpu_budget=2, what="the worker's RSS back near idle",
               details=lambda: f"idle {idle / MB:.0f} MB, now {_status_kb(worker, 'VmRSS:') / MB:.0f} MB")
    return _status_kb(worker, "VmRSS:")


def test_large_verifications_peak_under_500_mb_and_leave_the_worker_near_idle(server):
    url, master = server
    worker = _worker(master)
    for fmt in ("JPEG", "PNG", "WEBP", "JPEG"):  # every image decoder loaded: the worker's idle size
        assert _verify(url, _small(fmt)).status_code == 200
    time.sleep(0.5)  # the post-request work of the last small request
    idle = _status_kb(worker, "VmRSS:")
    webp = hostile_media.pixel_bomb("WEBP")  # 7000 x 7000, lossless, under 4 KB
    assert len(webp) < 4096

    assert _verify(url, webp).status_code == 200  # a large request before: what the issue measured next
    _settled_rss(master, worker, idle)

    for content in (webp, _flat_png_49mp()):
        Path(f"/proc/{worker}/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        assert _verify(url, content).status_code == 200
        peak = _status_kb(worker, "VmHWM:")
        assert peak < PEAK_LIMIT, f"peak {peak / MB:.0f} MB (idle {idle / MB:.0f} MB)"
        _settled_rss(master, worker, idle)
    assert _worker(master) == worker  # trimmed in place, not replaced
