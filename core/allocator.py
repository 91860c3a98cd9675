"""glibc's malloc kept from handing a worker's image buffers back to the kernel after every request.

A 1-megapixel verification allocates a dozen buffers of 3 to 5 MB (the decoded pixels, the luminance,
the whitened planes). glibc serves blocks over M_MMAP_THRESHOLD with a fresh mmap and gives them back
on free, and trims the heap's free top beyond M_TRIM_THRESHOLD; its own adaptive thresholds did not
keep these buffers here, so every request faulted about 5,000 fresh pages (20 MB, zero-filled by the
kernel): a third of the request's CPU. Above these values glibc behaves as before: a 12-megapixel
sign still gets and returns its large blocks at once, and a worker keeps at most TRIM_THRESHOLD of
free heap per arena (RSS about 20 to 45 MB higher, and flat; docs/performance.md, "Verify CPU").
Nothing computed changes: only where the bytes come from.
"""

import ctypes
import os
import sys

MMAP_THRESHOLD = 16 * 1024 * 1024  # blocks this large or larger: mmap, returned on free (as before)
TRIM_THRESHOLD = 32 * 1024 * 1024  # free heap kept for the next request, per arena
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>


def tune_malloc() -> bool:
    """Set both thresholds in this process (a gunicorn worker calls it after the fork).

    Returns False, changing nothing, where the C library has no glibc `mallopt` (musl, macOS).
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))


# --- after a large request ------------------------------------------------------------------------
#
# Buffers under MMAP_THRESHOLD come from the heap: Pillow's pixels (in blocks of at most 16 MB), numpy's
# smaller planes. After a 49-megapixel image the worker's arenas hold a few hundred MB of such free blocks,
# which glibc only hands back from the top of each heap, and the next large request piles its own on the
# fragments: 230-370 MB kept after the request and 650 MB at the next peak (docs/performance.md, "Worker
# memory"). malloc_trim returns every free page of every arena; it runs only when a request left the
# worker TRIM_ABOVE over its idle size, so ordinary requests keep the reuse the thresholds above bought.
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
