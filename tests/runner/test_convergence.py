"""Repeats where they decide the answer (runner.convergence): which levels decide, when the
rounds stop on replayed draws of known spread, and the sweep's rounds against a local server."""

from __future__ import annotations

import math

import pytest

from runner import convergence
from runner.cli.parser import main
from runner.results import read_points
from runner.schema.plan import LoadSpec
from runner.schema.result import HostCpu
from tests.factories import metrics_at, point_result
from tests.runner.test_sweep_attach import attach_plan, write_plan


def draws(*throughputs: float, latency_ms: float = 1000.0, **fields) -> list:
    return [point_result(metrics=metrics_at(t, median_e2el_ms=latency_ms), **fields)
            for t in throughputs]


# Lowest draw per level: 1000 -> 2000 (+100%), 2000 -> 2010 (+0.5%) for latency 2 -> 4 s: the
# knee is the step from level 1, so levels 0, 1 and 2 decide and level 3 does not.
LADDER = [draws(1000.0, latency_ms=1000), draws(2000.0, latency_ms=2000),
          draws(2010.0, latency_ms=4000), draws(2015.0, latency_ms=8000)]


def test_the_knees_operating_level_and_its_neighbours_decide():
    assert convergence.deciding_levels(LADDER) == [0, 1, 2]


def test_without_a_knee_the_best_level_and_its_neighbour_below_decide():
    rising = [draws(1000.0 * (i + 1), latency_ms=1000 * (i + 1)) for i in range(4)]
    assert convergence.deciding_levels(rising) == [2, 3]


def test_a_disturbed_or_invalid_draw_does_not_decide():
    noisy = [*LADDER[:1], draws(900.0, latency_ms=2000, host=HostCpu(
        window_s=10, cpus=2, busy_s=20, own_s=1, engine_s=10)), *LADDER[2:]]
    # Level 1 has no judged draw, so the walk is over levels 0, 2, 3: 1000 -> 2010 (+101%),
    # then 2010 -> 2015 for twice the latency, the knee: level 2 and its walked neighbours.
    assert convergence.deciding_levels(noisy) == [0, 2, 3]


def test_the_rounds_go_on_while_the_interval_is_wider_than_the_tolerance():
    # Each deciding level drawn twice, 10% apart: pooled sd ln(1.1) / sqrt 2, over sqrt 2 draws.
    ladder = [draws(1000.0, 1100.0, latency_ms=1000), draws(2000.0, 2200.0, latency_ms=2000),
              draws(2010.0, 2211.0, latency_ms=4000), LADDER[3]]
    half = math.expm1(1.96 * math.log(1.1) / math.sqrt(2) / math.sqrt(2)) * 100
    assert convergence.half_width_pct([[1000.0, 1100.0]]) == pytest.approx(half)
    found = convergence.next_round(ladder, converge_pct=half - 0.01, max_repeats=5)
    assert found is not None and found.levels == [0, 1, 2]
    assert found.reason == (f"the deciding levels' interval is ±{half:.1f}%, wider than the "
                            f"plan's ±{half - 0.01:g}%")
    assert convergence.next_round(ladder, converge_pct=half, max_repeats=5) is None


def test_the_rounds_stop_at_the_cap_and_a_level_at_it_is_not_drawn_again():
    ladder = [draws(1000.0, 1300.0, latency_ms=1000), draws(2000.0, latency_ms=2000),
              draws(2010.0, 2600.0, latency_ms=4000), LADDER[3]]
    found = convergence.next_round(ladder, converge_pct=1.0, max_repeats=2)
    assert found is not None and found.levels == [1]
    assert convergence.next_round([*ladder[:1], draws(2000.0, 2500.0, latency_ms=2000),
                                   *ladder[2:]], converge_pct=1.0, max_repeats=2) is None


def test_a_converging_sweep_repeats_its_deciding_levels_then_closes_with_its_control(
        fake_vllm, tmp_path):
    plan = attach_plan(fake_vllm.base_url, [2, 4, 6])
    out = tmp_path / "results.jsonl"
    # A tolerance no host meets: every deciding level goes to the cap of 3 draws.
    assert main(["sweep", str(write_plan(tmp_path, plan)), "--out", str(out),
                 "--converge", "0.001", "--max-repeats", "3"]) == 0
    points = read_points(out).points
    by_level: dict[int, list[int]] = {}
    for p in points[:-1]:
        by_level.setdefault(p.load.num_requests, []).append(p.repeat)
    # Repeat 1 is the control point's number: the rounds take 2 and 3. The fake server's
    # output grows with the load, so the top level decides (as the best, or around the knee).
    assert by_level[6] == [0, 2, 3]
    assert all(repeats in ([0], [0, 2, 3]) for repeats in by_level.values())
    assert all(any(n.startswith("repeated to converge: the deciding levels' interval is ")
                   for n in p.notes) for p in points[3:-1])
    assert (points[-1].load, points[-1].repeat, points[-1].control) == (
        LoadSpec(num_requests=2), 1, True)


def test_max_repeats_alone_is_refused(fake_vllm, tmp_path, capsys):
    plan = write_plan(tmp_path, attach_plan(fake_vllm.base_url, [2, 4]))
    assert main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl"),
                 "--max-repeats", "3"]) == 2
    assert "--max-repeats caps convergence: add --converge PCT" in capsys.readouterr().err


def test_a_search_and_convergence_together_are_refused(fake_vllm, tmp_path, capsys):
    plan = write_plan(tmp_path, attach_plan(fake_vllm.base_url, [2, 4, 6]))
    assert main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl"), "--search", "knee",
                 "--converge", "5"]) == 2
    assert "an adaptive search repeats the points that decide its answer itself" in (
        capsys.readouterr().err)
