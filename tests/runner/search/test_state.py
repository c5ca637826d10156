"""The adaptive search replayed on grids whose answer is known: every point it asks for is the
grid's own, so its answer can be set against the whole grid's."""

from __future__ import annotations

import pytest

from analysis.search_interval import StepSpread, answer_interval
from runner.schema.engine_config import EngineConfig
from runner.schema.search_record import SearchSpec
from runner.search.replay import RecordedGrid, grid_answer, replay
from runner.search.state import Search, relative_spread

from .grids import recorded_grid, saturating

KNEE = SearchSpec()


def capacity_by_seqs_and_tokens(config: EngineConfig) -> float:
    """A scheduler cap: capacity grows with max_num_seqs, a little with the token budget."""
    return 20.0 * (config.max_num_seqs or 1) * (1 + (config.max_num_batched_tokens or 0) / 1000)


def within(found: float | None, expected: float | None, tolerance: float = 0.02) -> bool:
    assert found is not None and expected is not None
    return abs(found - expected) <= tolerance * expected


def test_the_knee_is_found_within_the_tolerance_for_under_a_third_of_the_grids_engine_time():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)

    assert within(found.answer, full.value)
    assert found.answer_config == full.config == "seqs=8,tokens=256"
    assert found.spent_s <= 0.30 * grid.cost_s()
    assert found.record.points_measured < len(grid.points)


def test_every_config_is_accounted_for_and_the_unstarted_ones_say_which_config_bounds_them():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    record = replay(grid, KNEE).record

    assert [c.label for c in record.cells] == [c.label() for c in grid.plan.engine_configs]
    statuses = {c.label: c.status for c in record.cells}
    assert statuses["seqs=8,tokens=256"] == "searched"
    not_started = [c for c in record.cells if c.status == "not_started"]
    assert not_started and all(c.engine_start_s is None and c.points == 0 for c in not_started)
    smallest = next(c for c in record.cells if c.label == "seqs=2,tokens=64")
    assert "which did not beat the best" in smallest.reason


def test_a_config_short_of_the_best_by_more_than_the_tolerance_is_pruned_after_its_probe():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    record = replay(grid, KNEE).record
    pruned = [c for c in record.cells if c.status == "pruned"]

    assert pruned, "the neighbours of the best config fall far short of it"
    assert all(c.points == 1 for c in pruned)  # the highest load's probe, no more
    assert all("short of the best config" in c.reason for c in pruned)


def two_slices(capacity: dict[bool, float], per_request: dict[bool, float]) -> RecordedGrid:
    """Prefix caching on and off: two slices the walk starts separately, one config each."""

    def figures(config: EngineConfig, level: int, repeat: int) -> tuple[float, float]:
        on = bool(config.enable_prefix_caching)
        throughput = min(level * per_request[on], capacity[on])
        return throughput, 1000.0 * max(1.0, level * per_request[on] / capacity[on])

    grid = recorded_grid(figures, seqs=(8,), tokens=(256,))
    configs = [EngineConfig(max_num_seqs=8, enable_prefix_caching=on) for on in (True, False)]
    plan = grid.plan.model_copy(update={"engine_configs": configs})
    points = []
    for config in configs:
        for load in plan.loads:
            for repeat in range(plan.repeats):
                throughput, latency = figures(config, load.concurrency or 0, repeat)
                points.append(grid.points[0].model_copy(update={
                    "config_label": config.label(), "load_label": load.label(),
                    "repeat": repeat, "output_throughput": throughput,
                    "latencies": {"median_e2el_ms": latency},
                }))
    return grid.model_copy(update={
        "plan": plan, "points": points,
        "engine_start_s": {c.label(): 30.0 for c in configs},
    })


def test_a_late_blooming_config_is_kept_and_wins():
    # Caching on is far ahead at every load up to 8; caching off starts slow but saturates
    # higher. A search that judged a config by its first low levels would give it up.
    grid = two_slices(capacity={True: 100.0, False: 150.0}, per_request={True: 25.0, False: 5.0})
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)

    late = next(c for c in found.record.cells if c.label == full.config)
    assert late.status == "searched"
    assert full.config == found.answer_config
    assert within(found.answer, full.value)


