"""The overview's chart of signatures per day, as geometry for an inline SVG (no script, no styles).

Pure: plain values in, plain values out.
"""

from dataclasses import dataclass
from datetime import date, timedelta

WIDTH, HEIGHT = 620, 160  # the SVG's viewBox; it scales to the page width
BAR_AREA_TOP, BAR_AREA_BOTTOM = 10, 140


@dataclass(frozen=True)
class Bar:
    day: date
    count: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class DailyChart:
    bars: list[Bar]
    peak: int
    total: int
    width: int = WIDTH
    height: int = HEIGHT
    baseline: int = BAR_AREA_BOTTOM


def daily_chart(counts: dict[date, int], first: date, last: date) -> DailyChart:
    """One bar per day from `first` to `last` inclusive, scaled to the busiest day."""
    days = [first + timedelta(days=offset) for offset in range((last - first).days + 1)]
    peak = max((counts.get(day, 0) for day in days), default=0)
    slot = WIDTH / max(len(days), 1)
    usable = BAR_AREA_BOTTOM - BAR_AREA_TOP
    bars = []
    for index, day in enumerate(days):
        count = counts.get(day, 0)
        height = usable * count / peak if peak else 0
        bars.append(Bar(day=day, count=count, x=round(index * slot + slot * 0.15, 2), width=round(slot * 0.7, 2),
                        y=round(BAR_AREA_BOTTOM - height, 2), height=round(height, 2)))
    return DailyChart(bars=bars, peak=peak, total=sum(bar.count for bar in bars))
