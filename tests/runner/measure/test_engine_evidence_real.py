"""vLLM 0.32's engine evidence on a real vLLM CPU engine: the prefix cache's hit rate for prompts
that share a prefix and for random ones, the work estimates --enable-mfu-metrics turns on, and
the queue-time histogram and waiting-by-reason gauges of a queue that builds.

One engine (the config tests/runner/engine/test_engine.py also uses, so a session starts it once), and
one attach sweep per workload against it, 16 requests at once, so 12 wait behind
--max-num-seqs 4. The CPU engine's KV blocks hold 128 tokens and the cache keeps full blocks
only, so the prompts are about 300 tokens long: two full blocks for a shared prefix to fill.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest

from runner.engine.command import MFU_METRICS_FLAG
from runner.measure.sampler import FILTERED_METRICS_PATH, QueueSampler, parse_metrics
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadKind, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan
from runner.workloads.prompts import CASE_STUDY_GUIDE, server_token_counter

pytestmark = pytest.mark.engine

INPUT_MIN, INPUT_MAX = 290, 300
REQUESTS = 16
SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)


@pytest.fixture(scope="module")
def engine(cpu_engine):
    return cpu_engine(SHARED_CONFIG)


def measure(engine, workload: WorkloadSpec, workdir: Path) -> PointResult:
    plan = SweepPlan(
        name="engine-evidence",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(num_requests=REQUESTS)],
        workload=workload,
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        sample_interval_s=0.1,
    )
    (point,) = run_plan(plan, workdir)
    assert point.metrics.valid, point.notes
    return point


def shared_prefix_dataset(engine, path: Path) -> Path:
    """The guide text first and each request's id after it, sized by the server's tokenizer:
    every prompt shares everything but its last few tokens."""
    count = server_token_counter(engine.base_url, "tiny")
    text = " ".join([CASE_STUDY_GUIDE] * 3)
    low, high = 1, len(text)
    while low < high:  # the shortest guide cut whose prompt reaches INPUT_MIN tokens
        middle = (low + high) // 2
        if count(f"{text[:middle]} (request 10)") < INPUT_MIN:
            low = middle + 1
        else:
            high = middle
    rows = [{"prompt": f"{text[:low]} (request {i})"} for i in range(10, 10 + REQUESTS)]
    path.write_bytes(b"\n".join(orjson.dumps(row) for row in rows))
    return path


def workload(kind: WorkloadKind, **fields) -> WorkloadSpec:
    # 64 tokens out keep the queue of 12 behind max_num_seqs 4 for about a second: with 16, a
    # point could end between two 0.1 s samples and show no waiting at all.
    return WorkloadSpec(kind=kind, input_tokens_min=INPUT_MIN, input_tokens_max=INPUT_MAX,
                        output_tokens=64, **fields)


@pytest.fixture(scope="module")
def points(engine, tmp_path_factory) -> dict[str, PointResult]:
    work = tmp_path_factory.mktemp("evidence")
    dataset = shared_prefix_dataset(engine, work / "shared.jsonl")
    return {
        "shared": measure(engine, workload("dataset", dataset_path=str(dataset)), work / "a"),
        # A seed no other test uses: its prompts cannot be in the cache already.
        "random": measure(engine, workload("random", seed=1313), work / "b"),
        "case_study": measure(engine, workload("case_study"), work / "c"),
    }


def test_prompts_sharing_a_prefix_mostly_come_from_the_prefix_cache(points):
    q = points["shared"].queue
    assert q.prefix_cache_queries == pytest.approx(
        points["shared"].metrics.total_input_tokens, rel=0.05)
    # All but the first few requests find the two full blocks of the shared text.
    assert q.prefix_cache_hit_rate > 0.5


def test_random_prompts_of_the_same_lengths_find_nearly_nothing_in_the_cache(points):
    q = points["random"].queue
    assert q.prefix_cache_queries > 0
    assert q.prefix_cache_hit_rate < 0.05


def test_the_case_study_prompts_share_the_guide_so_they_come_from_the_cache_too(points):
    # The guide first and the request id after it: every prompt but the first finds the full
    # blocks of the guide (vLLM caches whole blocks from the first token on). With the id first
    # ("Request 17: <guide>"), as the case study once was, no block was shared and this was 0.
    q = points["case_study"].queue
    assert q.prefix_cache_hit_rate > 0.5


def test_the_engine_started_with_mfu_metrics_reports_its_work_estimates(engine, points):
    assert MFU_METRICS_FLAG in engine.info.command
    for point in points.values():
        q = point.queue
        assert q.flops_per_gpu_s is not None and q.flops_per_gpu_s > 0
        assert q.read_bytes_per_gpu_s is not None and q.read_bytes_per_gpu_s > 0
        assert q.write_bytes_per_gpu_s is not None and q.write_bytes_per_gpu_s > 0
    # The estimate grows with the work: the shared prompts' cached blocks are not computed
    # again, so the same requests cost fewer FLOPs than random ones.
    shared, random = points["shared"].queue, points["random"].queue
    assert shared.flops_per_gpu_s * points["shared"].metrics.duration < (
        random.flops_per_gpu_s * points["random"].metrics.duration)


def test_a_queue_behind_max_num_seqs_shows_in_queue_times_and_waiting_by_reason(points):
    q = points["random"].queue
    # Every request of the point finished inside its window, and was recorded once.
    assert q.queue_time_requests == REQUESTS
    assert q.mean_queue_time_s is not None and q.mean_queue_time_s > 0
    assert q.queue_time_p50_s is not None and q.queue_time_p99_s >= q.queue_time_p50_s
    # 12 of 16 wait at the start, all for capacity; nothing is deferred.
    assert q.mean_waiting_capacity is not None and q.mean_waiting_capacity > 0
    assert q.mean_waiting_capacity == pytest.approx(q.mean_waiting, abs=0.01)
    assert q.mean_waiting_deferred == 0


def test_the_sampler_asks_vllm_for_its_samples_only_and_reads_what_the_whole_page_says(
    engine, points
):
    # After the sweeps the engine is idle, so the gauges and counters stand still between the
    # two pages. If vLLM stopped honouring the filter at /metrics/, the sampler would fall back
    # to the whole page (whole_page) and every scrape would cost the API server ~6x more.
    sampler = QueueSampler([(0, engine.base_url)], interval_s=60, t0=0.0)
    sampler.start()
    sample = sampler.stop()[-1]  # one round, or two if stop() came after the first
    whole = parse_metrics(httpx.get(engine.base_url + "/metrics", timeout=10).text)
    filtered = httpx.get(engine.base_url + FILTERED_METRICS_PATH, timeout=10).text

    assert sampler.whole_page == set() and sampler.failures == 0
    assert len(filtered) < 10_000 and "python_gc" not in filtered
    assert sample.model_copy(update={"t": 0.0}) == whole
    assert sample.prefix_cache_hits_total and sample.estimated_flops_per_gpu_total
    assert sample.queue_time_buckets and sample.iteration_tokens_count


def test_a_long_queue_behind_a_small_max_num_seqs_reads_as_the_scheduler_cap(engine, tmp_path):
    # Known by construction: 60 of 64 requests wait behind --max-num-seqs 4 at the start, and
    # each freed slot is refilled from the queue, for about two seconds of 0.1 s samples.
    # The attached server's flags are the shared config's: the test knows them, an attach
    # point cannot record them.
    from analysis.convert import from_point_result
    from analysis.verdicts import verdict

    plan = SweepPlan(
        name="scheduler-cap", checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()], loads=[LoadSpec(num_requests=64)],
        workload=WorkloadSpec(kind="random", input_tokens_min=20, input_tokens_max=24,
                              output_tokens=128, seed=4242),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60), sample_interval_s=0.1,
    )
    (point,) = run_plan(plan, tmp_path)
    figures = from_point_result(point.model_copy(update={"engine_config": SHARED_CONFIG}))
    judged = verdict(figures)
    assert figures.at_cap_share is not None and figures.at_cap_share > 0.5, point.queue
    assert judged.kind == "scheduler_cap", judged.sentence
