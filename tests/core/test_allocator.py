"""A worker after a large request: trimmed, or replaced (core/allocator.py MemoryGuard, gunicorn's
post_request hook)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

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
