"""Trace replay and length logs on a real vLLM CPU engine.

A Mooncake-format trace made here is replayed with its arrival times (each request goes out at
its trace time over the speed), and its shared hash-id prefixes raise the prefix cache's hit rate
against the same trace with a hash id of its own for every block. A request-length log is sent
as drawn, and the server counts exactly the log's lengths.

One engine (the config tests/runner/engine/test_engine.py and test_engine_evidence_real.py use, so a
session starts it once), attach sweeps against it. Its KV blocks hold 128 tokens and the cache
keeps full blocks only; a Mooncake block of 512 tokens is four of them.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan

pytestmark = pytest.mark.engine

SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)
GROUPS, PER_GROUP = 3, 4
GAP_MS = 250
SPEED = 2.0
# How late a send may be against its schedule on a 2-core host that also runs the engine.
SEND_TOLERANCE_S = 0.2


@pytest.fixture(scope="module")
def engine(cpu_engine):
    return cpu_engine(SHARED_CONFIG)


def trace_rows(shared: bool) -> list[dict]:
    """Three groups of four requests, 600 tokens each: with shared, a group's requests start
    with one common hash id (512 tokens) and end with their own (88 tokens); without, every
    block is a request's own. Ids past 1000 are not used by the shared trace."""
    rows = []
    for i in range(GROUPS * PER_GROUP):
        first = i // PER_GROUP if shared else 1000 + 2 * i
        rows.append({"timestamp": GAP_MS * i, "input_length": 600, "output_length": 4 + i % 3,
                     "hash_ids": [first, 500 + i if shared else 1001 + 2 * i]})
    return rows


def prefix_cache(engine) -> tuple[float, float]:
    """(queries, hits) in prompt tokens, as the engine's /metrics counts them so far."""
    totals = {"vllm:prefix_cache_queries": 0.0, "vllm:prefix_cache_hits": 0.0}
    text = httpx.get(f"{engine.base_url}/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        if family.name in totals:
            totals[family.name] += sum(s.value for s in family.samples
                                       if s.name.endswith("_total"))
    return totals["vllm:prefix_cache_queries"], totals["vllm:prefix_cache_hits"]


def measure(engine, workload: WorkloadSpec, load: LoadSpec, data_dir: Path) -> PointResult:
    plan = SweepPlan(
        name="traces",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[load],
        workload=workload,
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        sample_interval_s=0.2,
    )
    (point,) = run_plan(plan, data_dir / "work", data_dir=data_dir)
    assert point.metrics.valid, point.notes
    return point


def replay(engine, data_dir: Path, shared: bool) -> tuple[PointResult, float]:
    """The trace replayed at SPEED, and the prefix-cache hit rate over its requests."""
    name = f"{'shared' if shared else 'unique'}.jsonl"
    (data_dir / name).write_text("".join(json.dumps(r) + "\n" for r in trace_rows(shared)))
    before = prefix_cache(engine)
    point = measure(engine, WorkloadSpec(kind="trace", dataset_path=name),
                    LoadSpec(shape="trace", num_requests=GROUPS * PER_GROUP, speed=SPEED),
                    data_dir)
    after = prefix_cache(engine)
    queries, hits = after[0] - before[0], after[1] - before[1]
    return point, hits / queries


@pytest.fixture(scope="module")
def replays(engine, tmp_path_factory) -> dict[str, tuple[PointResult, float]]:
    data_dir = tmp_path_factory.mktemp("traces")
    return {"unique": replay(engine, data_dir, shared=False),
            "shared": replay(engine, data_dir, shared=True)}


def test_a_trace_is_sent_at_its_arrival_times_over_the_speed(replays):
    point, _ = replays["shared"]
    requests = sorted(point.requests, key=lambda r: r.index)
    assert [r.intended_send for r in requests] == pytest.approx(
        [GAP_MS * i / 1000 / SPEED for i in range(GROUPS * PER_GROUP)])
    lateness = [r.actual_send - r.intended_send for r in requests if r.actual_send is not None]
    assert len(lateness) == len(requests) and max(lateness) < SEND_TOLERANCE_S
    schedule = point.client.schedule
    assert schedule is not None
    assert schedule.scheduled_rate == pytest.approx(SPEED * 1000 / GAP_MS)
    assert schedule.achieved_rate == pytest.approx(schedule.scheduled_rate, rel=0.2)
    assert any(n.startswith("trace replayed at speed 2: scheduled 8.00 requests/s")
               for n in point.notes)


def test_every_request_sends_the_traces_lengths(replays):
    point, _ = replays["shared"]
    rows = trace_rows(shared=True)
    requests = sorted(point.requests, key=lambda r: r.index)
    assert [r.prompt_tokens for r in requests] == [row["input_length"] for row in rows]
    assert [r.output_tokens for r in requests] == [row["output_length"] for row in rows]
    assert [r.max_tokens for r in requests] == [row["output_length"] for row in rows]


def test_shared_hash_ids_raise_the_prefix_cache_hit_rate(replays):
    _, unique_rate = replays["unique"]
    _, shared_rate = replays["shared"]
    # Three of each group's four requests find the group's 512-token block: 9 x 512 of
    # 12 x 600 prompt tokens, 64%; with a block of its own every request finds nothing.
    assert unique_rate < 0.05
    assert shared_rate > 0.5
    point, _ = replays["shared"]
    if point.queue.prefix_cache_hit_rate is not None:  # the sampler's window agrees
        assert point.queue.prefix_cache_hit_rate > 0.5


def test_a_length_log_is_sent_with_its_histogram(engine, tmp_path):
    rows = [(40 + 15 * i, 2 + i % 9) for i in range(24)]
    (tmp_path / "log.csv").write_text(
        "prompt_tokens,completion_tokens\n" + "".join(f"{i},{o}\n" for i, o in rows))
    point = measure(engine, WorkloadSpec(kind="lengths", dataset_path="log.csv", seed=4),
                    LoadSpec(num_requests=len(rows)), tmp_path)
    # As many draws as rows: every row once, in a shuffled order; the server counts the lengths.
    assert Counter((r.prompt_tokens, r.output_tokens) for r in point.requests) == Counter(rows)
    assert [r.prompt_tokens for r in point.requests] != sorted(i for i, _ in rows)
    assert point.lengths is not None
    assert point.lengths.input_tokens.sent == point.lengths.input_tokens.source
    assert point.lengths.output_tokens.sent == point.lengths.output_tokens.source
