"""A LoRA split on a real vLLM CPU engine serving two tiny adapters (runner.engine.tinylora):
every request names its adapter as its model, the server answers each, and the records keep
the adapter, so the split's shares are the point's own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from runner.engine.tinylora import build_tiny_lora
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, LoraShare, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult
from runner.sweep import run_plan

pytestmark = pytest.mark.engine

REQUESTS = 16


@pytest.fixture(scope="module")
def lora_engine(cpu_engine, tiny_model, tmp_path_factory):
    loras = tmp_path_factory.mktemp("loras")
    paths = {name: build_tiny_lora(loras / name, tiny_model, seed=seed)
             for seed, name in enumerate(("alpha", "beta"))}
    return cpu_engine(EngineConfig(max_num_seqs=4, extra_args=[
        "--enable-lora", "--max-lora-rank", "8", "--max-loras", "2",
        "--lora-modules", *(f"{name}={path}" for name, path in paths.items())]))


def measure(engine, split: dict[str, float], workdir: Path) -> PointResult:
    plan = SweepPlan(
        name="lora-split",
        checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
        launch=EngineLaunch(style="attach", base_url=engine.base_url),
        engine_configs=[EngineConfig()],
        loads=[LoadSpec(num_requests=REQUESTS)],
        workload=WorkloadSpec(kind="random", input_tokens_min=20, input_tokens_max=30,
                              output_tokens=16,
                              lora_split=[LoraShare(name=n, weight=w) for n, w in split.items()]),
        client=ClientSpec(request_timeout_s=120, stall_timeout_s=60),
    )
    (point,) = run_plan(plan, workdir)
    return point


def test_each_request_reaches_its_adapter_in_the_splits_shares(lora_engine, tmp_path):
    point = measure(lora_engine, {"alpha": 3, "beta": 1}, tmp_path)
    assert point.metrics.valid, point.notes
    # 16 x 3/4 and 16 x 1/4: exact, by largest remainder.
    assert Counter(r.adapter for r in point.requests) == {"alpha": 12, "beta": 4}
    assert all(r.ok and r.output_tokens == 16 for r in point.requests)


def test_an_adapter_the_server_does_not_serve_fails_every_request_that_names_it(
    lora_engine, tmp_path
):
    # The name really is the request's model: vLLM refuses one it does not serve.
    point = measure(lora_engine, {"alpha": 1, "gamma": 1}, tmp_path)
    by_adapter = {name: [r for r in point.requests if r.adapter == name]
                  for name in ("alpha", "gamma")}
    assert [r.ok for r in by_adapter["alpha"]] == [True] * 8
    assert {r.status for r in by_adapter["gamma"]} == {404}
