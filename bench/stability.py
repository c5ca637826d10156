"""Does Headroom catch a disturbed point, and do its intervals hold on this noisy host?

    .venv/bin/python bench/stability.py                # 4 runs: quiet, disturbed, quiet, disturbed
    .venv/bin/python bench/stability.py --runs 6
    .venv/bin/python bench/stability.py --quick        # one engine, three points, one hog

Each run is the demo's shape on a vLLM CPU engine serving the tiny model: two engine configs
(max_num_seqs 4 and 32) over burst levels, one draw per level, each config ending with its
control point and the sweep with its end control (--no-end-control: without), through the
runner's own run_plan. Runs alternate quiet and disturbed. In a
disturbed run the bench starts a CPU hog of its own, a busy loop pinned to the engine's core
that stops itself after HOG_LIMIT_S, for every other point of the plan and stops it before the
next: those points are the ones other processes disturbed, the rest are quiet.

It prints every point (whether the hog ran, the cores others took, the engine's cores, whether
Headroom flagged it at its first draw) and then:
- flagged: the share of hog points flagged (target at least 90%) and of quiet points flagged at
  their first draw (target at most 10%), with the cores others took on each side;
- the headline ratio (max_num_seqs 32 over 4 at the top level, as the demo's comparison) of
  every run with its 95% interval from the run's control points, and for every pair of quiet
  runs whether each run's interval holds the other's ratio (target: always).

--quick: one config, three levels, the hog on the second; the sweep must carry on past it and
the table must show that point flagged. make test runs it (tests/bench/test_quick_modes.py).
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import noise, repeats  # noqa: E402
from analysis.convert import from_point_result  # noqa: E402
from runner.engine.provenance import utc_now  # noqa: E402
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch  # noqa: E402
from runner.schema.plan import (  # noqa: E402
    ClientSpec,
    LoadSpec,
    StabilitySpec,
    SweepPlan,
    WorkloadSpec,
)
from runner.schema.result import PointResult  # noqa: E402
from runner.sweep import Progress, plan_points, run_plan  # noqa: E402

ENGINE_CPU, CLIENT_CPU = 0, 1
# The hog stops itself after this long even if the bench dies first.
HOG_LIMIT_S = 300.0
HOG = ("import os, time\n"
       "os.sched_setaffinity(0, {%d})\n"
       "end = time.monotonic() + %f\n"
       "while time.monotonic() < end:\n"
       "    pass\n")


class Hog:
    """A busy loop of the bench's own, pinned to one CPU, started and stopped by the bench."""

    def __init__(self, cpu: int) -> None:
        self.cpu = cpu
        self.process: subprocess.Popen[bytes] | None = None

    def set(self, on: bool) -> None:
        if on and self.process is None:
            self.process = subprocess.Popen(
                [sys.executable, "-c", HOG % (self.cpu, HOG_LIMIT_S)])
        elif not on and self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None


class HogSchedule:
    """Turns the hog on before each point in `hogged` and off before every other one: run_plan
    reports the next point's index as points_done when it starts an engine or finishes a point."""

    def __init__(self, hog: Hog, hogged: set[int]) -> None:
        self.hog, self.hogged = hog, hogged

    def progress(self, progress: Progress) -> None:
        if progress.note.startswith(("starting engine", "finished")):
            self.hog.set(progress.points_done in self.hogged)


def plan_for(args: argparse.Namespace, name: str) -> SweepPlan:
    seqs = [8] if args.quick else [4, 32]
    levels = [6, 12, 18] if args.quick else [16, 32, 64]
    return SweepPlan(
        name=name,
        checkpoint=Checkpoint(model=str(args.model), served_model_name="tiny"),
        launch=EngineLaunch(style="cpu", startup_timeout_s=400,
                            env={"VLLM_CPU_OMP_THREADS_BIND": str(ENGINE_CPU)}),
        engine_configs=[EngineConfig(max_num_seqs=s, max_model_len=1024) for s in seqs],
        loads=[LoadSpec(shape="burst", num_requests=n) for n in levels],
        workload=WorkloadSpec(kind="random", input_tokens_min=60, input_tokens_max=68,
                              output_tokens=args.output_tokens),
        client=ClientSpec(request_timeout_s=300, stall_timeout_s=120, cpus=[CLIENT_CPU]),
        warmup_requests=4,
        # The product's default on a CPU engine is on: the first config's first level again at
        # the end, on a fresh start, whose drift widens every interval of the run.
        stability=StabilitySpec(end_control=args.end_control and not args.quick),
    )


@dataclass
class Drawn:
    run: str
    hog: bool
    point: PointResult

    @property
    def first_flagged(self) -> bool:
        """Flagged at its first draw: disturbed now, or an earlier draw set aside."""
        host = self.point.host
        return host is not None and (host.disturbed or bool(host.set_aside))

    @property
    def taken(self) -> float | None:
        host = self.point.host
        if host is None:
            return None
        first = host.set_aside[0].taken_cores if host.set_aside else host.taken_cores
        return first


