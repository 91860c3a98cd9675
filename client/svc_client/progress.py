"""Progress lines on stderr for uploads and batches: rewritten in place on a terminal, a line per quarter
otherwise (logs stay short), nothing with --quiet or --json."""

from __future__ import annotations

import sys
from typing import TextIO


class ProgressLine:
    def __init__(self, label: str, *, enabled: bool = True, stream: TextIO | None = None, unit: str = "bytes"):
        self.label, self.enabled, self.unit = label, enabled, unit
        self.stream = stream or sys.stderr
        self.is_tty = self.stream.isatty()
        self._last_step = -1

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        percent = 100 * done // total
        step = percent if self.is_tty else percent // 25
        if step == self._last_step:
            return
        self._last_step = step
        amount = f"{done / 1e6:.1f}/{total / 1e6:.1f} MB" if self.unit == "bytes" else f"{done}/{total} {self.unit}"
        end = "\r" if self.is_tty and done < total else "\n"
        self.stream.write(f"{self.label}: {percent:3d}% ({amount}){end}")
        self.stream.flush()
