"""The signatures-per-day chart: its geometry (pure) and the per-day counts it is drawn from."""

from datetime import UTC, date, datetime, timedelta

import pytest

from dashboard.charts import BAR_AREA_BOTTOM, BAR_AREA_TOP, daily_chart
from provenance.models import Record
from provenance.selectors import signatures_per_day
from tests import factories


def test_one_bar_a_day_scaled_to_the_busiest_day():
    chart = daily_chart({date(2026, 3, 2): 4, date(2026, 3, 3): 8}, date(2026, 3, 1), date(2026, 3, 4))
    assert [bar.count for bar in chart.bars] == [0, 4, 8, 0]
    assert (chart.peak, chart.total) == (8, 12)
    tallest = chart.bars[2]
    assert tallest.height == BAR_AREA_BOTTOM - BAR_AREA_TOP and tallest.y == BAR_AREA_TOP
    assert chart.bars[1].height == tallest.height / 2 and chart.bars[0].height == 0


def test_a_month_without_signatures_draws_empty_bars():
    chart = daily_chart({}, date(2026, 3, 1), date(2026, 3, 1))
    assert [(bar.count, bar.height) for bar in chart.bars] == [(0, 0)]


@pytest.mark.django_db
def test_signatures_are_counted_per_utc_day_for_one_organization(org, other_org):
    generator, _ = factories.make_client_generator(org=org)
    theirs, _ = factories.make_client_generator(org=other_org)
    day = datetime(2026, 3, 10, tzinfo=UTC)
    times = [day + timedelta(minutes=1), day + timedelta(hours=23, minutes=59), day + timedelta(days=1, seconds=1),
             day - timedelta(seconds=1)]  # the last is before `since`
    Record.objects.bulk_create([
        Record(org=g.org, generator=g, key=g.keys.get(), model="m", watermark_id=f"w{n}",
               content_hash="sha3-256:" + "0" * 64, signature=b"x", signed_at=at)
        for n, (g, at) in enumerate([(generator, t) for t in times] + [(theirs, day)])])
    assert signatures_per_day(org=org, since=day) == {date(2026, 3, 10): 2, date(2026, 3, 11): 1}
