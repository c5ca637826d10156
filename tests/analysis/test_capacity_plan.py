"""Capacity plans computed by hand: replicas rounded up, interpolation between two measured
levels, tensor parallel, a node run's efficiency, a batch deadline, the price with its date,
every "not measured" path and the guard when the workloads differ."""

from __future__ import annotations

import math
import statistics
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pydantic import TypeAdapter

from analysis import capacity_words as words
from analysis import repeats
from analysis.capacity_plan import level_scatter, plan_capacity
from analysis.capacity_types import CapacityPlan, Demand, PlanInputs, trace_demand
from analysis.convert import workload_shape
from analysis.cost import GpuHourPrice
from analysis.errors import AnalysisError
from analysis.hardware import hardware_use
from analysis.types import PointFigures
from runner.schema.plan import WorkloadSpec
from runner.workloads.traces import TraceRate
from tests.analysis.helpers import CASE_STUDY_SPEC

TODAY = date(2026, 2, 1)
PRICE = GpuHourPrice(amount=Decimal("2.50"), currency="USD", as_of=date(2026, 1, 5))
P95_TTFT_2S = {"p95_ttft_ms": 2000.0}
TRACE = "traces/customer.jsonl"


def level(seqs: int, rate: float, p95_ttft_ms: float, *, repeat: int = 0,
          throughput: float | None = None, median_e2el_ms: float = 2000.0,
          **fields: Any) -> PointFigures:
    """One rate level of 100 requests: 256 output tokens each, so rate x 256 tok/s."""
    fields.setdefault("workload", CASE_STUDY_SPEC)
    fields.setdefault("config_label", f"seqs={seqs}")
    return PointFigures(
        key=f"{fields['config_label']}|rate {rate}/s x 100|r{repeat}",
        max_num_seqs=seqs, offered_concurrency=100.0, load_label=f"rate {rate}/s x 100",
        offered_rate=rate, request_throughput=rate * 0.95,
        output_throughput=throughput if throughput is not None else rate * 256,
        p95_ttft_ms=p95_ttft_ms, median_e2el_ms=median_e2el_ms, repeat=repeat, **fields)


# max_num_seqs 4 meets p95 TTFT <= 2 s at 2 and 4 requests/s and misses at 8; max_num_seqs
# 64 meets it at every level it measured (4, 8 and 16 requests/s).
SWEEP = [
    level(4, 2.0, 300.0), level(4, 4.0, 1500.0), level(4, 8.0, 5000.0),
    level(64, 4.0, 200.0), level(64, 8.0, 600.0), level(64, 16.0, 1800.0),
]


def plan(points: list[PointFigures] = SWEEP, today: date = TODAY, **inputs: Any) -> CapacityPlan:
    inputs.setdefault("demand", Demand(kind="rate", rate=40.0))
    return plan_capacity(points, PlanInputs(**inputs), today=today)


def texts(config: Any) -> list[str]:
    return [str(s) for s in config.sentences]


def test_replicas_are_the_demand_over_one_replicas_capacity_rounded_up():
    found = plan(slos=P95_TTFT_2S)
    small, large = found.configs
    # 40 / 4 is exactly 10 replicas (never 11 for a float's last digit); 40 / 16 = 2.5 -> 3.
    assert (small.capacity.rate, small.replicas, small.gpus) == (4.0, 10, 10)
    assert (large.capacity.rate, large.replicas, large.gpus) == (16.0, 3, 3)
    assert str(found.headline) == "At max_num_seqs 4 this traffic needs 10 GPUs; at 64, 3."
    assert found.met and found.best is large


def test_a_margin_sizes_the_fleet_for_the_demand_with_headroom_on_top():
    small, large = plan(slos=P95_TTFT_2S, margin_pct=20.0).configs
    # 40 x 1.2 = 48 requests/s: 48 / 4 = 12 replicas; 48 / 16 = 3 exactly, each at 16.
    assert (small.replicas, large.replicas, large.share) == (12, 3, 16.0)
    assert large.position == "at"
    # 3 x 1.1 / 0.3 is 11.000000000000002 in floating point: still 11 replicas, not 12.
    slow = [level(64, 0.3, 500.0)]
    assert plan(slow, slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=3.0),
                margin_pct=10.0).configs[0].replicas == 11


