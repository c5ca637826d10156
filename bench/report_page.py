"""Server time of the public report page /r/<token>/ with its charts; figure in docs/performance.md.

    .venv/bin/python bench/report_page.py          # about a minute
    .venv/bin/python bench/report_page.py --quick  # smoke test: seconds, the target not judged

Target (issue 5): a report page with three charts (throughput vs latency with the operating
point, the queue evidence of baseline and candidate, node scaling) answers in under 200 ms of
server time. Since issue 44 each side's queue evidence has its request timeline too.

The script creates its own PostgreSQL database (--database-url, default headroom_report_bench on the
local server), migrates it, stores a realistic sweep through benchmarks.storage.points.store_point
(4 engine configs x 8 load levels x 2 repeats = 64 points, 2,000 engine samples and 256 request
records each, plus an 8-replica node run), builds a report with every item, and requests the page
through Django's test client, logged out, DEBUG off: full middleware, view, queries, content builder
and template rendering, no network. The first request in the process (templates compiled,
translations loaded, connection opened) is reported apart from the warm repeats. The database is
dropped at the end (--keep leaves it).

--quick stores QUICK's sweep (2 configs x 3 loads, 100 samples and 16 records each, a 2-replica
node run) instead, and exits 0 whatever the timings (they say nothing at that size);
tests/bench runs it, each run on a database of its own (--database-url), so the script keeps
working.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/headroom_report_bench"
TARGET_S = 0.200
# The report compares these two points (max_num_seqs, requests); every sweep has them.
BASELINE, CANDIDATE = (8, 1024), (1024, 1024)
INPUT_TOKENS, OUTPUT_TOKENS = 64, 256  # per request
# The chart areas the report page must have: the curve, both queue charts, node scaling, both
# request timelines.
CHARTS = ("curve-chart", "queue-chart-0", "queue-chart-1", "scaling-chart", "timeline-chart-0",
          "timeline-chart-1")


@dataclass(frozen=True)
class Sweep:
    """What the script stores: configs x loads x repeats points, and one node run."""

    configs: tuple[int, ...]
    loads: tuple[int, ...]
    repeats: int
    samples: int
    requests: int
    node_replicas: int


FULL = Sweep(configs=(8, 64, 256, 1024), loads=(16, 32, 64, 128, 256, 512, 1024, 2048),
             repeats=2, samples=2_000, requests=256, node_replicas=8)
# Three load levels per config: the fewest a knee (the operating point) is looked for in.
QUICK = Sweep(configs=(8, 1024), loads=(16, 256, 1024), repeats=1, samples=100, requests=16,
              node_replicas=2)


def _admin_url(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/postgres"))


def _recreate(url: str, drop_only: bool = False) -> None:
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(_admin_url(url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        if not drop_only:
            conn.execute(f'CREATE DATABASE "{name}"')


def _metrics(completed: int, duration: float, latencies_ms: dict[str, float]):
    """Aggregates whose rates are their counts over the window (analysis.checks)."""
    from runner.schema.result import (
        Metrics,
    )

    return Metrics(
        duration=duration, completed=completed, failed=0, short_responses=0, valid=True,
        total_input_tokens=INPUT_TOKENS * completed, total_output_tokens=OUTPUT_TOKENS * completed,
        request_throughput=completed / duration,
        output_throughput=OUTPUT_TOKENS * completed / duration,
        total_token_throughput=(INPUT_TOKENS + OUTPUT_TOKENS) * completed / duration,
        median_ttft_ms=50.0, **latencies_ms,
    )


def _result(sweep: Sweep, seqs: int, requests: int, repeat: int, replicas: int = 1):
    """A burst of `requests` to each replica, served in waves of max_num_seqs: throughput grows
    with the load until the engine's cap, latency after it, and every figure agrees with the
    others, so the report's curve, operating point and scaling read it as a valid point."""
    from runner.schema.engine_config import Checkpoint, EngineConfig
    from runner.schema.plan import LoadSpec, WorkloadSpec
    from runner.schema.records import EngineSample, RequestRecord
    from runner.schema.result import (
        EngineInfo,
        Hardware,
        PointResult,
        Provenance,
        ReplicaResult,
        Window,
        point_key,
    )
    from runner.schema.samples import QueueSummary

    admitted = min(requests, seqs)
    waves = math.ceil(requests / seqs)
    # A larger batch makes each token a little slower; a repeat runs 2% slower than the first.
    wave_s = (0.05 + OUTPUT_TOKENS * 0.02 * (1 + admitted / 1024)) * (1.02 if repeat else 1.0)
    duration = waves * wave_s
    # A burst's request ends with its wave: the q-th quantile of E2EL is the end of wave ceil(q n).
    latencies = {
        f"{name}_e2el_ms": math.ceil(q * waves) * wave_s * 1000
        for name, q in (("median", 0.5), ("p95", 0.95), ("p99", 0.99))
    }
    latencies["median_tpot_ms"] = wave_s / OUTPUT_TOKENS * 1000
    config = EngineConfig(max_num_seqs=seqs)
    load = LoadSpec(shape="burst", num_requests=requests)  # to every replica
    window = Window(start=0.0, end=duration)
    samples = [
        EngineSample(t=i * duration / sweep.samples, running=float(min(admitted, i)),
                            waiting=float(max(0, requests - i)),
                            kv_usage=min(1.0, i / sweep.samples), replica=i % replicas)
        for i in range(sweep.samples)
    ]
    e2el_s = latencies["median_e2el_ms"] / 1000
    records = [
        RequestRecord(index=i, intended_send=0.0, actual_send=0.0001, ttft=0.05,
                             e2el=e2el_s, completed_at=e2el_s,
                             chunk_times=[0.05 + 0.01 * k for k in range(16)],
                             chunk_tokens=[1] * 16, prompt_tokens=INPUT_TOKENS,
                             output_tokens=OUTPUT_TOKENS, finish_reason="length", status=200)
        for i in range(sweep.requests)
    ]
    per_replica = [
        ReplicaResult(replica=r, base_url=f"http://127.0.0.1:{8000 + r}", gpu=str(r),
                             window=window, metrics=_metrics(requests, duration, latencies))
        for r in range(replicas)
    ] if replicas > 1 else []
    return PointResult(
        key=point_key(config, load, repeat) + (f"|x{replicas}" if replicas > 1 else ""),
        engine_config=config, load=load, workload=WorkloadSpec(), repeat=repeat,
        replicas=replicas, window=window,
        metrics=_metrics(requests * replicas, duration, latencies),
        queue=QueueSummary(samples=sweep.samples, mean_running=float(admitted),
                                  mean_waiting=float(requests - admitted), peak_running=admitted,
                                  peak_waiting=requests, peak_kv_usage=0.9, mean_kv_usage=0.6,
                                  preemptions=0),
        provenance=Provenance(
            hardware=Hardware(host="bench-host", gpu_name="NVIDIA H200", gpu_count=8),
            engine=EngineInfo(launch_style="serve", version="0.11.0"),
            checkpoint=Checkpoint(model="Qwen/Qwen3-30B-A3B", revision="a" * 40,
                                         precision="bf16"),
            client_version="headroom-runner 0.1.0", started_at="2026-11-30T15:00:00Z"),
        per_replica=per_replica, samples=samples, requests=records,
    )


