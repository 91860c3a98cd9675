"""Integer PCM and float samples: one scale both ways, so decoding then encoding is exact.

A b-bit sample v becomes v / 2**(b-1), which lies in [-1, 1); encoding multiplies back, rounds
and clips to [-2**(b-1), 2**(b-1) - 1]. Unchanged samples therefore re-encode bit for bit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


def to_float(values: np.ndarray, bits: int) -> np.ndarray:
    """Signed integer samples of `bits` bits as float64 in [-1, 1)."""
    import numpy as np

    return values.astype(np.float64) / float(1 << (bits - 1))


def to_int(samples: np.ndarray, bits: int) -> np.ndarray:
    """Float samples as signed integers of `bits` bits (int64), rounded to nearest and clipped."""
    import numpy as np

    scale = float(1 << (bits - 1))
    return np.clip(np.rint(samples * scale), -scale, scale - 1).astype(np.int64)