def test_a_config_within_the_tolerance_of_the_best_is_searched_not_pruned():
    grid = two_slices(capacity={True: 100.0, False: 99.0}, per_request={True: 10.0, False: 10.0})
    record = replay(grid, KNEE).record

    assert [c.status for c in record.cells] == ["searched", "searched"]


def test_the_walk_leaves_the_corner_when_a_smaller_setting_does_better():
    # Past 128 tokens a step's prefill stalls decoding here: the best is not the corner.
    def capacity(config: EngineConfig) -> float:
        tokens = config.max_num_batched_tokens or 0
        return 20.0 * (config.max_num_seqs or 1) * (1.5 if tokens == 128 else 1.0)

    grid = recorded_grid(saturating(capacity))
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)

    assert full.config == "seqs=8,tokens=128"
    assert found.answer_config == full.config
    assert within(found.answer, full.value)


def test_the_knee_walk_never_starts_fewer_sequences_than_the_best_config():
    record = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens)), KNEE).record
    started = {c.label for c in record.cells if c.engine_start_s is not None}

    assert started <= {"seqs=8,tokens=64", "seqs=8,tokens=128", "seqs=8,tokens=256"}
    fewer = next(c for c in record.cells if c.label == "seqs=4,tokens=256")
    assert fewer.reason.startswith("a smaller max_num_seqs than the best config")


def test_a_best_config_that_preempted_has_fewer_sequences_tried():
    # At 8 sequences the KV cache runs out and vLLM preempts: 4 sequences do better.
    def capacity(config: EngineConfig) -> float:
        return {2: 40.0, 4: 100.0, 8: 70.0}[config.max_num_seqs or 0]

    def preempts(config: EngineConfig) -> bool:
        return config.max_num_seqs == 8

    grid = recorded_grid(saturating(capacity), tokens=(256,), preempts=preempts)
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)

    assert full.config == found.answer_config == "seqs=4,tokens=256"
    assert within(found.answer, full.value)


def slo_grid() -> RecordedGrid:
    return recorded_grid(saturating(capacity_by_seqs_and_tokens))


@pytest.mark.parametrize("limit", ["p99_ttft_ms", "median_tpot_ms"])
@pytest.mark.parametrize("limit_ms", [260.0, 300.0, 600.0, 1200.0])
def test_the_slo_limit_is_found_within_the_tolerance(limit, limit_ms):
    spec = SearchSpec(objective="slo", limits={limit: limit_ms})
    grid = slo_grid()
    full = grid_answer(grid, spec)
    found = replay(grid, spec)

    assert within(found.answer, full.value)
    assert found.spent_s < grid.cost_s()


def test_a_tpot_limit_tries_fewer_sequences_since_they_make_each_step_shorter():
    # TPOT grows with the batch: only 2 or 4 sequences stay within 45 ms per token.
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens), tokens=(256,))
    seqs = {c.label(): c.max_num_seqs or 0 for c in grid.plan.engine_configs}
    for point in grid.points:
        point.latencies["median_tpot_ms"] = 10.0 * seqs[point.config_label]
    spec = SearchSpec(objective="slo", limits={"median_tpot_ms": 45.0})
    full = grid_answer(grid, spec)
    found = replay(grid, spec)

    assert full.config == found.answer_config == "seqs=4,tokens=256"
    assert within(found.answer, full.value)


def test_a_budget_stops_the_search_and_says_so():
    spec = SearchSpec(point_budget=3)
    found = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens)), spec)

    assert found.record.points_measured == 3
    assert found.record.budget_spent
    assert any("budget" in c.reason for c in found.record.cells if c.status == "not_started")


def noisy(figures, spread: dict[int, float]):
    """Repeat 1 of a level lower by spread[level] (a share), as a slower run would be."""

    def noisy_figures(config: EngineConfig, level: int, repeat: int) -> tuple[float, float]:
        throughput, latency = figures(config, level, repeat)
        if repeat == 1:
            throughput *= 1 - spread.get(level, 0.0)
        return throughput, latency

    return noisy_figures


def repeats_of(found) -> list[str]:
    return [r.reason for r in found.requests if r.phase == "repeat"]