def test_the_capacity_is_the_lowest_repeat_of_its_level():
    # A burst names no rate: its rate is what completed over the window, 10 and 9 requests/s.
    def burst(repeat: int, requests_per_s: float) -> PointFigures:
        return PointFigures(key=f"b|r{repeat}", config_label="seqs=64", max_num_seqs=64,
                            offered_concurrency=100.0, load_label="burst 100",
                            request_throughput=requests_per_s,
                            output_throughput=requests_per_s * 256, p95_ttft_ms=900.0,
                            repeat=repeat, workload=CASE_STUDY_SPEC)

    only = plan([burst(0, 10.0), burst(1, 9.0)], slos=P95_TTFT_2S).configs[0]
    assert (only.capacity.rate, only.capacity.draws, only.replicas) == (9.0, 2, 5)


def test_a_share_between_two_measured_levels_is_interpolated_and_says_between_which():
    large = plan(slos=P95_TTFT_2S).configs[1]
    # 40 / 3 = 13.33 requests/s per replica, between 8 (600 ms) and 16 (1,800 ms):
    # 600 + (1,800 - 600) x (13.33 - 8) / 8 = 1,400 ms.
    assert large.position == "between"
    assert large.expected["p95_ttft_ms"] == pytest.approx(1400.0)
    assert ("Each replica's 13.3 requests/s lies between two measured levels, 8.00 and 16.0 "
            "requests/s (rate 8.0/s x 100 and rate 16.0/s x 100); interpolated linearly: "
            "p95_ttft_ms 1,400 ms.") in texts(large)


def test_the_capacity_names_the_faster_level_that_missed():
    small = plan(slos=P95_TTFT_2S).configs[0]
    assert small.next_level.rate == 8.0 and not small.at_top
    assert ("The next level measured, 8.00 requests/s (rate 8.0/s x 100), reached p95_ttft_ms "
            "5,000 ms: the capacity lies between the two levels, and the plan counts the "
            "lower.") in texts(small)


def test_a_capacity_at_the_highest_level_measured_is_not_scaled_beyond_it():
    large = plan(slos=P95_TTFT_2S).configs[1]
    assert large.at_top and large.next_level is None
    assert ("Not measured above 16.0 requests/s: the plan counts no more, though one replica "
            "may sustain more.") in texts(large)


def drawn(rate: float, *p95_ttft_ms: float) -> list[PointFigures]:
    """Draws of one max_num_seqs 4 level; the first has the lowest throughput, so it is the
    level's lowest repeat."""
    return [level(4, rate, value, repeat=r, throughput=rate * 256 + r)
            for r, value in enumerate(p95_ttft_ms)]


