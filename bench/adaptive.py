"""The adaptive sweep against the full grid: the same answer for a fraction of the engine time?

    .venv/bin/python bench/adaptive.py record --name cpu-a --seqs 2,4,8 --tokens 64,128,256
    .venv/bin/python bench/adaptive.py replay                 # every grid in bench/grids/
    .venv/bin/python bench/adaptive.py replay --quick         # the first one
    .venv/bin/python bench/adaptive.py live --name cpu-c ...  # grid, then search, one run
    .venv/bin/python bench/adaptive.py noise --seqs 8 --tokens 128 --loads concurrency:8  # spread

record: runs a whole grid (every engine config x load level x repeat) on vLLM CPU engines
serving the tiny model, through the runner's own run_plan, and writes what a search reads of
each point (runner.search.replay.RecordedGrid) with each config's engine start, as measured.

replay: the search replayed on each recorded grid as an oracle: every point the search asks for
is answered by the recorded point, its real noise and repeats included, and every engine start
by the recorded start. For each grid and objective (the knee; an SLO on p99 TTFT set from the
grid's own figures) it prints the grid's answer, the search's, their difference, whether the
grid's answer lies inside the search's interval, and the engine time (starts plus points) the
search used against the grid's, beside the same search refining by plain halving (method
bracket-bisect-walk/1) instead of by levels ruled out per expected second.

noise: the plan's points alone, each repeated --repeats times, with how far each point's repeats
scatter: how finely this host can tell two configs apart at all.

live: records a grid, then runs the adaptive search on the same configs and loads, on the same
host right after, with its end control (the answer point again on a fresh engine start, which
widens the interval by the drift it shows), and prints both answers and both engine times as
measured, with every point the search measured and what it did with each config; then it
measures the grid's answer point once more, which shows how far the host's speed moved
meanwhile. The grid is kept as a recorded grid too.

Targets: the answer within 2% of the grid's on every grid, the grid's answer inside the search's
interval, the search's engine time at most 30% of the grid's on grids of 9 or more configs and
never more than the grid's. Live, where the grid and the search meet a host whose speed moved
between them: the grid's answer point measured again after the search inside the search's
interval.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.engine.provenance import utc_now  # noqa: E402
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch  # noqa: E402
from runner.schema.plan import (  # noqa: E402
    ClientSpec,
    LoadSpec,
    StabilitySpec,
    SweepPlan,
    WorkloadSpec,
)
from runner.schema.search_record import SearchRecord, SearchSpec  # noqa: E402
from runner.search.replay import (  # noqa: E402
    GridAnswer,
    RecordedGrid,
    RecordedPoint,
    grid_answer,
    replay,
)
from runner.sweep import Progress, run_plan  # noqa: E402

GRIDS = ROOT / "bench" / "grids"
# The SLO objective's limit: p99 TTFT at this multiple of the grid's lowest, so that some
# levels of every config meet it and some do not.
SLO_FACTOR = 4.0
ENGINE_CPU, CLIENT_CPU = 0, 1


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def grid_plan(args: argparse.Namespace) -> SweepPlan:
    configs = [
        EngineConfig(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_model_len=1024)
        for seqs in _numbers(args.seqs) for tokens in _numbers(args.tokens)
    ]
    shape, _, values = args.loads.partition(":")
    if shape == "concurrency":
        per_slot = args.requests_per_slot
        loads = [LoadSpec(shape="concurrency", concurrency=c, num_requests=max(per_slot * c, 6))
                 for c in _numbers(values)]
    else:
        loads = [LoadSpec(shape="burst", num_requests=n) for n in _numbers(values)]
    low, _, high = args.input_tokens.partition("-")
    return SweepPlan(
        name=args.name,
        checkpoint=Checkpoint(model=str(args.model), served_model_name="tiny"),
        # The engine's compute thread on CPU 0, the client on CPU 1: on two cores, a client
        # woken on the engine's core waits for it.
        launch=EngineLaunch(style="cpu", startup_timeout_s=400,
                            env={"VLLM_CPU_OMP_THREADS_BIND": str(ENGINE_CPU)}),
        engine_configs=configs,
        loads=loads,
        workload=WorkloadSpec(kind="random", input_tokens_min=int(low),
                              input_tokens_max=int(high or low),
                              output_tokens=args.output_tokens),
        client=ClientSpec(request_timeout_s=300, stall_timeout_s=120, cpus=[CLIENT_CPU]),
        repeats=args.repeats,
        warmup_requests=4,
        # The grid is the search's yardstick for cost: no engine start beyond one per config.
        stability=StabilitySpec(end_control=False),
    )


class StartClock:
    """Which config each engine start belongs to: run_plan reports 'starting engine X' first."""

    def __init__(self) -> None:
        self.label = ""
        self.starts: dict[str, float] = {}

    def progress(self, progress: Progress) -> None:
        if progress.note.startswith("starting engine "):
            self.label = progress.note.removeprefix("starting engine ")

    def started(self, seconds: float) -> None:
        self.starts[self.label] = seconds


def run(plan: SweepPlan, workdir: Path) -> tuple[list[RecordedPoint], dict[str, float]]:
    clock = StartClock()
    points = []
    for point in run_plan(plan, workdir, on_progress=clock.progress,
                          on_engine_started=clock.started):
        points.append(RecordedPoint.of(point))
        print(f"  {point.key}: {point.metrics.output_throughput:.1f} tok/s", flush=True)
    return points, clock.starts


def record(args: argparse.Namespace) -> RecordedGrid:
    plan = grid_plan(args)
    with tempfile.TemporaryDirectory(prefix="headroom-grid-") as workdir:
        points, starts = run(plan, Path(workdir))
    grid = RecordedGrid(name=args.name, recorded_at=utc_now(), host=platform.node(),
                        plan=plan, engine_start_s=starts, points=points,
                        notes=[f"vLLM CPU engine, tiny random-weight model, {args.loads}"])
    out = GRIDS / f"{args.name}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(grid.model_dump_json(indent=1) + "\n")
    print(f"wrote {out}: {len(points)} points, engine starts {sum(starts.values()):.0f} s, "
          f"points {sum(p.wall_s for p in points):.0f} s")
    return grid


def objectives(grid: RecordedGrid) -> list[SearchSpec]:
    """The knee, and an SLO on p99 TTFT that the grid's own figures make meaningful."""
    ttfts = [p.latencies.get("p99_ttft_ms") for p in grid.points if p.valid]
    lowest = min(t for t in ttfts if t)
    return [SearchSpec(objective="knee"),
            SearchSpec(objective="slo", limits={"p99_ttft_ms": round(lowest * SLO_FACTOR, 1)})]