def test_a_clear_answer_is_repeated_only_to_give_its_capacity_a_spread():
    found = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens), repeats=3), KNEE)

    # The best config's answer point, once: its two repeats agree, and no decision was close.
    assert repeats_of(found) == [
        "the answer point of the best config so far: a repeat gives its capacity a measured "
        "spread"
    ]


def test_a_knee_step_inside_the_noise_is_repeated():
    # The step from 16 to 32 in flight gains 1.5% with latency +90%: the knee rule says knee
    # (under 2%), but the probe's repeat reads 3% lower, so noise of that size could flip it.
    def figures(config: EngineConfig, level: int, repeat: int) -> tuple[float, float]:
        curve = {1: 20.0, 2: 40.0, 4: 80.0, 8: 130.0, 16: 157.0, 32: 159.4}
        return curve[level], 1000.0 * {16: 1.0, 32: 1.9}.get(level, 1.0)

    grid = recorded_grid(noisy(figures, {32: 0.03}), seqs=(8,), tokens=(256,), repeats=3)
    found = replay(grid, KNEE)

    assert any("the knee step" in reason for reason in repeats_of(found))


def one_slow_probe(low: float):
    """cpu-k's live search (docs/performance.md): the probe at 64 in flight read `low`, its
    repeats 9228 and 9100; 32 in flight read 8575, 8511 and 8540."""

    def figures(config: EngineConfig, level: int, repeat: int) -> tuple[float, float]:
        curve = {4: 2000.0, 8: 4000.0, 16: 6500.0, 32: (8575.0, 8511.0, 8540.0)[repeat],
                 64: (low, 9228.0, 9100.0)[repeat]}
        return curve[level], 1000.0 * {32: 2.0, 64: 4.0}.get(level, 1.0)

    return figures


def test_a_fall_beyond_the_noise_on_one_draw_is_repeated_and_widens_the_interval():
    grid = recorded_grid(one_slow_probe(7249.0), seqs=(32,), tokens=(2048,),
                         levels=(4, 8, 16, 32, 64), repeats=3)
    found = replay(grid, KNEE)

    # Once: a second draw measures the disagreement, and a third would not lift the level.
    falls = [r for r in found.requests if r.phase == "repeat" and "a fall" in r.reason]
    assert [(r.level, r.repeat) for r in falls] == [(4, 1)]
    assert falls[0].reason.startswith("concurrency 64 x 256 delivered -15.5% against "
                                      "concurrency 32 x 128 on one draw")
    # The answer stays at 32 (a level's figures are its lowest draw's) ...
    assert found.answer == 8511.0 and found.step_values == (7249.0, 9228.0)
    # ... and its interval, widened by the 24% between the draws at 64, holds the 9175 tok/s
    # that another run read there.
    step = StepSpread(str(found.step_level), relative_spread(list(found.step_values)))
    interval = answer_interval(found.record, found.capacity_values, step=step)
    assert interval is not None and interval.contains(9175.0)
    assert interval.high == pytest.approx(8575.0 * (1.02 + 1979.0 / 8238.5))


def test_a_fall_inside_the_noise_or_a_rise_is_not_repeated_for_it():
    # 8480 against 8511 at 32: -0.4%, inside the 0.7% that 32's repeats scatter by; 9300: a
    # rise.
    for low in (8480.0, 9300.0):
        grid = recorded_grid(one_slow_probe(low), seqs=(32,), tokens=(2048,),
                             levels=(4, 8, 16, 32, 64), repeats=3)
        assert not any("a fall" in reason for reason in repeats_of(replay(grid, KNEE)))


def test_one_repeat_per_point_when_the_plan_asks_for_none():
    found = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens), repeats=1), KNEE)

    assert repeats_of(found) == []
    assert {r.repeat for r in found.requests} == {0}


def test_the_interval_covers_the_full_grids_answer_on_a_noisy_grid():
    figures = noisy(saturating(capacity_by_seqs_and_tokens), {16: 0.04, 32: 0.05})
    grid = recorded_grid(figures)
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)
    interval = answer_interval(found.record, found.capacity_values)

    assert interval is not None and interval.repeats == 2
    assert interval.contains(full.value or 0.0)
    # The answer is the lowest repeat, as the run page's capacity.
    assert found.answer == min(found.capacity_values)