def test_a_level_inside_its_limit_by_less_than_its_scatter_is_not_the_capacity():
    points = [*drawn(2.0, 300.0, 310.0), *drawn(4.0, 1700.0, 2000.0), *drawn(8.0, 5000.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    # At 4 requests/s the draws read 1,700 and 2,000 ms: sd = ln(2000 / 1700) / sqrt 2 = 0.115,
    # and 1,700 x exp(1.96 x 0.115) = 2,130 ms is past 2 s. At 2, the typical level within the
    # limit: the median of both levels' sds, each over its median ratio at 1 degree (0.6745),
    # (0.023 + 0.115) / 2 / 0.6745 = 0.102, raises 300 ms to 366 ms.
    # 40 / 2 is 20 replicas, but the draws' throughputs differ by 1 tok/s, so the capacity's
    # interval puts its low end just below 2 requests/s: 21.
    assert (only.capacity.rate, only.next_level.rate, only.replicas) == (2.0, 4.0, 21)
    pair_sds = [math.log(310 / 300) / math.sqrt(2), math.log(2000 / 1700) / math.sqrt(2)]
    typical = (pair_sds[0] + pair_sds[1]) / 2 / 0.674490
    assert only.scatter_pct == {
        "p95_ttft_ms": pytest.approx(math.expm1(1.96 * typical) * 100, rel=1e-5)}
    assert texts(only)[1] == (
        "A level counts only when each figure, raised by one draw's scatter, stays within its "
        "limit: near capacity a percentile turns on a few requests. At rate 2.0/s x 100 one "
        "draw scatters by p95_ttft_ms +/-22.2% (95%, the wider of the level's own draws and "
        "the typical level within the limit).")
    assert texts(only)[2] == (
        "The next level measured, 4.00 requests/s (rate 4.0/s x 100), reached p95_ttft_ms "
        "1,700 ms, inside the limits by less than one draw's scatter (p95_ttft_ms +/-25.3%): "
        "the capacity lies between the two levels, and the plan counts the lower.")


def test_the_typical_scatter_counts_where_a_levels_own_draws_agree():
    # 4 requests/s read 1,800 ms twice; 2 requests/s scattered 300 to 390 ms. The median of
    # ln(1.3) / sqrt 2 / 0.6745 = 0.275 and 0, 0.137, raises 1,800 ms to 2,356 ms: past 2 s.
    points = [*drawn(2.0, 300.0, 390.0), *drawn(4.0, 1800.0, 1800.0), *drawn(8.0, 5000.0)]
    assert plan(points, slos=P95_TTFT_2S).configs[0].capacity.rate == 2.0
    # Without the spread at 2 requests/s, 4 is the capacity: the rule reads the draws.
    steady = [*drawn(2.0, 300.0, 300.0), *drawn(4.0, 1800.0, 1800.0), *drawn(8.0, 5000.0)]
    assert plan(steady, slos=P95_TTFT_2S).configs[0].capacity.rate == 4.0


def test_one_wide_pair_does_not_widen_the_scatter_of_every_level():
    # 3 requests/s read 400 and 900 ms. Pooled with the other levels' near-equal pairs it gives
    # sd 0.33, which raises 1,500 ms at 4 requests/s to 2,870 ms; the median of the levels'
    # scaled sds (0, 0.014, 0.017, 0.85) is 0.016, which raises it to 1,546 ms.
    points = [*drawn(1.0, 200.0, 200.0), *drawn(2.0, 300.0, 305.0), *drawn(3.0, 400.0, 900.0),
              *drawn(4.0, 1500.0, 1520.0), *drawn(8.0, 5000.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert only.capacity.rate == 4.0
    # Its own pair still counts at the level itself: 400 ms raised by its own +/-207% is 1,230 ms.
    assert level_scatter_pct(points, 3.0) == pytest.approx(
        math.expm1(1.96 * math.log(900 / 400) / math.sqrt(2)) * 100)


def test_a_level_of_three_draws_is_scaled_by_its_own_degrees():
    # Three draws give 2 degrees of freedom: the sd's median ratio is sqrt(1.386 / 2) = 0.8326.
    points = [*drawn(2.0, 300.0, 330.0, 360.0), *drawn(4.0, 1500.0), *drawn(8.0, 5000.0)]
    sd = statistics.stdev(math.log(v) for v in (300.0, 330.0, 360.0))
    assert level_scatter_pct(points, 4.0) == pytest.approx(
        math.expm1(1.96 * sd / 0.832555) * 100, rel=1e-5)


def test_no_level_above_one_where_a_draw_missed_is_the_capacity():
    # 4 requests/s read 1,500 and 2,400 ms: a draw missed 2 s. 6 requests/s read 1,200 and
    # 1,250 ms, inside 2 s by far more than its scatter, but a latency grows with the load: its
    # draws read low, and the plan counts nothing above a level where a draw missed.
    points = [*drawn(2.0, 300.0, 300.0), *drawn(4.0, 1500.0, 2400.0),
              *drawn(6.0, 1200.0, 1250.0), *drawn(8.0, 5000.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert (only.capacity.rate, only.next_level.rate) == (2.0, 4.0)
    assert texts(only)[2].startswith("The next level measured, 4.00 requests/s")
    assert texts(only)[3] == (
        "A faster level, 6.00 requests/s (rate 6.0/s x 100), met the limits by more than one "
        "draw's scatter (it reached p95_ttft_ms 1,200 ms), but the plan counts no level above "
        "one where a draw missed them: a latency grows with the load, so that level's draws "
        "read low.")
    # With every draw at 4 requests/s inside 2 s, though by less than its scatter (1,500 and
    # 1,990 ms), a level's noise is not a miss: the plan counts up to 6.
    noisy = [*drawn(2.0, 300.0, 300.0), *drawn(4.0, 1500.0, 1990.0),
             *drawn(6.0, 1200.0, 1250.0), *drawn(8.0, 5000.0)]
    found = plan(noisy, slos=P95_TTFT_2S).configs[0]
    assert found.capacity.rate == 6.0 and not any("A faster level" in t for t in texts(found))


def test_with_a_draw_missing_below_every_counted_level_there_is_no_plan():
    # 2 requests/s read 1,000 and 2,100 ms, a draw past 2 s; 3 and 4 requests/s agree within
    # 1% and meet 2 s by their scatter, above a level where a draw missed.
    points = [*drawn(2.0, 1000.0, 2100.0), *drawn(3.0, 1100.0, 1105.0),
              *drawn(4.0, 1200.0, 1210.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert (only.status, only.gpus) == ("slo_unmet", None)
    assert texts(only) == [
        "No level below 2.00 requests/s (rate 2.0/s x 100) met p95_ttft_ms <= 2,000 ms by more "
        "than one draw's scatter, and a draw there missed them (it reached p95_ttft_ms 2,100 "
        "ms): the plan counts no level above one where a draw missed, since a latency grows "
        "with the load. This config gets no plan; more draws of its levels would say whether "
        "it holds."]


def level_scatter_pct(points: list[PointFigures], rate: float) -> float:
    """One draw's 95% band of p95 TTFT at the level of that rate, as the plan allows it."""
    levels = repeats.lowest_repeats(points)
    found = level_scatter(levels, points, P95_TTFT_2S)
    key = next(p.key for p in levels if p.offered_rate == rate)
    return math.expm1(1.96 * found[key]["p95_ttft_ms"]) * 100


def test_levels_past_the_limit_do_not_widen_the_scatter():
    # 8 requests/s scattered 5 to 9 s, past the limit: pooled in, it would raise 1,500 ms past
    # 2 s and take 4 requests/s from the plan.
    points = [*drawn(2.0, 300.0, 300.0), *drawn(4.0, 1500.0, 1500.0),
              *drawn(8.0, 5000.0, 9000.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert only.capacity.rate == 4.0
    assert only.next_level.rate == 8.0 and "reached p95_ttft_ms 5,000 ms:" in texts(only)[2]


def test_with_every_level_inside_its_limit_by_less_than_its_scatter_there_is_no_plan():
    points = [*drawn(2.0, 1700.0, 2000.0), *drawn(4.0, 1900.0, 1950.0)]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert (only.status, only.gpus) == ("slo_unmet", None)
    assert texts(only)[0].startswith(
        "No measured level met p95_ttft_ms <= 2,000 ms by more than one draw's scatter: the "
        "fastest within them, 4.00 requests/s (rate 4.0/s x 100), reached p95_ttft_ms 1,900 ms")


def test_with_one_draw_a_level_the_plan_says_no_scatter_was_measured():
    small = plan(slos=P95_TTFT_2S).configs[0]
    assert small.capacity.rate == 4.0 and small.scatter_pct == {}
    assert str(words.SCATTER_UNMEASURED) in texts(small)


def test_a_target_met_at_no_measured_level_gets_no_plan_and_says_how_far_off():
    found = plan(slos={"p95_ttft_ms": 100.0})
    assert not found.met and found.best is None
    assert [c.status for c in found.configs] == ["slo_unmet", "slo_unmet"]
    assert [c.gpus for c in found.configs] == [None, None]
    assert texts(found.configs[0]) == [
        "No measured level met p95_ttft_ms <= 100 ms: the lowest, 2.00 requests/s (rate 2.0/s "
        "x 100), reached p95_ttft_ms 300 ms. Not measured below 2.00 requests/s, so this config "
        "gets no plan."]
    assert str(found.headline) == words.HEADLINE_NOTHING_MET


def test_one_config_without_a_plan_is_named_in_the_headline():
    found = plan(slos={"p95_ttft_ms": 250.0})
    assert str(found.headline) == ("At max_num_seqs 4 there is no plan within what was "
                                   "measured; at 64, 10.")


def test_a_share_below_the_lowest_measured_level_is_said_not_measured():
    large = plan(slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=3.0)).configs[1]
    assert (large.replicas, large.position) == (1, "below")
    assert ("Each replica's 3.00 requests/s is below the lowest measured level, 4.00 "
            "requests/s (rate 4.0/s x 100), and was not measured; that level reached "
            "p95_ttft_ms 200 ms.") in texts(large)


def test_a_config_without_a_valid_level_gets_no_plan():
    points = [level(4, 2.0, 300.0, valid=False, run_valid=False), *SWEEP[3:]]
    small = plan(points, slos=P95_TTFT_2S).configs[0]
    assert small.status == "no_levels" and small.gpus is None


def test_tensor_parallel_counts_every_gpu_of_a_replica():
    points = [level(64, rate, ttft, gpu_count=2) for rate, ttft in
              ((4.0, 200.0), (8.0, 600.0), (16.0, 1800.0))]
    only = plan(points, slos=P95_TTFT_2S).configs[0]
    assert (only.replicas, only.gpus_per_replica, only.gpus) == (3, 2, 6)


def _node(efficiency: float) -> PointFigures:
    return level(64, 16.0, 1800.0, replicas=4, gpu_count=4,
                 throughput=efficiency * 4 * 16.0 * 256)


def test_a_node_runs_efficiency_is_applied_to_the_replicas():
    large = plan([*SWEEP, _node(0.8)], slos=P95_TTFT_2S).configs[1]
    # 40 / (16 x 0.8) = 3.125 -> 4 replicas, where linear scaling would say 3.
    assert (large.efficiency, large.replicas) == (pytest.approx(0.8), 4)
    assert ("The node run's scaling efficiency, 80.0% over 4 replicas at rate 16.0/s x 100, is "
            "applied to the replicas.") in texts(large)
    # The node run is not a level of one replica: the capacity stays the single replica's.
    assert large.capacity.rate == 16.0


def test_without_a_node_run_linear_scaling_is_said_as_an_assumption():
    large = plan(slos=P95_TTFT_2S).configs[1]
    assert large.efficiency is None
    assert str(words.SCALING_ASSUMED) in texts(large)


def test_an_efficiency_above_one_is_never_applied_as_more_than_linear():
    large = plan([*SWEEP, _node(1.2)], slos=P95_TTFT_2S).configs[1]
    assert large.replicas == 3
    assert any("above 100%: the plan takes 100%" in t for t in texts(large))


# A batch job sized at the throughput operating point: no knee in 4 -> 8 -> 16 (output doubles
# at each step), so the highest throughput measured, 16 requests/s at 2.5 s median latency.
BATCH = [level(64, rate, 200.0, median_e2el_ms=e2el)
         for rate, e2el in ((4.0, 2000.0), (8.0, 2200.0), (16.0, 2500.0))]


def test_a_batch_job_is_done_by_its_deadline_with_the_queue_littles_law_needs():
    found = plan(BATCH, demand=Demand(kind="batch", requests=1_000_000, hours=10.0), price=PRICE)
    only = found.configs[0]
    # 1,000,000 / 36,000 s = 27.8 requests/s -> ceil(27.8 / 16) = 2 replicas, which finish in
    # 1,000,000 / (2 x 16) / 3,600 = 8.68 hours; each keeps 16 x 2.5 s = 40 in the system.
    assert only.replicas == 2
    assert only.hours == pytest.approx(1_000_000 / 32 / 3600)
    assert only.in_system == pytest.approx(40.0)
    assert str(found.headline) == "At max_num_seqs 64 this job is done in 8.7 hours on 2 GPUs."
    assert ("To stay saturated each replica needs about 40.0 requests in the system (Little's "
            "law: 16.0 requests/s x 2.5 s median latency): a queue of at least 80 across the "
            "fleet.") in texts(only)
    # The job's cost: 2 GPUs x 8.6806 hours x 2.50 USD = 43.40 USD, with the price's date.
    assert only.cost == Decimal("2.50") * 2 * Decimal("8.6806")
    assert ("About 43.40 USD for the job: 2 GPUs x 8.7 hours x 2.50 USD per GPU-hour as of "
            "2026-01-05.") in texts(only)


def test_interactive_traffic_is_priced_per_month_with_the_prices_date():
    large = plan(slos=P95_TTFT_2S, price=PRICE).configs[1]
    # 3 GPUs x 2.50 USD x 730 hours.
    assert large.cost == Decimal("5475.00")
    assert ("About 5,475.00 USD per month: 3 GPUs x 2.50 USD per GPU-hour as of 2026-01-05 x "
            "730 hours.") in texts(large)


def test_an_old_price_is_said_beside_the_cost():
    large = plan(slos=P95_TTFT_2S, price=PRICE, today=date(2026, 9, 1)).configs[1]
    assert any("239 days old" in t for t in texts(large))


def test_without_a_price_or_on_a_cpu_engine_there_is_no_money_figure():
    assert str(words.NO_COST_PRICE) in texts(plan(slos=P95_TTFT_2S).configs[1])
    cpu = hardware_use(gpu_name=None, precision=None, cpu_engine=True, bytes_per_s=None,
                       flops_per_s=None)
    points = [level(64, 16.0, 1800.0, hardware=cpu)]
    only = plan(points, slos=P95_TTFT_2S, price=PRICE).configs[0]
    assert only.cost is None and str(words.NO_COST_CPU) in texts(only)
    assert "3 CPU engines in all" in texts(only)[2]


def test_a_demand_of_another_workload_gets_the_guards_words_and_no_figure():
    demand = trace_demand(TraceRate(name=TRACE, window_s=60.0, windows=10, statistic="p95",
                                    rate=12.0, mean_rate=4.0), TRACE)
    found = plan(slos=P95_TTFT_2S, demand=demand)
    assert [c.status for c in found.configs] == ["spec_differs", "spec_differs"]
    assert texts(found.configs[0]) == [
        f"No plan across different specs: the demand trace {TRACE}, this config measured 63-66 "
        "in / 256 out."]
    assert not found.met


def test_a_trace_demand_on_a_run_of_that_trace_is_sized_at_its_statistic():
    replayed = workload_shape(WorkloadSpec(kind="trace", dataset_path=TRACE))
    points = [level(64, r, t, workload=replayed) for r, t in ((4.0, 200.0), (16.0, 1800.0))]
    demand = trace_demand(TraceRate(name=TRACE, window_s=60.0, windows=10, statistic="p95",
                                    rate=12.0, mean_rate=4.0), TRACE)
    found = plan(points, slos=P95_TTFT_2S, demand=demand)
    assert found.configs[0].replicas == 1
    assert str(found.notes[0]) == (
        f"Demand: the trace {TRACE} at its p95 60.0 s window, 12.0 requests/s (4.00 requests/s "
        "on average over 10 windows).")


def test_the_capacity_carries_the_runs_noise_as_an_interval_and_the_gpus_a_range():
    points = [*SWEEP, level(64, 16.0, 1700.0, repeat=1, throughput=3800.0)]
    large = plan(points, slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=50.0)).configs[1]
    # One repeated level: sd = |ln(4096 / 3800)| / sqrt 2; two draws: 16 x exp(+/-1.96 sd / sqrt 2).
    sd = abs(math.log(4096 / 3800)) / math.sqrt(2)
    half = 1.96 * sd / math.sqrt(2)
    assert large.capacity_low == pytest.approx(16 * math.exp(-half))
    assert large.capacity_high == pytest.approx(16 * math.exp(half))
    # 50 / 16 = 3.1 -> 4; at 17.2 requests/s 3, at 14.9 still 4.
    assert (large.gpus, large.gpus_low, large.gpus_high) == (4, 3, 4)
    assert texts(large)[0].startswith(
        "One replica sustains 16.0 requests/s (95% interval 14.9-17.2, from 2 draw(s)) within")


def test_replicas_are_counted_at_the_low_end_of_the_capacitys_interval():
    points = [*SWEEP, level(64, 16.0, 1700.0, repeat=1, throughput=3800.0)]
    large = plan(points, slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=48.0)).configs[1]
    low = large.capacity_low
    # 48 / 16 is 3 replicas at the capacity; at its low end, 48 / 14.87 = 3.2 -> 4, each
    # taking 12.0 requests/s.
    assert low == pytest.approx(14.87, abs=0.01)
    assert large.promised_rate == low
    assert (large.replicas, large.gpus, large.gpus_low, large.gpus_high) == (4, 4, 3, 4)
    assert large.share == pytest.approx(12.0)
    assert ("Each replica is counted at 14.9 requests/s, the low end of the capacity's 95% "
            "interval, so that a draw slower than the ones measured still keeps the "
            "targets.") in texts(large)
    # A batch job of 48 requests/s is timed at the same rate: 172,800 / (4 x 14.87/s) = 0.81 h.
    job = plan(points, slos=P95_TTFT_2S,
               demand=Demand(kind="batch", requests=172_800, hours=1.0)).configs[1]
    assert job.replicas == 4
    assert job.hours == pytest.approx(172_800 / (4 * low) / 3600)


def test_without_the_runs_noise_a_replica_is_counted_at_the_capacity():
    large = plan(slos=P95_TTFT_2S, demand=Demand(kind="rate", rate=48.0)).configs[1]
    assert (large.capacity_low, large.promised_rate, large.replicas) == (None, 16.0, 3)
    assert not any(t.startswith("Each replica is counted at") for t in texts(large))


def test_with_nothing_measuring_the_noise_the_plan_says_so():
    assert str(words.NO_INTERVAL) in [str(n) for n in plan(slos=P95_TTFT_2S).notes]


def test_without_targets_interactive_traffic_is_sized_at_the_operating_point_and_said_so():
    found = plan(BATCH)
    assert found.configs[0].capacity.rate == 16.0
    assert str(words.NO_SLO_INTERACTIVE) in [str(n) for n in found.notes]


def test_an_itl_target_is_read_from_the_points_itl():
    points = [level(64, 4.0, 200.0, p95_itl_ms=20.0), level(64, 8.0, 300.0, p95_itl_ms=80.0)]
    only = plan(points, slos={"p95_itl_ms": 50.0}).configs[0]
    assert only.capacity.rate == 4.0


def test_a_demand_or_margin_that_means_nothing_is_refused():
    with pytest.raises(AnalysisError, match="requests/s at peak"):
        Demand(kind="rate", rate=0.0)
    with pytest.raises(AnalysisError, match="deadline"):
        Demand(kind="batch", requests=10, hours=0.0)
    with pytest.raises(AnalysisError, match="margin"):
        PlanInputs(demand=Demand(kind="rate", rate=1.0), margin_pct=-5.0)
    with pytest.raises(AnalysisError, match="unknown latency metric"):
        PlanInputs(demand=Demand(kind="rate", rate=1.0), slos={"p95_queue_ms": 5.0})


def test_a_plan_reads_back_from_its_json_unchanged():
    found = plan(slos=P95_TTFT_2S, price=PRICE)
    adapter = TypeAdapter(CapacityPlan)
    assert adapter.validate_json(adapter.dump_json(found)) == found


def test_configs_that_differ_in_extra_flags_are_named_by_the_flags_never_their_values():
    flags = (("extra engine flags", "--chat-template /srv/private.jinja --enforce-eager"),)
    points = [level(64, 4.0, 200.0), level(64, 4.0, 200.0, other_settings=flags,
                                                config_label="seqs=64,flags")]
    names = [c.name for c in plan(points, slos=P95_TTFT_2S).configs]
    assert names == ["extra engine flags the engine default",
                     "extra engine flags --chat-template (set) --enforce-eager"]
