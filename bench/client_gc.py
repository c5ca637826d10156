"""Garbage-collection pauses inside the load generator during a point, with the collector quieted
for the load (runner.client.job.quiet_collector: the old heap frozen, as `vllm bench serve` does,
and no full collection until the load ends) and without.

A collection runs on the client's event loop, so every arrival during it is stamped late. This
runs runner.client.workers.run_load in the caller's process (one target, one process: the in-process
path) against tests/runner/fakeserver.py (a real aiohttp server speaking vLLM's streaming API) in
its own process. Server pinned to CPU 0, client to CPU 1. Each run is a fresh process, so the
collector's state starts the same; "as Python has it" replaces quiet_collector with a no-op.
The arms alternate, --pairs pairs per workload. Per run: collections of each generation while
the load ran, the longest full (generation 2) pause, all pauses together, the point's own
loop-lag figures (ClientHealth, which see a pause as lag), and the process's peak memory (what
holding full collections back could cost).

Run: .venv/bin/python bench/client_gc.py [--pairs 3] (about two minutes; prints a Markdown table).
Quick: .venv/bin/python bench/client_gc.py --quick (one pair of QUICK's small loads, seconds: the
same runs, too short to show a pause; tests/bench runs it so the script keeps working).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SERVER_CPU, CLIENT_CPU = 0, 1
WORKLOADS = {  # name: LoadSpec fields
    "burst of 3,000": {"shape": "burst", "num_requests": 3000},
    "closed loop of 64, 6,000 requests": {
        "shape": "concurrency", "num_requests": 6000, "concurrency": 64},
}
QUICK = {
    "burst of 100": {"shape": "burst", "num_requests": 100},
    "closed loop of 8, 200 requests": {
        "shape": "concurrency", "num_requests": 200, "concurrency": 8},
}
OUTPUT_TOKENS = 32
CHUNK_INTERVAL_S = 0.001


def _serve(port_file: str) -> None:
    os.sched_setaffinity(0, {SERVER_CPU})
    from tests.runner.fakeserver import FakeVllm

    server = FakeVllm().start()
    server.interval_s = CHUNK_INTERVAL_S
    with open(port_file, "w") as f:
        f.write(server.base_url)
    while True:
        time.sleep(3600)


def _one_run(base_url: str, load_fields: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """In a fresh process: one point, the collector's pauses recorded by gc.callbacks."""
    os.sched_setaffinity(0, {CLIENT_CPU})
    from runner.client import workers
    from runner.client.schedule import Target
    from runner.client.workers import run_load
    from runner.schema.plan import ClientSpec, LoadSpec, WorkloadSpec
    from runner.workloads.prompts import build_prompts

    if not quiet:
        workers.quiet_collector = contextlib.nullcontext  # type: ignore[assignment]
    workload = WorkloadSpec(output_tokens=OUTPUT_TOKENS)
    load = LoadSpec(**load_fields)
    prompts = build_prompts(workload, load.num_requests)
    collections: list[tuple[float, int, float]] = []  # (start, generation, ms)
    started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.monotonic()
        else:
            collections.append(
                (started[0], info["generation"], (time.monotonic() - started[0]) * 1000)
            )

    heap = len(gc.get_objects())
    gc.callbacks.append(on_gc)
    outcome = run_load(
        [Target(0, base_url, "m")], workload, load,
        ClientSpec(request_timeout_s=60, stall_timeout_s=30), prompts,
    )
    gc.callbacks.remove(on_gc)
    # Only pauses inside the load, from t0 (quiet_collector's own collection comes before it) to
    # the last chunk's arrival (run_load's own work on the records comes after it).
    end = outcome.t0 + max(r.chunk_times[-1] for r in outcome.records if r.chunk_times)
    pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    for start, generation, ms in collections:
        if outcome.t0 <= start <= end:
            pauses[generation].append(ms)
    return {
        "ok": sum(r.ok for r in outcome.records),
        "requests": len(outcome.records),
        "heap": heap,
        "collections": [len(pauses[g]) for g in (0, 1, 2)],
        "full_max_ms": max(pauses[2], default=0.0),
        "all_ms": sum(sum(v) for v in pauses.values()),
        "lag_p99_ms": outcome.health.loop_lag_p99_ms,
        "lag_max_ms": outcome.health.loop_lag_max_ms,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _run_child(base_url: str, load_fields: dict[str, Any], quiet: bool) -> dict[str, Any]:
    code = (
        f"import json, sys; sys.path.insert(0, {ROOT!r}); from bench.client_gc import _one_run; "
        f"print(json.dumps(_one_run({base_url!r}, {load_fields!r}, {quiet!r})))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, check=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smoke test: 1 pair of small loads")
    args = parser.parse_args()
    workloads = QUICK if args.quick else WORKLOADS
    if args.quick:
        args.pairs = 1
    if not {SERVER_CPU, CLIENT_CPU} <= os.sched_getaffinity(0):
        sys.exit(f"needs CPUs {SERVER_CPU} and {CLIENT_CPU}")
    with tempfile.TemporaryDirectory() as tmp:
        url_file = Path(tmp) / "url"
        code = (f"import sys; sys.path.insert(0, {ROOT!r}); from bench.client_gc import _serve; "
                f"_serve({str(url_file)!r})")
        server = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
        try:
            deadline = time.monotonic() + 30
            while not (url_file.exists() and url_file.read_text()):
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit("the fake server did not start")
                time.sleep(0.1)
            base_url = url_file.read_text()
            rows = []
            for name, load_fields in workloads.items():
                for pair in range(args.pairs):
                    order = (True, False) if pair % 2 == 0 else (False, True)
                    for quiet in order:
                        rows.append((name, quiet, _run_child(base_url, load_fields, quiet)))
        finally:
            server.kill()
            server.wait()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"host: {os.cpu_count()} CPUs, load average {load}")
    print(f"server on CPU {SERVER_CPU}, client on CPU {CLIENT_CPU}; a chunk every "
          f"{CHUNK_INTERVAL_S * 1000:g} ms per stream, {OUTPUT_TOKENS} per request\n")
    print("| workload | collector | requests ok | objects at start | collections gen 0 / 1 / 2 | "
          "longest full collection ms | all collections ms | loop lag p99 ms | loop lag max ms | "
          "peak RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, quiet, r in rows:
        collector = "quieted" if quiet else "as Python has it"
        print(f"| {name} | {collector} | {r['ok']:,} / {r['requests']:,} "
              f"| {r['heap']:,} | {' / '.join(str(c) for c in r['collections'])} "
              f"| {r['full_max_ms']:.1f} | {r['all_ms']:.1f} | {r['lag_p99_ms']:.1f} "
              f"| {r['lag_max_ms']:.1f} | {r['peak_rss_mib']:.0f} |")


if __name__ == "__main__":
    main()
