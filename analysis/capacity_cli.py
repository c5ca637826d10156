"""`python -m analysis capacity`: a capacity plan from result files, for pipelines.

The plan is analysis.capacity_plan.plan_capacity, the function the dashboard's plan page calls,
over the same conversion of the same points (analysis.convert), so a file and the run it was
imported into give the same numbers. It lives here, not under `python -m runner`, because the
runner is the layer below the rules and never imports them (.importlinter): the measuring stays
in the runner, the judging here.

Exit status: 0 when some engine config meets the demand within what was measured, 1 when none
does, 2 for input it cannot read, 4 when --verified shows the targets missed at the promised
rate. The check against the engine is three steps: --verify-plan writes the sweep plan of the
check, `python -m runner sweep` measures it, and --verified judges what it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from datetime import date
from decimal import Decimal, InvalidOperation
from pathlib import Path

import yaml
from pydantic import TypeAdapter

from analysis.capacity_plan import plan_capacity, runs_together
from analysis.capacity_types import CapacityPlan, ConfigPlan, Demand, PlanInputs, trace_demand
from analysis.capacity_verify import check_points, promise_check, speed_check, verify_plan
from analysis.convert import from_point_result
from analysis.cost import GpuHourPrice
from analysis.errors import AnalysisError
from analysis.types import PointFigures
from runner.cli.commands import CliError, load_plan
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError
from runner.schema.flags import parse_slos
from runner.workloads.prompts import DatasetError, dataset_file
from runner.workloads.traces import TRACE_RATE_WINDOW_S, read_trace, trace_rate

EXIT_NOT_MET = 1
EXIT_BAD_INPUT = 2
EXIT_CHECK_MISSED = 4

PLAN_JSON = TypeAdapter(CapacityPlan)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except (CliError, AnalysisError, ImportFileError, DatasetError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m analysis",
                                     description="Headroom's rules over result files.")
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")
    capacity = commands.add_parser(
        "capacity", help="how many GPUs a demand needs at each engine config",
        description="Size a fleet from measured points: per engine config, one replica's "
        "capacity within the latency targets (its lowest repeat), the replicas and GPUs the "
        "demand needs, and nothing beyond the levels measured.")
    capacity.add_argument("results", type=Path, nargs="+",
                          help="Headroom results files (JSONL) or a run's download")
    demand = capacity.add_argument_group("the demand (one of)")
    demand.add_argument("--rate", type=float, metavar="REQ_PER_S",
                        help="requests/s at peak")
    demand.add_argument("--trace", metavar="NAME",
                        help="a trace file, named as a plan names it (relative to --data-dir)")
    demand.add_argument("--trace-at", default="peak", metavar="peak|pNN",
                        help="size the trace at its busiest window or a percentile (p95)")
    demand.add_argument("--trace-window", type=float, default=TRACE_RATE_WINDOW_S, metavar="S",
                        help=f"window of the trace's rate (default {TRACE_RATE_WINDOW_S:g} s)")
    demand.add_argument("--trace-format", default="auto",
                        choices=["auto", "mooncake", "burstgpt", "csv"])
    demand.add_argument("--data-dir", type=Path, default=Path.cwd(),
                        help="where the trace is (default: here)")
    demand.add_argument("--batch", type=int, metavar="REQUESTS",
                        help="a batch job of this many requests of the run's workload")
    demand.add_argument("--within", type=float, metavar="HOURS",
                        help="the batch job's deadline")
    capacity.add_argument("--slo", action="append", default=[], metavar="METRIC:STAT:MS",
                          help="a latency target such as ttft:p95:2000 (ttft, tpot, itl, e2el "
                          "at p50, p95 or p99; repeatable)")
    capacity.add_argument("--margin", type=float, default=0.0, metavar="PCT",
                          help="headroom on top of the demand, in percent")
    capacity.add_argument("--price", metavar="AMOUNT", help="GPU-hour price")
    capacity.add_argument("--currency", default="USD", help="the price's ISO 4217 code")
    capacity.add_argument("--price-date", type=date.fromisoformat, default=None,
                          metavar="YYYY-MM-DD", help="the price's date (default: today)")
    capacity.add_argument("--json", action="store_true", help="print the plan as JSON")
    check = capacity.add_argument_group("checked against the engine")
    check.add_argument("--verify-plan", type=Path, metavar="OUT.yaml",
                       help="write the sweep plan that loads the chosen config at its "
                       "per-replica rate, for `python -m runner sweep`")
    check.add_argument("--from-plan", type=Path, metavar="SWEEP.yaml",
                       help="the plan that measured the results (the check keeps its checkpoint, "
                       "launch and workload)")
    check.add_argument("--config", metavar="LABEL",
                       help="the engine config to check (default: the one needing fewest GPUs)")
    check.add_argument("--at", type=float, action="append", default=[], metavar="X",
                       help="also load X times the per-replica rate (repeatable; 1 is always "
                       "loaded)")
    check.add_argument("--repeats", type=int, default=2, help="draws of each checked rate")
    check.add_argument("--verified", type=Path, metavar="CHECK.jsonl",
                       help="the check's results: whether the targets held")
    capacity.set_defaults(handler=cmd_capacity)
    return parser


def figures_of(paths: Sequence[Path]) -> list[PointFigures]:
    """Every point of the files, each file a run of its own (runs_together)."""
    runs = [(path.name, [from_point_result(p) for p in load_result_file(path)])
            for path in paths]
    points = runs_together(runs)
    if not points:
        raise CliError("the results hold no points")
    return points


def demand_of(args: argparse.Namespace) -> Demand:
    given = [name for name, value in (("--rate", args.rate), ("--trace", args.trace),
                                      ("--batch", args.batch)) if value is not None]
    if len(given) != 1:
        raise CliError("give the demand as one of --rate, --trace or --batch with --within")
    if args.batch is not None:
        if args.within is None:
            raise CliError("--batch needs --within HOURS, the job's deadline")
        return Demand(kind="batch", requests=args.batch, hours=args.within)
    if args.within is not None:
        raise CliError("--within is the deadline of a --batch job")
    if args.trace is not None:
        source = read_trace(dataset_file(args.trace, args.data_dir), args.trace_format)
        return trace_demand(trace_rate(source, args.trace_window, args.trace_at), args.trace)
    return Demand(kind="rate", rate=args.rate)


def price_of(args: argparse.Namespace) -> GpuHourPrice | None:
    if args.price is None:
        return None
    try:
        amount = Decimal(args.price)
    except InvalidOperation:
        raise CliError(f"--price {args.price!r} is not a number") from None
    return GpuHourPrice(amount=amount, currency=args.currency.upper(),
                        as_of=args.price_date or date.today())


def cmd_capacity(args: argparse.Namespace) -> int:
    points = figures_of(args.results)
    inputs = PlanInputs(demand=demand_of(args), slos=parse_slos(args.slo),
                        margin_pct=args.margin, price=price_of(args))
    plan = plan_capacity(points, inputs, today=date.today())
    if args.json:
        print(json.dumps({"met": plan.met, "plan": PLAN_JSON.dump_python(plan, mode="json")},
                         indent=1))
    else:
        for line in plan_lines(plan):
            print(line)
    if args.verify_plan is not None:
        _write_check(args, plan)
    if args.verified is not None:
        return _judge_check(args, plan, points)
    return 0 if plan.met else EXIT_NOT_MET


def plan_lines(plan: CapacityPlan) -> list[str]:
    lines = [str(plan.headline), ""]
    lines += [str(note) for note in plan.notes]
    for config in plan.configs:
        lines += ["", f"{config.name} ({config.config_label}): {config.status}"]
        lines += [f"  {sentence}" for sentence in config.sentences]
    return lines


def _chosen(args: argparse.Namespace, plan: CapacityPlan) -> ConfigPlan:
    if args.config is None:
        best = plan.best
        if best is None:
            raise CliError("no engine config meets the demand: nothing to check")
        return best
    found = next((c for c in plan.configs if c.config_label == args.config), None)
    if found is None or not found.sized:
        raise CliError(f"engine config {args.config} has no plan to check")
    return found


def _write_check(args: argparse.Namespace, plan: CapacityPlan) -> None:
    if args.from_plan is None:
        raise CliError("--verify-plan needs --from-plan, the plan that measured the results")
    config = _chosen(args, plan)
    assert config.share is not None
    multiples = [1.0, *(x for x in args.at if x != 1.0)]
    demand = plan.inputs.demand
    check = verify_plan(load_plan(args.from_plan), config,
                        [config.share * x for x in multiples], repeats_each=args.repeats,
                        trace_rate=demand.rate if demand.kind == "trace" else None)
    args.verify_plan.write_text(
        yaml.safe_dump(check.model_dump(mode="json"), sort_keys=False, allow_unicode=True),
        encoding="utf-8")
    print(f"\ncheck of {config.name} written to {args.verify_plan}: run it with "
          f"python -m runner sweep {args.verify_plan} --out CHECK.jsonl", file=sys.stderr)


def _judge_check(args: argparse.Namespace, plan: CapacityPlan,
                 points: list[PointFigures]) -> int:
    config = _chosen(args, plan)
    measured = [p for p in figures_of([args.verified]) if p.config_label == config.config_label]
    if not measured:
        raise CliError(f"{args.verified} holds no point of {config.config_label}")
    checks = check_points(measured, plan.inputs.slos)
    print(f"\nchecked against the engine, {config.name}:")
    for found in checks:
        print(f"  {found.sentence}")
    speed = speed_check(points, measured, config)
    if speed is not None:
        print(f"  {speed.sentence}")
    return 0 if promise_check(checks, config).held else EXIT_CHECK_MISSED
