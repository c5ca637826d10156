"""Record a ground-truth class on real CPU engines: `python -m tests.analysis.ground_truth.record
CLASS [--repeat N]` writes recordings/CLASS-1.jsonl .. CLASS-N.jsonl, one compact PointResult a
line per repeat, after checking that each limit bound as built (classes.evidence_problems).

The repeats share one engine per config (run_plan's repeats), so a class costs one engine start
per config, not per recording. A compact point drops what
analysis.convert.from_point_result does not read (per-request records, engine
samples, telemetry readings), and the recorder proves it judges the same as the full one.

Record on an otherwise idle host: every CPU engine binds its worker to CPU 0
(runner.engine.command._cpu_env), so a second engine running beside the recorder's slows its steps.
A run whose evidence fails writes nothing, so the fixtures already there stay.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from analysis.convert import from_point_result
from runner.schema.result import PointResult
from runner.sweep import run_plan
from tests.analysis.ground_truth.classes import (
    CLASSES,
    RECORDINGS,
    GroundTruthClass,
    evidence_problems,
)
from tests.repository import ROOT

SPIN = "while True: pass"


@contextmanager
def spinning() -> Iterator[list[subprocess.Popen[bytes]]]:
    """A list for start_spinning to fill; every process in it is killed on the way out, however
    the block ends. The spinning starts late, once the engine is up: it should start on idle
    CPUs."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def start_spinning(procs: list[subprocess.Popen[bytes]], gt: GroundTruthClass) -> None:
    """One busy process pinned to each of the class's hog CPUs (a CPU listed twice gets two),
    at its niceness."""
    for cpu in gt.hog_cpus:
        proc = subprocess.Popen([sys.executable, "-c", SPIN])
        procs.append(proc)
        os.sched_setaffinity(proc.pid, {cpu})
        if gt.hog_nice:
            os.setpriority(os.PRIO_PROCESS, proc.pid, gt.hog_nice)


def compact(point: PointResult) -> PointResult:
    """The point without its per-request records, engine samples, telemetry readings, replica
    copies and engine log; provenance keeps the engine's version and command and the host."""
    prov = point.provenance
    if prov is not None:
        engine = prov.engine.model_copy(update={"log_tail": None, "log_path": None})
        packages = {name: v for name, v in prov.packages.items() if "vllm" in name}
        prov = prov.model_copy(update={"engine": engine, "packages": packages})
    return point.model_copy(update={
        "requests": [], "samples": [], "telemetry_samples": [], "per_replica": [],
        "provenance": prov,
    })


def compact_line(point: PointResult) -> bytes:
    """The compact point as one JSON line, checked to judge exactly as the full point."""
    line = compact(point).model_dump_json().encode()
    again = PointResult.model_validate_json(line)
    assert from_point_result(again) == from_point_result(point), point.key
    return line


def read_recording(path: Path) -> list[PointResult]:
    return [PointResult.model_validate_json(line) for line in path.read_bytes().splitlines()
            if line.strip()]


def recordings(name: str) -> list[Path]:
    return sorted(RECORDINGS.glob(f"{name}-*.jsonl"))


def record(gt: GroundTruthClass, model: Path, repeats: int, workdir: Path) -> list[Path]:
    """Run the class's plan with `repeats` repeats and write one recording per repeat."""
    plan = gt.plan(str(model), repeats=repeats)
    lines: dict[int, list[bytes]] = {}
    points: list[PointResult] = []
    with spinning() as procs:
        for point in run_plan(plan, workdir,
                              on_engine_started=lambda _s: start_spinning(procs, gt)):
            lines.setdefault(point.repeat, []).append(compact_line(point))
            points.append(point)
            print(summary_line(point), flush=True)
    problems = evidence_problems(gt, points)
    for problem in problems:
        print(f"EVIDENCE: {problem}", file=sys.stderr)
    if problems:
        raise SystemExit(f"{gt.name}: the limit did not bind as built ({len(problems)} problems)")
    RECORDINGS.mkdir(exist_ok=True)
    paths = []
    for repeat, rows in sorted(lines.items()):
        path = RECORDINGS / f"{gt.name}-{repeat + 1}.jsonl"
        path.write_bytes(b"\n".join(rows) + b"\n")
        paths.append(path)
    return paths


def summary_line(p: PointResult) -> str:
    q, c = p.queue, p.client
    return (
        f"{p.key}: {p.metrics.output_throughput:.0f} tok/s over {p.metrics.duration:.1f} s, "
        f"{q.samples} samples; running mean {q.mean_running} peak {q.peak_running}, waiting "
        f"mean {q.mean_waiting} peak {q.peak_waiting}, tokens/step {q.mean_tokens_per_step}, "
        f"KV peak {q.peak_kv_usage}, preemptions {q.preemptions}, at cap "
        f"{q.running_while_waiting_s}; client saturated {c.saturated} cpu {c.cpu_fraction} "
        f"lag p99 {c.loop_lag_p99_ms}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=[*CLASSES, "all"])
    parser.add_argument("--repeat", type=int, default=3)
    default_model = os.environ.get("HEADROOM_TINY_MODEL", str(ROOT / "var" / "tiny-model"))
    parser.add_argument("--model", type=Path, default=Path(default_model))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    names = list(CLASSES) if args.name == "all" else [args.name]
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"ground-truth-{name}-") as workdir:
            for path in record(CLASSES[name], args.model, args.repeat, Path(workdir)):
                print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
