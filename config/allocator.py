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
