"""Grids with known answers, built from a formula: what a recorded grid holds, point by point."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import product

from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan
from runner.search.replay import RecordedGrid, RecordedPoint

# (config, load level's concurrency, repeat) -> (output tokens/s, median e2el ms)
Figures = Callable[[EngineConfig, int, int], tuple[float, float]]


def saturating(capacity: Callable[[EngineConfig], float], per_request: float = 10.0) -> Figures:
    """Throughput rises with load until the config's capacity, then stays flat while latency
    grows with the queue: the shape a scheduler cap gives."""

    def figures(config: EngineConfig, level: int, repeat: int) -> tuple[float, float]:
        cap = capacity(config)
        throughput = min(level * per_request, cap)
        latency = 1000.0 * max(1.0, level * per_request / cap)
        return throughput, latency

    return figures


def recorded_grid(
    figures: Figures,
    *,
    seqs: Sequence[int] = (2, 4, 8),
    tokens: Sequence[int] = (64, 128, 256),
    levels: Sequence[int] = (1, 2, 4, 8, 16, 32),
    repeats: int = 2,
    start_s: float = 30.0,
    point_s: float = 5.0,
    name: str = "synthetic",
    preempts: Callable[[EngineConfig], bool] = lambda config: False,
    num_requests: int | None = None,
) -> RecordedGrid:
    """num_requests: the same at every level, each point then as long as a closed loop takes
    (num_requests / concurrency requests after each other, each its median e2el); None: four
    per request in flight, every point point_s."""
    configs = [EngineConfig(max_num_seqs=s, max_num_batched_tokens=t)
               for s, t in product(seqs, tokens)]
    loads = [LoadSpec(shape="concurrency", concurrency=c, num_requests=num_requests or 4 * c)
             for c in levels]
    plan = SweepPlan(checkpoint=Checkpoint(model="/models/tiny"), engine_configs=configs,
                     loads=loads, repeats=repeats)
    points = []
    for config, load, repeat in product(configs, loads, range(repeats)):
        concurrency = load.concurrency or 0
        throughput, latency = figures(config, concurrency, repeat)
        wall_s = num_requests / concurrency * latency / 1000 if num_requests else point_s
        points.append(RecordedPoint(
            config_label=config.label(), load_label=load.label(), repeat=repeat,
            output_throughput=throughput, valid=True, wall_s=wall_s,
            latencies={"median_e2el_ms": latency, "p99_ttft_ms": latency / 4,
                       "median_tpot_ms": latency / 4},
            preemptions=12.0 if preempts(config) else 0.0,
        ))
    return RecordedGrid(name=name, recorded_at="2026-12-03T00:00:00Z", host="formula",
                        plan=plan, engine_start_s={c.label(): start_s for c in configs},
                        points=points)