def _populate(sweep: Sweep):
    from django.contrib.auth import get_user_model

    from benchmarks.models import Benchmark, Checkpoint, Node, Runtime, Workload
    from benchmarks.storage.points import store_point
    from reports.models import Item, Report

    user = get_user_model().objects.create_user("bench")
    node = Node.objects.create(queue="gpu-bench", hostname="bench-host", gpu_name="NVIDIA H200",
                               gpu_count=8, launch_style="serve")
    benchmark = Benchmark.objects.create(
        name="bench sweep", source="imported", node=node,
        runtime=Runtime.objects.create(version="0.11.0"),
        checkpoint=Checkpoint.objects.create(repo="Qwen/Qwen3-30B-A3B", revision="a" * 40),
        workload=Workload.objects.create(), plan={}, state="succeeded", created_by=user)
    points = {}
    for seqs in sweep.configs:
        for requests in sweep.loads:
            for repeat in range(sweep.repeats):
                points[(seqs, requests, repeat)] = store_point(
                    benchmark, _result(sweep, seqs, requests, repeat))
    node_point = store_point(benchmark,
                             _result(sweep, *CANDIDATE, 0, replicas=sweep.node_replicas))
    report = Report(
        title="Bench report", language="ko", benchmark=benchmark,
        baseline_point=points[(*BASELINE, 0)], candidate_point=points[(*CANDIDATE, 0)],
        scaling_point=node_point, scaling_reference=points[(*CANDIDATE, 0)],
        items=list(Item.values), created_by=user)
    report.issue_token()  # the link's token: only its digest is stored
    report.save()
    return report


def main() -> int:
    warnings.filterwarnings("ignore", message="No directory at")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: a few small points, 3 repeats, the target not judged")
    args = parser.parse_args()
    sweep = QUICK if args.quick else FULL
    if args.quick:
        args.repeats = 3

    _recreate(args.database_url)
    os.environ["DATABASE_URL"] = args.database_url
    os.environ["DEBUG"] = "0"
    # The test client speaks plain HTTP: without this, DEBUG off redirects every page to https.
    os.environ["HEADROOM_HTTPS"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    try:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        report = _populate(sweep)
        print(f"populated in {time.perf_counter() - started:.1f} s: "
              f"{report.benchmark.points.count()} points, {sweep.samples} samples each")
        client = Client(HTTP_HOST="localhost")
        url = f"/r/{report.issued_token}/"

        def timed() -> tuple[float, int, int]:
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                response = client.get(url)
                elapsed = time.perf_counter() - t0
            assert response.status_code == 200, response.status_code
            return elapsed, len(queries), len(response.content)

        first, queries, size = timed()
        warm = [timed()[0] for _ in range(args.repeats)]
        body = client.get(url).content.decode()
        missing = [chart for chart in CHARTS if f'id="{chart}"' not in body]
        charts = len(CHARTS) - len(missing)
        median, worst = statistics.median(warm), max(warm)
        p95 = sorted(warm)[int(0.95 * (len(warm) - 1))]
        print("| page | first request | warm median | warm p95 | warm max | queries | HTML |")
        print("|---|---|---|---|---|---|---|")
        print(f"| /r/<token>/ ({charts} chart areas) | {first * 1000:.0f} ms | "
              f"{median * 1000:.0f} ms | {p95 * 1000:.0f} ms | {worst * 1000:.0f} ms | "
              f"{queries} | {size / 1024:.0f} KiB |")
        ok = median < TARGET_S and p95 < TARGET_S
        verdict = "not judged (--quick)" if args.quick else "PASS" if ok else "FAIL"
        print(f"target < {TARGET_S * 1000:.0f} ms (warm median and p95): {verdict}")
        if missing:
            # A page without one of its charts is not the page the target is about.
            print(f"the page has no {', '.join(missing)}: the stored sweep no longer makes "
                  "every chart", file=sys.stderr)
            return 1
        return 0 if ok or args.quick else 1
    finally:
        connection.close()
        if not args.keep:
            _recreate(args.database_url, drop_only=True)


if __name__ == "__main__":
    sys.exit(main())