def one_run(args: argparse.Namespace, name: str, disturbed: bool) -> list[Drawn]:
    plan = plan_for(args, name)
    order = plan_points(plan)
    hogged = ({1} if args.quick else set(range(1, len(order), 2))) if disturbed else set()
    hog = Hog(ENGINE_CPU)
    schedule = HogSchedule(hog, hogged)
    out = []
    try:
        with tempfile.TemporaryDirectory(prefix="headroom-stability-") as workdir:
            for point in run_plan(plan, Path(workdir), on_progress=schedule.progress):
                index = next(i for i, p in enumerate(order) if p.key == point.key)
                out.append(Drawn(name, index in hogged, point))
    finally:
        hog.set(False)
    return out


def _cell(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_points(drawn: list[Drawn]) -> None:
    print("| run | point | hog | others took (cores) | engine (cores) | flagged | output tok/s |")
    print("|---|---|---|---|---|---|---|")
    for d in drawn:
        host = d.point.host
        engine = host.engine_cores if host is not None else None
        # The key's own '|' would split the cell: config, load and repeat, joined otherwise.
        name = " · ".join(d.point.key.split("|"))
        print(f"| {d.run} | {name}{' (control)' if d.point.control else ''} | "
              f"{'yes' if d.hog else 'no'} | {_cell(d.taken)} | {_cell(engine)} | "
              f"{'yes' if d.first_flagged else 'no'} | "
              f"{d.point.metrics.output_throughput:,.0f} |")


def print_flags(drawn: list[Drawn]) -> None:
    hogged = [d for d in drawn if d.hog]
    quiet = [d for d in drawn if not d.hog]
    print("\n| points | count | flagged | share | others took: median (min-max) |")
    print("|---|---|---|---|---|")
    for label, group in (("hog", hogged), ("quiet", quiet)):
        if not group:
            continue
        taken = [d.taken for d in group if d.taken is not None]
        flagged = sum(d.first_flagged for d in group)
        spread = (f"{statistics.median(taken):.2f} ({min(taken):.2f}-{max(taken):.2f})"
                  if taken else "-")
        print(f"| {label} | {len(group)} | {flagged} | {flagged / len(group):.0%} | {spread} |")


def run_noise(drawn: list[Drawn]) -> noise.RunNoise:
    return noise.run_noise([from_point_result(d.point) for d in drawn])


def headline(drawn: list[Drawn]) -> noise.RatioInterval | None:
    """max_num_seqs 32 over 4 at the top level, from the run's own draws and noise."""
    figs = [from_point_result(d.point) for d in drawn]
    found = noise.run_noise(figs)
    top = max(f.offered_concurrency for f in figs)
    sides = []
    for label in ("seqs=4,len=1024", "seqs=32,len=1024"):
        group = [f for f in figs if f.config_label == label and f.offered_concurrency == top]
        sides.append([f.output_throughput for f in repeats.judged_repeats(group)])
    return noise.ratio_interval(sides[0], sides[1], found.throughput_sd, found.throughput_sd)


def print_headlines(runs: dict[str, tuple[bool, list[Drawn]]]) -> None:
    estimates = {name: headline(drawn) for name, (_, drawn) in runs.items()}
    print("\n| run | hog | ratio | 95% interval | end control's drift |")
    print("|---|---|---|---|---|")
    for name, (disturbed, drawn) in runs.items():
        found = estimates[name]
        # No interval where the run's control points were disturbed: nothing else measured it.
        shown = ("- | -" if found is None
                 else f"{found.ratio:.2f}x | {found.low:.2f}x-{found.high:.2f}x")
        end = run_noise(drawn).end_drift
        drift = "-" if end is None else f"{end.change_pct:+.1f}%"
        print(f"| {name} | {'yes' if disturbed else 'no'} | {shown} | {drift} |")
    quiet = [name for name, (disturbed, _) in runs.items() if not disturbed]
    print("\n| quiet pair | each interval holds the other's ratio |")
    print("|---|---|")
    for a, b in itertools.combinations(quiet, 2):
        x, y = estimates[a], estimates[b]
        holds = (x is not None and y is not None and x.low <= y.ratio <= x.high
                 and y.low <= x.ratio <= y.high)
        print(f"| {a} / {b} | {'yes' if holds else 'no'} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--output-tokens", type=int, default=64)
    parser.add_argument("--end-control", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the first config's first level again at the end")
    parser.add_argument("--model", default=os.environ.get(
        "HEADROOM_TINY_MODEL", str(ROOT / "var" / "tiny-model")))
    args = parser.parse_args(argv)
    if args.quick:
        args.runs, args.output_tokens = 1, 32
    print(f"bench/stability.py on {platform.node()}, {os.cpu_count()} CPUs, {utc_now()}",
          flush=True)
    started = time.monotonic()
    runs: dict[str, tuple[bool, list[Drawn]]] = {}
    for number in range(args.runs):
        disturbed = args.quick or number % 2 == 1
        name = f"run{number + 1}"
        print(f"{name}: {'disturbed' if disturbed else 'quiet'}", flush=True)
        runs[name] = (disturbed, one_run(args, name, disturbed))
    drawn = [d for _, points in runs.values() for d in points]
    print()
    print_points(drawn)
    print_flags(drawn)
    if not args.quick:
        print_headlines(runs)
    print(f"\n{time.monotonic() - started:.0f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
