"""Speculative decoding on a real vLLM CPU engine: ngram drafts from the prompt, and the point's
acceptance read from the engine's /metrics by the sampler's filtered scrape."""

from __future__ import annotations

import pytest

from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, SweepPlan, WorkloadSpec
from runner.sweep import run_plan

pytestmark = pytest.mark.engine

NGRAM = '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}'


def test_an_ngram_engine_gives_each_point_its_acceptance(cpu_engine, tmp_path):
    engine = cpu_engine(EngineConfig(max_num_seqs=4, extra_args=["--speculative-config", NGRAM]))
    plan = SweepPlan(
        name="spec-decode",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(num_requests=8)],
        workload=WorkloadSpec(output_tokens=48),  # the case study's prompts, greedy
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
        sample_interval_s=0.1,
    )
    (point,) = run_plan(plan, tmp_path)
    assert point.metrics.valid, point.notes
    q = point.queue
    # The tiny random model repeats itself at temperature 0, so ngram drafts are made and
    # nearly all accepted; a draft holds at most 3 tokens.
    assert q.spec_drafts and q.spec_drafts > 0
    assert q.spec_draft_tokens is not None and q.spec_drafts <= q.spec_draft_tokens <= 3 * q.spec_drafts
    assert set(q.spec_accepted_per_position or {}) == {"0", "1", "2"}
    assert 0 < q.spec_acceptance_rate <= 1
    assert 1 < q.spec_mean_acceptance_length <= 4
    assert sum(q.spec_accepted_per_position.values()) == q.spec_accepted_tokens
