"""A worker's memory after a large request: glibc's heap trimmed, or the worker replaced (gunicorn's
post_request hook, gunicorn.conf.py). A bound on memory, not a speed-up: glibc's malloc itself is left
as it starts (its thresholds were once tuned here; docs/architecture.md, "Where we step around Django").
"""

import ctypes
import os
import sys

# --- after a large request ------------------------------------------------------------------------
#
# Buffers under glibc's mmap threshold come from the heap: Pillow's pixels (in blocks of at most 16 MB), numpy's
# smaller planes. After a 49-megapixel image the worker's arenas hold a few hundred MB of such free blocks,
# which glibc only hands back from the top of each heap, and the next large request piles its own on the
# fragments (docs/performance.md, "Worker memory"). malloc_trim returns every free page of every arena; it
# runs only when a request left the worker TRIM_ABOVE over its idle size, so ordinary requests keep glibc's
# reuse of the blocks they freed.
# What a trim cannot return (Python's own object arenas, a leak) is left to a restart.

TRIM_ABOVE = 40 * 1024 * 1024  # RSS over the idle size after a request: trim the heap
RESTART_ABOVE = 50 * 1024 * 1024  # RSS still over idle after the trim: the worker asks to be replaced
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def resident_bytes() -> int:
    """This process's resident set size (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


def trim_heap() -> bool:
    """Give every free page of every malloc arena back to the kernel (glibc's malloc_trim); False where
    the C library has none."""
    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    malloc_trim(0)
    return True


class MemoryGuard:
    """A worker's idle size and what to do after each request: nothing, trim, or restart.

    The idle size starts as the RSS when the worker is ready, falls to the smallest RSS seen after a
    request, and rises only when a request imported modules: code loaded once, for good, is nothing a
    trim or a restart would win back (a worker that restarted for it would restart at the next such
    request). A trim comes first, so the first large request of a fresh worker is not taken for idle."""

    def __init__(self, rss=resident_bytes, trim=trim_heap):
        self._rss, self._trim = rss, trim
        self.idle = rss()
        self.last_rss = self.idle
        self._modules = len(sys.modules)

    def after_request(self) -> str:
        """"kept", "trimmed" or "restart" (the RSS after a trim is still RESTART_ABOVE over idle)."""
        rss = self._rss()
        imported, self._modules = len(sys.modules) != self._modules, len(sys.modules)
        if not rss or not self.idle:  # no /proc
            return "kept"
        outcome = "kept"
        if rss > self.idle + TRIM_ABOVE:
            self._trim()
            rss, outcome = self._rss(), "trimmed"
        self.last_rss = rss
        if imported:
            self.idle = max(self.idle, rss)
        elif rss > self.idle + RESTART_ABOVE:
            return "restart"
        self.idle = min(self.idle, rss)
        return outcome