def test_the_interval_covers_a_slightly_better_config_the_walk_never_started():
    # Two steps down the token budget is 1.5% better, behind a neighbour that is worse: the
    # walk stops at the neighbour, and the interval (the tolerance) must still hold the grid's.
    def capacity(config: EngineConfig) -> float:
        return {64: 203.0, 128: 198.0, 256: 200.0}[config.max_num_batched_tokens or 0]

    grid = recorded_grid(saturating(capacity), seqs=(8,))
    full = grid_answer(grid, KNEE)
    found = replay(grid, KNEE)
    interval = answer_interval(found.record, found.capacity_values)

    assert full.config == "seqs=8,tokens=64" and found.answer_config == "seqs=8,tokens=256"
    assert interval is not None and interval.contains(full.value or 0.0)
    assert within(found.answer, full.value)


def timed_grid() -> RecordedGrid:
    """64 requests at every level: a closed loop of one in flight takes far longer than 32."""
    return recorded_grid(saturating(capacity_by_seqs_and_tokens), num_requests=64)


@pytest.mark.parametrize("spec", [
    KNEE,
    SearchSpec(objective="slo", limits={"p99_ttft_ms": 600.0}),
    SearchSpec(objective="slo", limits={"median_tpot_ms": 300.0}),
], ids=["knee", "ttft", "tpot"])
def test_choosing_by_value_per_cost_finds_the_answer_in_less_point_time_than_halving(spec):
    grid = timed_grid()
    full = grid_answer(grid, spec)
    found = replay(grid, spec)
    halving = replay(grid, spec.model_copy(update={"method": "bracket-bisect-walk/1"}))

    assert within(found.answer, full.value)
    assert found.record.point_s <= halving.record.point_s
    if spec.objective == "knee":
        assert found.record.point_s < halving.record.point_s


def test_a_config_that_does_not_fit_the_time_budget_is_not_started_and_says_why():
    # The first config: a 30 s start and 4 points of 5 s, 50 s; the next would need as much.
    spec = SearchSpec(time_budget_s=80.0)
    found = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens)), spec)
    record = found.record

    assert [c.status for c in record.cells].count("searched") == 1
    assert record.budget_spent and record.spent_s <= 80.0
    left = next(c for c in record.cells if c.status == "not_started")
    assert left.reason == ("the time budget had 30 s of 80 s left, and a config needs about "
                           "50 s (engine start ~30 s measured here + 4 point(s) ~20 s)")


def test_a_config_that_fits_the_time_budget_is_started():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    unlimited = replay(grid, KNEE).record
    # The last config started was pruned after its probe (30 s + 5 s); before it, the search
    # had spent the rest, and estimated it at 50 s.
    before_last = unlimited.spent_s - 35.0
    roomy = replay(grid, SearchSpec(time_budget_s=before_last + 50.0)).record
    short = replay(grid, SearchSpec(time_budget_s=before_last + 49.0)).record

    assert [c.status for c in roomy.cells] == [c.status for c in unlimited.cells]
    assert not roomy.budget_spent
    assert [c.status for c in short.cells].count("pruned") == (
        [c.status for c in unlimited.cells].count("pruned") - 1
    )
    assert short.budget_spent


def test_the_first_config_starts_when_its_start_is_unknown_but_not_past_a_prior():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    spec = SearchSpec(time_budget_s=20.0)

    unknown = replay(grid, spec).record
    assert [c.engine_start_s for c in unknown.cells if c.status == "searched"] == [30.0]
    assert unknown.points_measured == 0, "the start spent the budget: no point is taken"

    priced = replay(grid, spec, start_prior_s=30.0).record
    assert all(c.status == "not_started" for c in priced.cells)
    assert priced.cells[0].reason == (
        "the time budget had 20 s of 20 s left, and a config needs about 30 s (engine start "
        "~30 s from this node's last starts + 4 point(s) of unknown length)"
    )


