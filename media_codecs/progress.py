"""How far a long piece of codec work is: a plain callable that receives the fraction done, from 0 to 1.

Every codec method that can take seconds (a video's fingerprints, an audio or image watermark, a C2PA embed)
takes an optional `progress`. The work reports through `steps(progress)`, which forwards only a fraction at
least STEP above the last one forwarded (and the end, 1.0): never backwards, at most 1 / STEP + 1 calls
whatever the work's size, so a caller may store each call. Without a callback `steps` gives a function that
does nothing: the synchronous routes pay a call per frame or block of audio, nothing measurable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

Progress = Callable[[float], None]
T = TypeVar("T")

STEP = 0.01  # the smallest move forwarded: one percent


def _ignore(fraction: float) -> None:
    return None


class _Steps:
    __slots__ = ("_last", "_progress")

    def __init__(self, progress: Progress):
        self._progress = progress
        self._last = 0.0

    def __call__(self, fraction: float) -> None:
        fraction = min(max(fraction, 0.0), 1.0)
        if fraction >= self._last + STEP or (fraction == 1.0 and self._last < 1.0):
            self._last = fraction
            self._progress(fraction)


def steps(progress: Progress | None) -> Progress:
    """`progress` called only when the fraction moved up by STEP or reached 1; a no-op without one."""
    if progress is None:
        return _ignore
    return progress if isinstance(progress, _Steps) else _Steps(progress)


def part(progress: Progress | None, start: float, end: float) -> Progress | None:
    """A callback for a part of the work that spans `start` to `end` of the whole; None stays None."""
    if progress is None or progress is _ignore:
        return None
    return lambda fraction: progress(start + (end - start) * min(max(fraction, 0.0), 1.0))


def parts(progress: Progress | None, weights: Sequence[float]) -> list[Progress | None]:
    """One callback per consecutive part of the work, each spanning its weight's share of the whole."""
    total, done, spans = float(sum(weights)), 0.0, []
    for weight in weights:
        spans.append(part(progress, done / total, (done + weight) / total))
        done += weight
    return spans


def finish(progress: Progress | None) -> None:
    """Report the end of a part whose work may not say it (a codec that reports nothing)."""
    if progress is not None:
        progress(1.0)


def counted(items: Iterable[T], total: int, progress: Progress | None) -> Iterator[T]:
    """`items` as they come, reporting how many of `total` were taken (1.0 once they are all taken)."""
    if progress is None:
        yield from items
        return
    report = steps(progress)
    for taken, item in enumerate(items, start=1):
        yield item
        report(taken / max(total, 1))
    report(1.0)
