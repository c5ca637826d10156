"""The engine that served a point, as a result records it (runner.schema.result.EngineInfo)."""

from __future__ import annotations

import pytest

from runner.schema.result import EngineInfo


def test_what_the_runner_launches_is_recorded_as_vllm():
    assert EngineInfo(launch_style="cpu").name == "vllm"


@pytest.mark.parametrize(
    "written, name",
    [("vLLM", "vllm"), ("TensorRT-LLM", "tensorrt-llm"), ("trtllm", "tensorrt-llm"),
     ("tensorrt_llm", "tensorrt-llm"), ("SGLang", "sglang"), (" LMDeploy ", "LMDeploy"),
     ("", None), (None, None)],
)
def test_an_engine_name_is_spelled_one_way(written, name):
    assert EngineInfo(launch_style="attach", name=written).name == name
