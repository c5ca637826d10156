"""What each `python -m runner` command does: read the plan, run it, print what was measured."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError
from runner.measure.summary import print_summary, slo_text
from runner.plan_text import PlanTextError, read_plan_data
from runner.regression import REGRESSION_TOLERANCE_PCT, compare_runs
from runner.results import ResultFileError, append_point, finished_keys, read_points
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import (
    SweepPlan,
)
from runner.schema.result import PointResult
from runner.schema.search_record import SearchRecord
from runner.search.observation import Observation, observe

console = Console(stderr=True)
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3


class CliError(Exception):
    """A problem with what the user gave us; printed as one clear line, exit status 2."""


def credentials_from_args(args: argparse.Namespace, plan: SweepPlan) -> Credentials:
    """The attached server's key from the environment variable --api-key-env names."""
    name = getattr(args, "api_key_env", None)
    if not name:
        return NO_CREDENTIALS
    if plan.launch.style != "attach":
        raise CliError("--api-key-env is for an attached server (--launch attach)")
    key = os.environ.get(name, "")
    if not key:
        raise CliError(f"--api-key-env {name}: the environment variable {name} is not set")
    try:
        return Credentials(api_key=key)
    except ValueError:
        raise CliError(
            f"--api-key-env {name}: the key must be printable ASCII on one line"
        ) from None


def cmd_build_tiny_model(args: argparse.Namespace) -> int:
    from runner.engine.tinymodel import build_tiny_model

    path = build_tiny_model(args.directory)
    console.print(f"tiny model written to {path}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    plan = validate_plan(plan_from_bench_args(args), source="command line")
    if args.dry_run:
        print_plan(plan)
        return 0
    return run_and_report(plan, args, resume=False)


def cmd_sweep(args: argparse.Namespace) -> int:
    plan = with_stability_args(with_search_args(load_plan(args.plan), args), args)
    if args.dry_run:
        print_plan(plan)
        return 0
    return run_and_report(plan, args, resume=args.resume)


def cmd_node(args: argparse.Namespace) -> int:
    if args.replicas < 2:
        raise CliError("--replicas must be at least 2 for a node run (use `sweep` for one engine)")
    plan = with_stability_args(load_plan(args.plan), args).model_copy(
        update={"replicas": args.replicas})
    plan = validate_plan(plan.model_dump(), source=str(args.plan))
    if args.dry_run:
        print_plan(plan)
        return 0
    return run_and_report(plan, args, resume=args.resume)


def cmd_import(args: argparse.Namespace) -> int:
    points: list[PointResult] = []
    for path in args.files:
        try:
            points.extend(load_result_file(path))
        except ImportFileError as exc:
            raise CliError(str(exc)) from None
    for point in points:
        append_point(args.out, point)
    console.print(f"imported {len(points)} point(s) into {args.out}")
    print_summary(points)
    return 0


EXIT_REGRESSED = 1


def _points_of(path: Path) -> list[PointResult]:
    try:
        points = load_result_file(path)
    except ImportFileError as exc:
        raise CliError(str(exc)) from None
    if not points:
        raise CliError(f"{path} holds no points")
    return points


def cmd_compare(args: argparse.Namespace) -> int:
    """The candidate's points against the baseline's (runner.regression); with
    --fail-on-regression the exit status is 1 when a config regressed or a figure is not a
    finite number (no verdict can pass on it), for CI pipelines."""
    tolerance = args.fail_on_regression
    report = compare_runs(_points_of(args.baseline), _points_of(args.candidate),
                          REGRESSION_TOLERANCE_PCT if tolerance is None else tolerance)
    # Plain print: CI logs keep the lines as they are.
    for line in report.lines():
        print(line)
    if report.verdict == "not comparable" and not report.configs:
        raise CliError("the two files share no setting (engine config, load, replicas and "
                       "spec): nothing to compare")
    if tolerance is not None and report.not_finite:
        print("error: not a finite number, so no verdict: " + " | ".join(report.not_finite),
              file=sys.stderr)
        return EXIT_REGRESSED
    if tolerance is not None and report.verdict == "regressed":
        print(f"error: regression beyond {tolerance:g}% in "
              f"{', '.join(report.regressed_configs)}", file=sys.stderr)
        return EXIT_REGRESSED
    return 0


# ---------------------------------------------------------------------------------------------
# Plans
# ---------------------------------------------------------------------------------------------


def load_plan(path: Path) -> SweepPlan:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read plan {path}: {exc.strerror}") from None
    try:
        data = read_plan_data(text, str(path))
    except PlanTextError as exc:
        raise CliError(str(exc)) from None
    return validate_plan(data, source=str(path))


def with_search_args(plan: SweepPlan, args: argparse.Namespace) -> SweepPlan:
    """The plan with the search the flags ask for; without --search the flags are refused
    (they would be silently ignored) and the plan's own search stands."""
    if args.search is None:
        given = [flag for flag, value in (("--tolerance", args.tolerance),
                                           ("--point-budget", args.point_budget),
                                           ("--time-budget", args.time_budget),
                                           ("--slo", args.slo)) if value]
        if given:
            raise CliError(f"{', '.join(given)} set an adaptive search: add --search knee or "
                           "--search slo")
        return plan
    search: dict[str, Any] = {"objective": args.search, "limits": dict(args.slo)}
    if args.tolerance is not None:
        search["tolerance_pct"] = args.tolerance
    if args.point_budget is not None:
        search["point_budget"] = args.point_budget
    if args.time_budget is not None:
        search["time_budget_s"] = args.time_budget
    return validate_plan({**plan.model_dump(mode="json"), "search": search},
                         source="--search flags")


def with_stability_args(plan: SweepPlan, args: argparse.Namespace) -> SweepPlan:
    """The plan with the stability flags given; the plan's own settings where none is."""
    update: dict[str, Any] = {}
    if args.redraw_disturbed is not None:
        update["redraw_disturbed"] = args.redraw_disturbed
    if args.no_control_point:
        update["control_point"] = False
    if args.end_control is not None:
        update["end_control"] = args.end_control
    if args.converge is not None:
        update["converge_pct"] = args.converge
    if args.max_repeats is not None:
        if args.converge is None and plan.stability.converge_pct is None:
            raise CliError("--max-repeats caps convergence: add --converge PCT")
        update["max_repeats"] = args.max_repeats
    if not update:
        return plan
    return validate_plan({**plan.model_dump(mode="json"),
                          "stability": {**plan.stability.model_dump(), **update}},
                         source="the stability flags")


def validate_plan(data: dict[str, Any], *, source: str) -> SweepPlan:
    try:
        return SweepPlan.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'plan'}: {e['msg']}" for e in exc.errors()
        )
        raise CliError(f"{source}: {problems}") from None


