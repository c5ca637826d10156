"""Every sentence a capacity plan writes: the numbers in its prose, and one config's row of the
plan's table."""

from __future__ import annotations

from analysis import capacity_words as words
from analysis.capacity_types import Demand
from tests.analysis.test_capacity_plan import BATCH, P95_TTFT_2S, PRICE, SWEEP, level, plan


def test_a_rate_below_ten_keeps_two_decimals_and_a_larger_one_reads_as_a_number():
    assert [words.rate_text(r) for r in (0.45, 8.0, 13.333, 46_000)] == [
        "0.45", "8.00", "13.3", "46,000"]


def test_a_figure_of_zero_is_a_figure_and_one_not_recorded_is_said_so():
    found = {"p95_ttft_ms": 1480.0, "median_e2el_ms": None, "p99_tpot_ms": 0.0}
    assert words.values_text(found) == (
        "p95_ttft_ms 1,480 ms, median_e2el_ms not recorded, p99_tpot_ms 0.0 ms")


def test_a_config_without_a_plan_reads_no_plan_and_has_no_hours_or_cost():
    points = [level(4, 2.0, 300.0, valid=False, run_valid=False), *SWEEP[3:]]
    small = plan(points, slos=P95_TTFT_2S, price=PRICE).configs[0]
    row = words.cells(small, PRICE, "rate")
    assert (str(row.capacity), str(row.gpus), row.hours, row.cost) == (
        "no plan", "no plan", None, None)


def test_a_capacity_with_an_interval_shows_its_range_and_the_gpus_theirs_where_they_differ():
    points = [*SWEEP, level(64, 16.0, 1700.0, repeat=1, throughput=3800.0)]
    large = plan(points, slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=50.0)).configs[1]
    row = words.cells(large, None, "rate")
    assert (str(row.capacity), str(row.gpus), row.cost) == (
        "16.0 requests/s (14.9-17.2)", "4 (3-4)", None)
    # At 40 requests/s both ends of the interval need 3 GPUs: no range to show.
    same = plan(points, slos=P95_TTFT_2S).configs[1]
    assert (same.gpus_low, same.gpus_high) == (3, 3)
    assert str(words.cells(same, None, "rate").gpus) == "3"


def test_traffic_is_costed_per_month_and_a_batch_job_for_the_job():
    large = words.cells(plan(slos=P95_TTFT_2S, price=PRICE).configs[1], PRICE, "rate")
    assert (str(large.capacity), str(large.gpus), large.hours, str(large.cost)) == (
        "16.0 requests/s", "3", None, "5,475.00 USD per month")
    job = plan(BATCH, demand=Demand(kind="batch", requests=1_000_000, hours=10.0), price=PRICE)
    row = words.cells(job.configs[0], PRICE, "batch")
    assert (str(row.hours), str(row.cost)) == ("8.7 hours", "43.40 USD for the job")
