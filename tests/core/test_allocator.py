"""glibc malloc tuned in each gunicorn worker (core/allocator.py): image buffers are reused between
requests instead of being faulted in afresh. Measured in a child process, as a worker would be."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_CHILD = """
import json, resource, runpy, sys
import numpy as np
if sys.argv[1] == "tuned":
    runpy.run_path("gunicorn.conf.py")["post_fork"](None, None)
    from core.allocator import tune_malloc
    assert tune_malloc()  # glibc took both settings
def request():
    buffers = [np.ones((865, 1154), np.float32) for _ in range(4)]  # four 1-megapixel float planes
    return sum(float(b[0, 0]) for b in buffers)
request()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    request()
print(json.dumps((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20))
"""


def _faults_per_request(mode: str) -> float:
    out = subprocess.run([sys.executable, "-c", _CHILD, mode], cwd=ROOT, capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_a_worker_reuses_its_image_buffers_instead_of_faulting_them_in_again():
    untuned, tuned = _faults_per_request("plain"), _faults_per_request("tuned")
    assert untuned > 2000  # 16 MB of fresh pages a request: what the tuning removes
    assert tuned < 100



# --- after a large request: trim, or restart (core/allocator.py MemoryGuard) ----------------------

MB = 1024 * 1024


class _Process:
    """RSS figures the guard reads in turn, and the trims it asks for (each trim gives back `returned`)."""

    def __init__(self, rss: int, returned: int = 0):
        self.now, self.returned, self.trims = rss, returned, 0

    def rss(self) -> int:
        return self.now

    def trim(self) -> bool:
        self.trims += 1
        self.now -= self.returned
        return True


def test_a_request_that_left_the_worker_large_is_trimmed_back():
    from core.allocator import MemoryGuard

    process = _Process(170 * MB, returned=150 * MB)
    guard = MemoryGuard(rss=process.rss, trim=process.trim)
    process.now += 10 * MB  # an ordinary request: buffers kept for the next one
    assert guard.after_request() == "kept" and process.trims == 0
    process.now += 150 * MB  # a 49-megapixel image's freed buffers, still in the heap
    assert guard.after_request() == "trimmed" and process.trims == 1


def test_a_worker_still_large_after_the_trim_asks_to_be_replaced():
    from core.allocator import MemoryGuard

    process = _Process(170 * MB, returned=20 * MB)
    guard = MemoryGuard(rss=process.rss, trim=process.trim)
    process.now += 120 * MB  # 100 MB a trim cannot return (Python's own arenas, a leak)
    assert guard.after_request() == "restart"
    assert guard.last_rss == 270 * MB and guard.idle == 170 * MB


def test_modules_a_request_imports_raise_the_idle_size_instead_of_restarting(monkeypatch):
    import sys

    from core.allocator import MemoryGuard

    process = _Process(100 * MB, returned=0)
    guard = MemoryGuard(rss=process.rss, trim=process.trim)
    process.now += 70 * MB  # numpy, Pillow and OpenCV on the first image: code, loaded for good
    monkeypatch.setitem(sys.modules, "imported_by_the_request", object())
    assert guard.after_request() == "trimmed"
    assert guard.idle == 170 * MB
    assert guard.after_request() == "kept"  # and the next request is measured from there


def test_gunicorns_post_request_hook_ends_a_worker_the_guard_gives_up_on():
    import logging
    import runpy
    from types import SimpleNamespace

    from core.allocator import MemoryGuard

    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    process = _Process(170 * MB)
    worker = SimpleNamespace(alive=True, pid=1, log=logging.getLogger("test"),
                             memory_guard=MemoryGuard(rss=process.rss, trim=process.trim))
    hooks["post_request"](worker, None, {}, None)
    assert worker.alive  # at its idle size
    process.now += 200 * MB
    hooks["post_request"](worker, None, {}, None)
    assert not worker.alive and process.trims == 1  # trimmed first, then ends after this request
