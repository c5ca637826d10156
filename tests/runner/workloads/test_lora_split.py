"""A LoRA split (WorkloadSpec.lora_split): each request's adapter, by largest remainder in a
seeded order, sent as the request's model; and the engine flags that serve the adapters."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from runner.client.responses import request_body
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.flags import check_lora_sources, lora_modules
from runner.schema.plan import LoadSpec, LoraShare, SweepPlan, WorkloadSpec
from runner.workloads.lora_split import assign_adapters, split_counts, with_adapters
from runner.workloads.prompts import Prompt


def split(**weights: float) -> list[LoraShare]:
    return [LoraShare(name=name, weight=weight) for name, weight in weights.items()]


@pytest.mark.parametrize(
    "weights, n, expected",
    [
        # 10 x 0.5, 0.3, 0.2: exact.
        ({"alpha": 0.5, "beta": 0.3, "gamma": 0.2}, 10, {"alpha": 5, "beta": 3, "gamma": 2}),
        # 7 x: 3.5, 2.1, 1.4 -> floors 3, 2, 1 (6); the one left goes to the largest
        # remainder, alpha's 0.5.
        ({"alpha": 0.5, "beta": 0.3, "gamma": 0.2}, 7, {"alpha": 4, "beta": 2, "gamma": 1}),
        # 9 x: 4.5, 2.7, 1.8 -> 4, 2, 1 (7); two left: gamma's 0.8, then beta's 0.7.
        ({"alpha": 0.5, "beta": 0.3, "gamma": 0.2}, 9, {"alpha": 4, "beta": 3, "gamma": 2}),
        # Weights need not add up to 1: 2 and 1 of 4 -> 2.667, 1.333 -> 2, 1, then alpha.
        ({"alpha": 2, "beta": 1}, 4, {"alpha": 3, "beta": 1}),
        # A tie of remainders goes to the adapter listed first.
        ({"beta": 1, "alpha": 1, "gamma": 1}, 4, {"beta": 2, "alpha": 1, "gamma": 1}),
        ({"alpha": 1, "beta": 1}, 1, {"alpha": 1, "beta": 0}),
        # A weight near the float maximum: n x weight would overflow, n x fraction does not.
        ({"alpha": 1e308, "beta": 1e307}, 11, {"alpha": 10, "beta": 1}),
    ],
)
def test_the_requests_are_split_by_largest_remainder(weights, n, expected):
    assert split_counts(split(**weights), n) == expected
    assert Counter(assign_adapters(split(**weights), n, seed=0)) == +Counter(expected)


def test_the_order_is_shuffled_with_the_seed_so_adapters_interleave():
    shares = split(alpha=0.5, beta=0.5)
    order = assign_adapters(shares, 100, seed=7)
    assert order == assign_adapters(shares, 100, seed=7)  # the same plan sends the same
    assert order != assign_adapters(shares, 100, seed=8)
    # Not blocks: the first half holds both adapters, about evenly.
    assert 15 <= Counter(order[:50])["alpha"] <= 35


def test_each_prompt_names_its_adapter_and_the_body_sends_it_as_the_model():
    prompts = [Prompt(index=i, text=f"p{i}") for i in range(4)]
    named = with_adapters(prompts, split(alpha=3, beta=1), seed=0)
    assert Counter(p.adapter for p in named) == {"alpha": 3, "beta": 1}
    workload = WorkloadSpec(lora_split=split(alpha=3, beta=1))
    body = orjson.loads(request_body(workload, "/models/tiny", named[0]))
    assert body["model"] == named[0].adapter
    assert orjson.loads(request_body(workload, "/models/tiny", prompts[0]))["model"] == (
        "/models/tiny")
    assert with_adapters(prompts, [], seed=0) == prompts


@pytest.mark.parametrize(
    "shares, message",
    [
        ([{"name": "a/b", "weight": 1}], "LoRA adapter name 'a/b'"),
        ([{"name": "a=b", "weight": 1}], "LoRA adapter name 'a=b'"),
        ([{"name": "-x", "weight": 1}], "LoRA adapter name '-x'"),
        ([{"name": "a", "weight": 0}], "greater than 0"),
        ([{"name": "a", "weight": float("inf")}], "finite"),
        ([{"name": "a", "weight": 1}, {"name": "a", "weight": 2}], "names an adapter twice"),
        ([{"name": "a", "weight": 1e308}, {"name": "b", "weight": 1e308}],
         "must add up to a finite number"),
    ],
)
def test_a_split_with_a_bad_name_or_weight_is_refused(shares, message):
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec(lora_split=shares)


def test_a_conversation_workload_cannot_take_a_split():
    with pytest.raises(ValidationError, match="does not apply to a conversation"):
        WorkloadSpec(kind="conversation", endpoint="chat", dataset_path="c.jsonl",
                     lora_split=split(a=1))


LORA_ARGS = ["--enable-lora", "--max-lora-rank", "8", "--lora-modules", "alpha=/models/loras/a",
             "beta=/models/loras/b"]


def test_the_engine_flags_name_each_adapter_and_its_path():
    config = EngineConfig(extra_args=LORA_ARGS)
    assert lora_modules(config.extra_args) == [("alpha", "/models/loras/a"),
                                               ("beta", "/models/loras/b")]
    assert lora_modules(["--lora-modules=gamma=org/adapter"]) == [("gamma", "org/adapter")]


@pytest.mark.parametrize(
    "value, message",
    [
        ("alpha", "takes NAME=PATH"),
        ('{"name": "a", "path": "/x"}', "takes NAME=PATH"),
        ("a/b=/x", "LoRA adapter name 'a/b'"),
        ("alpha=", "takes NAME=PATH"),
    ],
)
def test_a_lora_module_not_written_name_equals_path_is_refused(value, message):
    with pytest.raises(ValidationError, match=message):
        EngineConfig(extra_args=["--enable-lora", "--lora-modules", value])


def test_an_adapter_path_outside_the_model_directories_is_refused(tmp_path):
    allowed = tmp_path / "models"
    (allowed / "loras" / "a").mkdir(parents=True)
    inside = ["--lora-modules", f"alpha={allowed / 'loras' / 'a'}", "hub=org/adapter"]
    assert check_lora_sources(inside, [allowed]) == inside
    for outside in ("/etc", f"{allowed}/../secrets"):
        with pytest.raises(ValueError, match=r"LoRA adapter 'x': .* is neither a hub repo id"):
            check_lora_sources(["--lora-modules", f"x={outside}"], [allowed])


def plan(workload: WorkloadSpec, *extra_args: str, style: str = "cpu") -> SweepPlan:
    launch = EngineLaunch(style=style, base_url="http://127.0.0.1:8000" if style == "attach" else None)
    return SweepPlan(checkpoint=Checkpoint(model="org/m"), launch=launch,
                     engine_configs=[EngineConfig(extra_args=list(extra_args))],
                     loads=[LoadSpec(num_requests=4)], workload=workload)


def test_an_engine_headroom_starts_must_serve_every_adapter_of_the_split():
    workload = WorkloadSpec(lora_split=split(alpha=1, gamma=1))
    with pytest.raises(ValidationError, match="names gamma, which engine config"):
        plan(workload, *LORA_ARGS)
    assert plan(WorkloadSpec(lora_split=split(alpha=1, beta=1)), *LORA_ARGS)
    # An attached server's adapters are its own.
    assert plan(workload, style="attach")


def test_tiny_adapters_are_written_in_peft_layout(tmp_path: Path, tiny_model: Path):
    from safetensors import safe_open

    from runner.engine.tinylora import RANK, build_tiny_lora

    path = build_tiny_lora(tmp_path / "alpha", tiny_model, seed=0)
    config = orjson.loads((path / "adapter_config.json").read_bytes())
    assert (config["peft_type"], config["r"], config["target_modules"]) == (
        "LORA", RANK, ["q_proj", "v_proj"])
    with safe_open(str(path / "adapter_model.safetensors"), framework="pt") as handle:
        names = set(handle.keys())
        q_a = handle.get_tensor("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight")
        v_b = handle.get_tensor("base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight")
    assert len(names) == 2 * 2 * 2  # 2 layers x (q, v) x (A, B)
    assert tuple(q_a.shape) == (RANK, 128) and tuple(v_b.shape) == (64, RANK)
    assert v_b.abs().sum() > 0  # B not zero: the adapter changes the outputs
