"""The rules a launch keeps (benchmarks.launch.launch_rules), each on its own: what it lets
through and the sentence it says when it does not. The form's and the worker's tests show them
in place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.launch import launch_rules as rules
from benchmarks.models import Endpoint, Node, Runtime, Workload
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import SweepPlan
from tests.rows import make_checkpoint, make_runtime

# A workload of its own that breaks no rule: every key custom_workload_problems reads.
GOOD_WORKLOAD: dict[str, Any] = {
    "prompt_source": "random", "input_tokens_min": 20, "input_tokens_max": 24,
    "output_tokens": 32, "request_count": 64, "temperature": 0.0, "endpoint": "completions",
    "load_shape": "burst", "thinking": False, "dataset_path": "", "trace_span_s": None,
    "trace_longer": "truncate", "conversation_turns_max": None,
}  # fmt: skip


def _about(values: dict[str, Any]) -> list[str]:
    return [problem.about for problem in rules.custom_workload_problems(values)]


@pytest.mark.django_db
def test_only_an_approved_checkpoint_and_an_approved_vllm_runtime_are_launchable():
    approved, held = make_checkpoint(), make_checkpoint(revision="f" * 40, approved=False)
    vllm = make_runtime()
    sglang = make_runtime(engine="sglang", version="0.4.0")
    unapproved = make_runtime(version="0.10.0", approved=False)
    assert rules.is_launchable_checkpoint(approved)
    assert not rules.is_launchable_checkpoint(held)
    assert rules.is_launchable_runtime(vllm)
    assert not rules.is_launchable_runtime(sglang)  # approved, but another engine's runs are imported
    assert not rules.is_launchable_runtime(unapproved)


def test_a_model_is_a_hub_id_or_a_path_inside_the_model_directories(settings, tmp_path):
    settings.HEADROOM_MODEL_DIRS = [tmp_path / "models"]
    (tmp_path / "models" / "tiny").mkdir(parents=True)
    assert rules.model_source_problem("Qwen/Qwen3-0.6B") is None
    assert rules.model_source_problem(str(tmp_path / "models" / "tiny")) is None
    problem = rules.model_source_problem(str(tmp_path / "elsewhere"))
    assert problem is not None and "neither a hub repo id" in problem


def test_code_loading_flags_need_a_trusted_checkpoint_and_adapters_an_allowed_folder(
    settings, tmp_path
):
    settings.HEADROOM_MODEL_DIRS = [tmp_path]
    plain = EngineConfig(max_num_seqs=4)
    remote_code = EngineConfig(max_num_seqs=8, extra_args=["--trust-remote-code"])
    assert rules.code_loading_problem([plain, remote_code], trusted=True) is None
    problem = rules.code_loading_problem([plain, remote_code], trusted=False)
    assert problem is not None and problem.startswith("--trust-remote-code can load code")
    outside = EngineConfig(extra_args=["--enable-lora", "--lora-modules", "a=/opt/adapters/a"])
    problem = rules.code_loading_problem([outside], trusted=True)
    assert problem is not None and problem.startswith("LoRA adapter 'a': '/opt/adapters/a'")


def test_replicas_must_fit_the_nodes_gpus_and_an_image_node_needs_an_image():
    node = Node(queue="gpu-a", gpu_count=2, launch_style="serve")
    runtime = Runtime(engine="vllm", version="0.11.0", image="")
    assert rules.node_problems(node, runtime, 2) == []
    assert rules.node_problems(node, runtime, 3) == [
        rules.Problem("replicas", "gpu-a has 2 GPU(s): at most that many."),
    ]
    docker = Node(queue="gpu-d", gpu_count=2, launch_style="docker")
    assert [p.about for p in rules.node_problems(docker, runtime, 1)] == ["runtime"]
    runtime.image = "vllm/vllm-openai:v0.11.0"
    assert rules.node_problems(docker, runtime, 1) == []


def test_the_widest_tensor_parallel_config_decides_whether_the_replicas_fit():
    node = Node(queue="gpu-a", gpu_count=4)
    configs = [EngineConfig(tensor_parallel_size=1), EngineConfig(tensor_parallel_size=2)]
    assert rules.gpus_problem(node, 2, configs) is None
    assert rules.gpus_problem(node, 3, configs) == (
        "3 replica(s) x 2 GPUs each need 6 GPUs; gpu-a has 4.")
    assert rules.gpus_problem(Node(queue="cpu-a", gpu_count=0), 3, configs) is None  # no GPUs known


def test_a_workload_of_its_own_keeps_its_lengths_endpoint_and_dataset_together():
    assert _about(GOOD_WORKLOAD) == []
    assert _about({**GOOD_WORKLOAD, "input_tokens_max": 19}) == ["input_tokens_max"]
    assert _about({**GOOD_WORKLOAD, "thinking": True}) == ["thinking"]
    assert _about({**GOOD_WORKLOAD, "thinking": True, "endpoint": "chat"}) == []
    assert _about({**GOOD_WORKLOAD, "prompt_source": "dataset"}) == ["dataset_path"]
    assert _about({**GOOD_WORKLOAD, "prompt_source": "dataset", "dataset_path": "d.jsonl"}) == []


def test_a_trace_or_length_log_needs_its_file_and_the_completions_endpoint():
    for source in ("trace", "lengths"):
        assert _about({**GOOD_WORKLOAD, "prompt_source": source, "endpoint": "chat"}) == [
            "dataset_path", "endpoint"]
        assert _about({**GOOD_WORKLOAD, "prompt_source": source, "dataset_path": "t.csv"}) == []


def test_conversations_need_their_file_and_the_chat_endpoint():
    conversation = {**GOOD_WORKLOAD, "prompt_source": "conversation"}
    assert _about(conversation) == ["dataset_path", "endpoint"]
    assert _about({**conversation, "dataset_path": "c.jsonl", "endpoint": "chat",
                   "conversation_turns_max": 3}) == []


def test_a_traces_own_settings_are_refused_on_any_other_workload():
    assert _about({**GOOD_WORKLOAD, "trace_span_s": 60.0}) == ["trace_span_s"]
    assert _about({**GOOD_WORKLOAD, "trace_longer": "refuse"}) == ["trace_longer"]
    assert _about({**GOOD_WORKLOAD, "conversation_turns_max": 3}) == ["conversation_turns_max"]
    assert _about({**GOOD_WORKLOAD, "load_shape": "trace"}) == ["load_shape"]
    trace = {**GOOD_WORKLOAD, "prompt_source": "trace", "dataset_path": "t.csv"}
    assert _about({**trace, "trace_span_s": 60.0, "trace_longer": "refuse",
                   "load_shape": "trace"}) == []


def test_outputs_are_kept_for_parity_only_under_greedy_decoding():
    assert rules.parity_problem(Workload(keep_outputs=True, temperature=0.0)) is None
    assert rules.parity_problem(Workload(keep_outputs=False, temperature=0.7)) is None
    problem = rules.parity_problem(Workload(keep_outputs=True, temperature=0.7))
    assert problem is not None and problem.about == "keep_outputs"


def _trace_plan(num_requests: int) -> SweepPlan:
    return SweepPlan.model_validate({
        "name": "trace", "checkpoint": {"model": "Qwen/Qwen3-0.6B"},
        "engine_configs": [{"max_num_seqs": 4}],
        "loads": [{"shape": "burst", "num_requests": num_requests}],
        "workload": {"kind": "trace", "dataset_path": "trace.csv"},
    })


def test_a_trace_is_read_now_as_the_worker_will_read_it(settings, tmp_path: Path):
    settings.HEADROOM_DATA_DIR = tmp_path
    (tmp_path / "trace.csv").write_text("timestamp_s,input_tokens,output_tokens\n0,20,4\n1,30,5\n")
    assert rules.source_problem(_trace_plan(2)) is None
    problem = rules.source_problem(_trace_plan(3))
    assert problem is not None and "3 requests, but" in problem and problem.endswith(".")
    (tmp_path / "trace.csv").unlink()
    assert rules.source_problem(_trace_plan(2)) is not None


def test_an_endpoint_is_one_server_run_with_its_own_settings():
    endpoint = Endpoint(name="staging")
    assert rules.endpoint_engine_configs() == [EngineConfig()]
    assert rules.endpoint_replicas_problem(endpoint, None) is None
    assert rules.endpoint_replicas_problem(endpoint, 1) is None
    assert rules.endpoint_replicas_problem(endpoint, 2) == "staging is one server: 1 replica."