def test_a_spent_time_budget_stops_the_points_of_the_running_config():
    # No start is known before the first: it starts, and its points stop at 45 s.
    found = replay(recorded_grid(saturating(capacity_by_seqs_and_tokens)),
                   SearchSpec(time_budget_s=45.0))

    assert found.record.points_measured == 3  # 30 s + 5 + 5 + 5 reaches 45 s
    assert "the time budget ran out during its search" in found.record.cells[-1].reason


def test_the_record_keeps_the_start_prior_and_this_runs_measured_start():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    record = replay(grid, KNEE, start_prior_s=300.0).record

    assert (record.start_prior_s, record.start_measured_s) == (300.0, 30.0)
    assert replay(grid, KNEE).record.start_prior_s is None


def test_each_configs_status_reason_and_start_stay_its_own():
    from runner.search.state import Search

    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    search = Search(grid.plan.model_copy(update={"search": KNEE}))
    first, why_first = search.next_config() or (None, "")
    search.config_started(12.0)
    search.config_failed("the engine did not start")
    second, why_second = search.next_config() or (None, "")
    search.config_started(34.0)
    assert first is not None and second is not None and first != second
    cells = search.record().cells
    assert (cells[first].status, cells[first].reason, cells[first].engine_start_s) == (
        "failed", "the engine did not start", 12.0)
    assert (cells[second].status, cells[second].reason, cells[second].engine_start_s) == (
        "not_started", why_second, 34.0)  # running: not yet closed
    assert why_first and why_second
    others = [c for i, c in enumerate(cells) if i not in (first, second)]
    assert all(c.engine_start_s is None and c.status == "not_started" for c in others)


# --- the end control: the answer point again after the search ------------------------------------

def searched(grid: RecordedGrid, spec: SearchSpec) -> Search:
    """The search run to its end on the grid, as replay() does, its end control not yet asked."""
    plan = grid.plan.model_copy(update={"search": spec})
    search = Search(plan)
    while (step := search.next_config()) is not None:
        config = plan.engine_configs[step[0]]
        search.config_started(grid.engine_start_s[config.label()])
        while (request := search.next_point()) is not None:
            load = search.loads[request.level]
            search.observe(request, grid.point(config.label(), load.label(),
                                               request.repeat).observation())
    search.finish()
    return search


def test_the_end_control_is_the_answer_point_numbered_past_every_repeat():
    grid = recorded_grid(saturating(capacity_by_seqs_and_tokens))
    found = replay(grid, KNEE)
    search = searched(grid, KNEE)
    control = search.end_control()

    assert control is not None and control.phase == "control"
    assert (search.configs[control.config].label(), search.loads[control.level].label()) == (
        found.answer_config, found.answer_level)
    # The sweep's end-control key: past the repeats and the grid's control point.
    assert control.repeat == grid.plan.repeats + 1
    assert control.order == found.record.points_measured + 1
    search.end_control_measured(30.0, 5.0)
    record = search.record()
    assert record.end_control_s == 35.0 and record.end_control_note == ""
    assert record.points_measured == found.record.points_measured + 1
    assert record.spent_s == pytest.approx(found.record.spent_s + 35.0)


def test_a_spent_point_budget_leaves_the_end_control_out_and_says_so():
    search = searched(recorded_grid(saturating(capacity_by_seqs_and_tokens)),
                      SearchSpec(point_budget=3))
    assert search.end_control() is None
    assert search.record().end_control_note == "no end control: the point budget was spent"


@pytest.mark.parametrize(("budget", "taken"), [(84.0, False), (85.0, True)])
def test_the_end_control_is_taken_only_where_the_time_budget_has_room_for_it(budget, taken):
    # The first config spends 50 s (a 30 s start, four 5 s points); the next config would need
    # 50 s more and is not started; the end control needs a 30 s start and a 5 s point.
    search = searched(recorded_grid(saturating(capacity_by_seqs_and_tokens)),
                      SearchSpec(time_budget_s=budget))
    assert search.spent_s() == 50.0
    assert (search.end_control() is not None) is taken
    if not taken:
        assert search.record().end_control_note == (
            "no end control: an engine start and its point need about 35 s, and the time "
            "budget had 34 s left")
