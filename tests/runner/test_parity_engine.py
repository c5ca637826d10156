"""Output parity on real vLLM CPU engines: two max_num_seqs, the same prompts, outputs compared.

The shared engine (max_num_seqs 4, the config the other engine tests use) and one that runs a
single sequence at a time get the same 12 prompts as a burst, so one batches them four at a
time and the other never batches. Their kept token ids are compared request by request with
the judgement's own rule: every request is compared (same prompt digests, from the ids the
server saw), and the result is either identical or a reported divergence, never an unexamined
"equal". Random prompts of another seed give other digests: not compared.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.parity import KeptOutput, PointOutputs, compare_outputs
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import OUTPUT_TEXTS_KEPT, ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan

pytestmark = pytest.mark.engine

SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)
ONE_AT_A_TIME = EngineConfig(max_num_seqs=1, max_model_len=1024)
REQUESTS, OUTPUT_TOKENS = 12, 24
WORKLOAD = WorkloadSpec(kind="random", input_tokens_min=20, input_tokens_max=40,
                        output_tokens=OUTPUT_TOKENS, keep_outputs=True, seed=3)


def measure(engine, workload: WorkloadSpec, work: Path) -> PointResult:
    plan = SweepPlan(
        name="parity",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(shape="burst", num_requests=REQUESTS)],
        workload=workload,
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
    )
    (point,) = run_plan(plan, work)
    assert point.metrics.valid, point.notes
    return point


def kept(point: PointResult) -> PointOutputs:
    return PointOutputs(point.key, kept=True, outputs={
        r.index: KeptOutput(r.prompt_digest, r.output_ids) for r in point.requests if r.ok})


@pytest.fixture(scope="module")
def points(cpu_engine, tmp_path_factory) -> dict[str, PointResult]:
    work = tmp_path_factory.mktemp("parity")
    batched, alone = cpu_engine(SHARED_CONFIG), cpu_engine(ONE_AT_A_TIME)
    return {
        "batched": measure(batched, WORKLOAD, work / "a"),
        "alone": measure(alone, WORKLOAD, work / "b"),
        "other_prompts": measure(batched, WORKLOAD.model_copy(update={"seed": 4}), work / "c"),
    }


def test_every_response_keeps_its_token_ids(points):
    for point in points.values():
        assert all(len(r.output_ids) == r.output_tokens == OUTPUT_TOKENS for r in point.requests)
        assert all(r.prompt_digest for r in point.requests)
        texts = [r.output_text for r in sorted(point.requests, key=lambda r: r.index)]
        assert all(text for text in texts[:OUTPUT_TEXTS_KEPT])
        assert texts[OUTPUT_TEXTS_KEPT:] == [None] * (REQUESTS - OUTPUT_TEXTS_KEPT)


def test_two_max_num_seqs_on_the_same_prompts_are_compared_output_by_output(points):
    result = compare_outputs(kept(points["batched"]), kept(points["alone"]))
    assert result.measured
    assert result.compared == REQUESTS and result.different_prompts == 0
    assert result.identical + len(result.diverged) == REQUESTS
    for divergence in result.diverged:  # a reported divergence is a real one
        before = next(r for r in points["batched"].requests if r.index == divergence.index)
        after = next(r for r in points["alone"].requests if r.index == divergence.index)
        assert before.output_ids != after.output_ids
        assert before.output_ids[:divergence.agreed_tokens] == \
            after.output_ids[:divergence.agreed_tokens]
    for index in range(REQUESTS):  # and "identical" means the ids are equal
        if index not in {d.index for d in result.diverged}:
            before = next(r for r in points["batched"].requests if r.index == index)
            after = next(r for r in points["alone"].requests if r.index == index)
            assert before.output_ids == after.output_ids


def test_other_prompts_are_not_compared(points):
    result = compare_outputs(kept(points["batched"]), kept(points["other_prompts"]))
    assert not result.measured and result.different_prompts == REQUESTS