def judge(grid: RecordedGrid, spec: SearchSpec) -> dict[str, object]:
    from analysis.search_interval import StepSpread, answer_interval
    from runner.search.state import relative_spread

    full = grid_answer(grid, spec)
    found = replay(grid, spec)
    halving = replay(grid, spec.model_copy(update={"method": "bracket-bisect-walk/1"}))
    step = (StepSpread(found.step_level, relative_spread(list(found.step_values)))
            if found.step_level is not None and len(found.step_values) >= 2 else None)
    interval = answer_interval(found.record, found.capacity_values, step=step)
    row: dict[str, object] = {
        "grid": grid.name, "objective": spec.describe(), "configs": len(grid.plan.engine_configs),
        "grid_answer": full.value, "grid_at": f"{full.config}, {full.level}",
        "search_answer": found.answer, "search_at": f"{found.answer_config}, {found.answer_level}",
        "points": f"{found.record.points_measured} of {len(grid.points)}",
        "starts": sum(1 for c in found.record.cells if c.engine_start_s is not None),
        "engine_time_pct": 100 * found.spent_s / grid.cost_s(),
        "engine_s": found.spent_s, "grid_s": grid.cost_s(),
        "halving_s": halving.spent_s, "halving_points": halving.record.points_measured,
        "halving_answer": halving.answer,
    }
    if full.value and found.answer:
        row["difference_pct"] = 100 * (found.answer - full.value) / full.value
    if interval is not None and full.value is not None:
        row["interval"] = [interval.low, interval.high]
        row["grid_inside"] = interval.contains(full.value)
    return row