def plan_from_bench_args(args: argparse.Namespace) -> dict[str, Any]:
    low, _, high = args.input_tokens.partition("-")
    try:
        input_min, input_max = int(low), int(high or low)
        extra_body = json.loads(args.extra_body)
    except ValueError as exc:
        raise CliError(
            f"--input-tokens takes N or MIN-MAX, --extra-body takes JSON ({exc})"
        ) from None
    try:
        client_cpus = [int(cpu) for cpu in args.client_cpus.split(",") if cpu.strip()]
    except ValueError:
        raise CliError(
            f"--client-cpus takes CPU numbers like 6,7, got {args.client_cpus!r}"
        ) from None
    config: dict[str, Any] = {
        setting.name: getattr(args, setting.name)
        for setting in EngineConfig.settings()
        if getattr(args, setting.name) is not None
    }
    config["extra_args"] = args.engine_arg
    launch: dict[str, Any] = {"style": args.launch}
    if args.image:
        launch["image"] = args.image
    if args.base_url:
        launch["base_url"] = args.base_url
    return {
        "name": "bench",
        "checkpoint": {
            "model": args.model,
            "revision": args.revision,
            "served_model_name": args.served_model_name,
            "precision": args.precision,
            "trusted": args.trusted_checkpoint,
        },
        "launch": launch,
        "engine_configs": [config],
        "loads": [_load_from_bench_args(args)],
        "workload": {
            "kind": args.workload,
            "dataset_path": args.dataset,
            "input_tokens_min": input_min,
            "input_tokens_max": input_max,
            "output_tokens": args.output_tokens,
            "temperature": args.temperature,
            "ignore_eos": not args.no_ignore_eos,
            "endpoint": args.endpoint,
            "stream": not args.no_stream,
            "keep_outputs": args.keep_outputs,
            "extra_body": extra_body,
            **_trace_from_bench_args(args),
            **_conversation_from_bench_args(args),
        },
        "client": {
            "processes": args.client_processes,
            "request_timeout_s": args.request_timeout,
            "cpus": client_cpus,
            "idle_nap_us": args.client_idle_nap_us,
        },
        "replicas": args.replicas,
        "warmup_requests": args.warmup_requests,
        "sample_interval_s": args.sample_interval,
        "goodput": args.goodput,
        "quality": {"path": args.quality} if args.quality else None,
    }


