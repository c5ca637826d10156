"""Runner results for tests, from runner.schema, with figures that agree with their own counts.

The one place tests build Metrics and PointResult objects. The defaults are a point that the
stored-point checks (analysis/checks.py) accept: a burst of 100 requests to
max_num_seqs=256, every one completed with 64 input and 256 output tokens (WorkloadSpec's
default), over a 10 s window:
25,600 output tokens / 10 s = 2,560 tok/s, 100 requests / 10 s = 10 req/s and
(6,400 + 25,600) tokens / 10 s = 3,200 tok/s.
A test names only the figures it is about; every figure it leaves out follows from the ones it
names, so a point disagrees with itself only where a test says so.
"""

from __future__ import annotations

from typing import Any

from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import Metrics, PointResult, point_key

WINDOW_S = 10.0
REQUESTS = 100
INPUT_TOKENS_EACH = 64
OUTPUT_TOKENS_EACH = 256

# Latencies of a burst that fit inside the default 10 s window (p99 E2EL 6.5 s), for tests that
# read latencies without being about them. metrics() sets none itself: a latency fits only the
# window it was measured in, and a test that shortens the window must choose its own.
BURST_LATENCIES_MS: dict[str, float] = {
    "median_ttft_ms": 120.0,
    "p95_ttft_ms": 300.0,
    "p99_ttft_ms": 350.0,
    "median_tpot_ms": 20.0,
    "p95_tpot_ms": 25.0,
    "p99_tpot_ms": 30.0,
    "median_itl_ms": 20.0,
    "median_e2el_ms": 5_200.0,
    "p95_e2el_ms": 6_000.0,
    "p99_e2el_ms": 6_500.0,
}


def _rate(count: int, duration: float) -> float:
    # No window, no rate: the checks name an empty window that completed anything themselves.
    return count / duration if duration > 0 else 0.0


def _metric_values(overrides: dict[str, Any]) -> dict[str, Any]:
    """Metrics' fields: the counts given or defaulted, each rate its count over the window."""
    duration = overrides.get("duration", WINDOW_S)
    completed = overrides.get("completed", REQUESTS)
    failed = overrides.get("failed", 0)
    short = overrides.get("short_responses", 0)
    incomplete = overrides.get("incomplete_responses", 0)
    input_tokens = overrides.get("total_input_tokens", completed * INPUT_TOKENS_EACH)
    output_tokens = overrides.get("total_output_tokens", completed * OUTPUT_TOKENS_EACH)
    values: dict[str, Any] = {
        "duration": duration,
        "completed": completed,
        "failed": failed,
        "short_responses": short,
        "incomplete_responses": incomplete,
        # As runner.measure.metrics decides it: nothing failed, came back short or was not whole.
        "valid": failed == 0 and short == 0 and incomplete == 0,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "request_throughput": _rate(completed, duration),
        "output_throughput": _rate(output_tokens, duration),
        "total_token_throughput": _rate(input_tokens + output_tokens, duration),
    }
    return {**values, **overrides}


def metrics(**overrides: Any) -> Metrics:
    """Client aggregates whose rates are their counts over the window.

    Counts not named follow from those named: token totals from the completed requests (64 in,
    256 out each), `valid` from no failed, short or incomplete response, and each rate from its
    count over `duration`. A named rate is kept as given: that is how a test makes a rate
    disagree with its count. No latency is set (BURST_LATENCIES_MS says why).
    """
    return Metrics(**_metric_values(overrides))


def metrics_at(output_throughput: float, **overrides: Any) -> Metrics:
    """Metrics claiming `output_throughput` tok/s, with the output tokens that make it.

    The output tokens are the throughput over the window unless the test names them too (to
    make the throughput disagree with them); the other rates follow from the counts.
    """
    duration = overrides.get("duration", WINDOW_S)
    overrides.setdefault("total_output_tokens", round(output_throughput * duration))
    return metrics(output_throughput=output_throughput, **overrides)


def point_result(
    *,
    engine_config: EngineConfig | None = None,
    load: LoadSpec | None = None,
    workload: WorkloadSpec | None = None,
    repeat: int = 0,
    replicas: int = 1,
    key: str | None = None,
    metrics: Metrics | None = None,
    **fields: Any,
) -> PointResult:
    """A measured point, keyed as the runner keys it (point_key) unless `key` is given.

    Defaults: max_num_seqs=256 under a burst of 100 requests, WorkloadSpec's defaults, and, when
    no metrics are given, metrics in which every request the load sent to each replica
    completed (runner.sweep sends load.num_requests to every replica). `fields` sets any other
    PointResult field (window, queue, client, provenance, per_replica, ...); the rest keep the
    schema's defaults.
    """
    engine_config = engine_config or EngineConfig(max_num_seqs=256)
    load = load or LoadSpec(shape="burst", num_requests=REQUESTS)
    if metrics is None:
        # The builder is shadowed by this parameter; its values come from the same function.
        metrics = Metrics(**_metric_values({"completed": load.num_requests * replicas}))
    return PointResult(
        key=key if key is not None else point_key(engine_config, load, repeat),
        engine_config=engine_config,
        load=load,
        workload=workload or WorkloadSpec(),
        repeat=repeat,
        replicas=replicas,
        metrics=metrics,
        **fields,
    )