def print_rows(rows: Sequence[dict[str, object]]) -> None:
    """A Markdown table, as docs/performance.md shows it."""
    print("| grid | configs | objective | grid's answer | search's answer | difference | "
          "grid's answer in interval | points | engines started | engine time | "
          "by halving (/1) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        difference = row.get("difference_pct")
        cells = [
            str(row["grid"]), str(row["configs"]), str(row["objective"]),
            f"{_tok(row['grid_answer'])} at {row['grid_at']}",
            f"{_tok(row['search_answer'])} at {row['search_at']}",
            f"{difference:+.2f}%" if isinstance(difference, float) else "-",
            _interval_cell(row),
            str(row["points"]), f"{row['starts']} of {row['configs']}",
            f"{row['engine_time_pct']:.0f}% of the grid's ({row['engine_s']:.0f} s of "
            f"{row['grid_s']:.0f} s)",
            f"{row['halving_s']:.0f} s, {row['halving_points']} points, "
            f"{_tok(row['halving_answer'])}",
        ]
        print("| " + " | ".join(cells) + " |")


def _interval_cell(row: dict[str, object]) -> str:
    """Whether the grid's answer lies in the search's interval, and the interval."""
    interval = row.get("interval")
    if interval is None:
        return "-"
    assert isinstance(interval, list)  # judge() writes [low, high] with grid_inside
    low, high = interval
    return f"{'yes' if row['grid_inside'] else 'no'} ({low:.0f}-{high:.0f})"


def _tok(value: object) -> str:
    return f"{value:.0f} tok/s" if isinstance(value, float) else "none"


def cmd_replay(args: argparse.Namespace) -> int:
    paths = args.grids or sorted(GRIDS.glob("*.json"))
    if args.quick:
        paths = paths[:1]
    rows = []
    for path in paths:
        grid = RecordedGrid.model_validate_json(Path(path).read_text())
        for spec in objectives(grid):
            rows.append(judge(grid, spec))
    print_rows(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def cmd_live(args: argparse.Namespace) -> int:
    from analysis.convert import from_point_result
    from analysis.noise import end_drift
    from analysis.search_interval import chosen_point_interval

    grid = record(args)
    spec = SearchSpec()
    # The search ends with its end control (the answer point again on a fresh engine start),
    # as it does by default on a CPU engine; the grid measured without one.
    plan = grid.plan.model_copy(update={
        "search": spec, "stability": grid.plan.stability.model_copy(
            update={"end_control": True})})
    records: list[SearchRecord] = []
    points = []
    with tempfile.TemporaryDirectory(prefix="headroom-search-") as workdir:
        for point in run_plan(plan, Path(workdir), on_search=records.append):
            points.append(point)
            step = point.search
            print(f"  search {step.order if step else '-'} {step.phase if step else ''} "
                  f"{point.key}: {point.metrics.output_throughput:.1f} tok/s", flush=True)
    searched = records[-1]
    for cell in searched.cells:
        print(f"  {cell.label}: {cell.status}, {cell.points} points, answer "
              f"{_tok(cell.answer)}; {cell.reason}")
    full = grid_answer(grid, spec)
    best = max(searched.cells, key=lambda c: c.answer or -1.0)
    # The answer point's repeats: the level of the best config whose lowest repeat it is.
    levels: dict[str, list[float]] = {}
    for point in points:
        if (point.engine_config.label() == best.label and point.metrics.valid
                and not point.end_control):
            levels.setdefault(point.load.label(), []).append(point.metrics.output_throughput)
    at = next((level for level, v in levels.items() if min(v) == best.answer), None)
    figs = [from_point_result(p) for p in points]
    key = next((p.key for p in points if p.engine_config.label() == best.label
                and p.load.label() == at), None)
    interval = chosen_point_interval(searched, figs, key)
    drift = end_drift(figs)
    if drift is not None:
        print(f"end control {drift.change_pct:+.1f}% on {drift.config_label} | "
              f"{drift.load_label} against its first draw")
    else:
        print(f"end control none {searched.end_control_note}")
    # The end control's start is no config's: counted beside them.
    starts = (sum(1 for c in searched.cells if c.engine_start_s is not None)
              + int(searched.end_control_s > 0))
    print(f"grid   {full.value:.1f} tok/s at {full.config} | {full.level}; engine time "
          f"{grid.cost_s():.0f} s, {len(grid.points)} points, {len(grid.engine_start_s)} starts")
    print(f"search {best.answer or 0:.1f} tok/s at {best.label}; engine time "
          f"{searched.spent_s:.0f} s ({100 * searched.spent_s / grid.cost_s():.0f}% of the "
          f"grid's), {len(points)} points, {starts} starts")
    if interval is not None and full.value is not None:
        print(f"interval {interval.low:.1f}-{interval.high:.1f}: the grid's answer "
              f"{'inside' if interval.contains(full.value) else 'outside'}")
    if at is not None:
        print(f"choice {_choice_in_grid(grid, full, best.label, at)}")
    again = _again(grid, full)
    print(f"again  {', '.join(f'{v:.1f}' for v in again)} tok/s (the grid's answer point, "
          f"measured after the search on a fresh engine)")
    if again and interval is not None and full.value:
        # The grid and the search meet hosts minutes apart; the grid's answer measured again
        # in the search's window is what the search's interval can be asked to hold.
        lowest = min(again)
        print(f"drift  {100 * (lowest - full.value) / full.value:+.1f}% on the grid's answer "
              f"point between the grid and the search (lowest repeat against lowest repeat)")
        print(f"target the grid's answer point again, {lowest:.1f} tok/s, "
              f"{'inside' if interval.contains(lowest) else 'outside'} the search's interval")
    return 0


def _choice_in_grid(grid: RecordedGrid, full: GridAnswer, config: str, level: str) -> str:
    """The search's answer point read on the grid's own draws, against the grid's answer
    widened by the grid's pooled repeat spread: whether the grid could tell the two apart."""
    draws: dict[tuple[str, str], list[float]] = {}
    for point in grid.points:
        if point.valid:
            draws.setdefault((point.config_label, point.load_label), []).append(
                point.output_throughput)
    spreads = [(max(v) - min(v)) / statistics.fmean(v) for v in draws.values()
               if len(v) > 1 and statistics.fmean(v) > 0]
    noise = statistics.median(spreads) if spreads else 0.0
    chosen = draws.get((config, level))
    if not chosen or not full.capacity_values:
        return "the search's answer point is not in the grid"
    low = min(full.capacity_values) * (1 - noise)
    high = max(full.capacity_values) * (1 + noise)
    inside = low <= min(chosen) <= high
    return (f"the search's answer point in the grid: {min(chosen):.1f} tok/s (lowest of "
            f"{len(chosen)}), the grid's answer {low:.1f}-{high:.1f} with its "
            f"{100 * noise:.1f}% pooled spread: {'inside' if inside else 'outside'}")


def _again(grid: RecordedGrid, full: GridAnswer) -> list[float]:
    """The grid's answer point measured once more, on a fresh engine, tok/s per repeat."""
    config = next(c for c in grid.plan.engine_configs if c.label() == full.config)
    load = next(load for load in grid.plan.loads if load.label() == full.level)
    plan = grid.plan.model_copy(update={"engine_configs": [config], "loads": [load]})
    with tempfile.TemporaryDirectory(prefix="headroom-again-") as workdir:
        return [p.metrics.output_throughput for p in run_plan(plan, Path(workdir))
                if p.metrics.valid]


def cmd_noise(args: argparse.Namespace) -> int:
    """The plan's points, repeats in order, and how far each point's repeats scatter: the
    host's own noise, which no search can decide finer than."""
    with tempfile.TemporaryDirectory(prefix="headroom-noise-") as workdir:
        points, _ = run(grid_plan(args), Path(workdir))
    by_point: dict[tuple[str, str], list[float]] = {}
    for point in points:
        if point.valid:
            by_point.setdefault((point.config_label, point.load_label), []).append(
                point.output_throughput)
    for (config, load), values in by_point.items():
        mean = statistics.fmean(values)
        scatter = f", {statistics.pstdev(values) / mean:.1%} standard deviation over mean"
        print(f"{config} | {load}: {min(values):.0f} to {max(values):.0f} tok/s, mean "
              f"{mean:.0f}" + (scatter if len(values) > 1 and mean > 0 else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("record", "live", "noise"):
        sub = commands.add_parser(name)
        sub.add_argument("--name", required=name != "noise", default="noise")
        sub.add_argument("--seqs", default="2,4,8")
        sub.add_argument("--tokens", default="64,128,256")
        sub.add_argument("--loads", default="concurrency:2,4,8,16,32")
        sub.add_argument("--input-tokens", default="60-68")
        sub.add_argument("--output-tokens", type=int, default=64)
        sub.add_argument("--repeats", type=int, default=2)
        sub.add_argument("--requests-per-slot", type=int, default=3,
                         help="a closed loop's num_requests per request in flight")
        sub.add_argument("--model", default=str(ROOT / "var" / "tiny-model"))
    replay_parser = commands.add_parser("replay")
    replay_parser.add_argument("grids", nargs="*")
    replay_parser.add_argument("--json")
    replay_parser.add_argument("--quick", action="store_true", help="the first grid only")
    args = parser.parse_args(argv)
    if args.command == "record":
        record(args)
        return 0
    if args.command == "live":
        return cmd_live(args)
    if args.command == "noise":
        return cmd_noise(args)
    return cmd_replay(args)


if __name__ == "__main__":
    raise SystemExit(main())