def _trace_from_bench_args(args: argparse.Namespace) -> dict[str, Any]:
    """The trace flags given, as WorkloadSpec fields (the schema refuses them on another kind)."""
    trace: dict[str, Any] = {}
    if args.trace_format is not None:
        trace["trace_format"] = args.trace_format
    if args.trace_span is not None:
        trace["trace_span_s"] = args.trace_span
    if args.trace_refuse_longer:
        trace["trace_longer"] = "refuse"
    if args.trace_block_tokens is not None:
        trace["trace_block_tokens"] = args.trace_block_tokens
    return trace


def _conversation_from_bench_args(args: argparse.Namespace) -> dict[str, Any]:
    """--conversation-turns-max as a WorkloadSpec field (the schema refuses it on another kind)."""
    if args.conversation_turns_max is None:
        return {}
    return {"conversation_turns_max": args.conversation_turns_max}


def _load_from_bench_args(args: argparse.Namespace) -> dict[str, Any]:
    # Flags that the chosen shape would ignore are refused: a run must not measure another load
    # than the command line reads as.
    if args.rate is not None and args.shape != "rate":
        raise CliError("--rate needs --shape rate")
    if args.burstiness is not None and args.rate is None:
        raise CliError("--burstiness shapes the gaps of a rate load: give --shape rate --rate too")
    if args.max_concurrency is not None and args.shape == "concurrency":
        raise CliError(
            "--max-concurrency caps a rate or burst load; a concurrency load has --concurrency"
        )
    if args.speed is not None and args.shape != "trace":
        raise CliError("--speed replays a trace: give --shape trace --workload trace")
    load: dict[str, Any] = {"shape": args.shape, "num_requests": args.num_requests}
    if args.speed is not None:
        load["speed"] = args.speed
    if args.concurrency is not None:
        load["concurrency"] = args.concurrency
    if args.rate is not None:
        load["rate"] = args.rate
    if args.burstiness is not None:
        load["burstiness"] = args.burstiness
    if args.max_concurrency is not None:
        load["max_concurrency"] = args.max_concurrency
    return load


def print_plan(plan: SweepPlan) -> None:
    from runner.sweep import plan_points

    slos = slo_text(plan.goodput) if plan.goodput else "none"
    table = Table(
        title=Text(f"plan {plan.name}: {plan.checkpoint.model} ({plan.launch.style})"),
        caption=Text(f"goodput SLOs: {slos}" + (
            f"; adaptive search for the {plan.search.describe()}: these are its candidates, "
            "it measures only where the answer can change" if plan.search else "")),
    )
    for column in ("#", "key", "engine config", "load", "repeat", "replicas"):
        table.add_column(column)
    for number, point in enumerate(plan_points(plan), start=1):
        cells = [
            str(number),
            point.key,
            point.config.label(),
            point.load.label(),
            str(point.repeat),
            str(plan.replicas),
        ]
        table.add_row(*(Text(cell) for cell in cells))
    Console().print(table)


# ---------------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------------


def run_and_report(plan: SweepPlan, args: argparse.Namespace, *, resume: bool) -> int:
    from runner.client.workers import check_client_cpus
    from runner.engine.command import EngineError
    from runner.measure.quality import load_quality
    from runner.sweep import EndControlMissed, SweepIncomplete, plan_points, run_plan
    from runner.sweep import Progress as RunProgress
    from runner.workloads.conversations import check_conversations
    from runner.workloads.traces import check_source

    try:
        check_client_cpus(plan.client)
        # A trace or conversation file that cannot serve the loads is refused before any
        # engine starts.
        check_source(plan.workload, None, plan.loads, plan.warmup_requests)
        check_conversations(plan.workload, None, plan.loads, plan.warmup_requests)
        load_quality(plan.quality, None)  # and a quality file with a bad line (file:line)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    credentials = credentials_from_args(args, plan)
    try:
        skip = finished_keys(args.out) if resume else frozenset()
    except ResultFileError as exc:
        raise CliError(f"cannot resume: {exc}") from None
    workdir = args.workdir or args.out.parent / f"{args.out.stem}-work"
    total = sum(1 for p in plan_points(plan) if p.key not in skip)
    known: dict[str, Observation] = {}
    searches: list[SearchRecord] = []
    if plan.search is not None:
        # A search reads the points it already has rather than skipping them blind.
        known = {p.key: observe(p) for p in read_points(args.out).points} if skip else {}
        total = min(total, plan.search.point_budget or total)
    if skip:
        console.print(f"resuming: {len(skip)} point(s) already in {args.out}, {total} to go")
    points: list[PointResult] = []
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as bars:
        overall = bars.add_task("points", total=total)
        requests = bars.add_task("requests", total=None)

        def show(progress: RunProgress) -> None:
            bars.update(overall, completed=progress.points_done)
            bars.update(
                requests,
                completed=progress.requests_done,
                total=progress.requests_total or None,
                description=f"requests  {progress.note[:60]}",
            )

        failures: list[str] = []
        missed = ""
        try:
            for point in run_plan(
                plan, workdir, skip_keys=skip, on_progress=show, credentials=credentials,
                on_search=searches.append, known=known,
            ):
                append_point(args.out, point)
                points.append(point)
                bars.update(overall, completed=len(points))
        except SweepIncomplete as exc:
            failures = exc.failures
        except EndControlMissed as exc:
            missed = str(exc)  # every planned point was measured: the sweep is complete
        except EngineError as exc:
            failures = [str(exc)]
    # Printed after the progress bars have closed, so nothing interleaves with them.
    if points:
        print_summary(points)
        print_quality(points)
        console.print(f"{len(points)} point(s) appended to {args.out}")
    if searches:
        search_path = args.out.with_suffix(".search.json")
        search_path.write_text(searches[-1].model_dump_json(indent=1) + "\n", encoding="utf-8")
        print_search(searches[-1])
        console.print(f"the search's record written to {search_path}")
    for failure in [*failures, *([missed] if missed else [])]:
        print(f"not measured: {failure}", file=sys.stderr)
    return EXIT_INCOMPLETE if failures else 0


def print_search(record: SearchRecord) -> None:
    """What the search did with each engine config, and what it cost beside the grid."""
    table = Table(title=Text(f"adaptive search: {record.spec.describe()}"))
    for column in ("engine config", "search", "points", "answer tok/s", "why"):
        table.add_column(column)
    for cell in record.cells:
        answer = "-" if cell.answer is None else f"{cell.answer:.1f}"
        table.add_row(*(Text(v) for v in (cell.label, cell.status, str(cell.points), answer,
                                          cell.reason)))
    Console().print(table)
    share = (f" ({100 * record.spent_s / record.grid_estimate_s:.0f}%)"
             if record.grid_estimate_s else "")
    console.print(f"{record.points_measured} of {record.grid_points} points; engine time "
                  f"{record.spent_s:.0f} s{share} against about {record.grid_estimate_s:.0f} s "
                  "for the full grid")


def print_quality(points: list[PointResult]) -> None:
    """One line per point with a quality set: its score over its items."""
    for point in points:
        q = point.quality
        if q is not None:
            missing = f", {q.errors} without an answer" if q.errors else ""
            console.print(Text(f"quality {point.key}: {q.passed}/{q.items} passed "
                               f"({q.score:.0%}) on {q.file}{missing}"))
