"""An imported vllm bench file records the engine that served it, or leaves it unknown."""

from __future__ import annotations

import pytest

from runner.importer.vllm_bench import from_vllm_bench
from runner.importer.vllm_document import ImportFileError
from runner.schema.engine_config import EngineConfig
from runner.schema.result import EngineInfo, PointResult
from tests.runner.importer.test_results_and_import import vllm_bench_032


def imported(**changes: object) -> PointResult:
    return from_vllm_bench(vllm_bench_032(**changes), source_name="bench.json")


def engine_of(point: PointResult) -> EngineInfo:
    assert point.provenance is not None
    return point.provenance.engine


def test_an_openai_backend_file_leaves_the_engine_unknown_instead_of_claiming_vllm():
    # The case that showed as "vllm" with TensorRT-LLM's version.
    point = imported(backend="openai-chat", endpoint_type="openai-chat", version="0.18.0")
    assert (engine_of(point).name, engine_of(point).version) == (None, "0.18.0")
    assert any(
        note.startswith("serving engine not recorded (backend 'openai-chat' is a request format")
        for note in point.notes
    )


@pytest.mark.parametrize(
    "backend, engine", [("vllm", "vllm"), ("tensorrt-llm", "tensorrt-llm"), ("sglang", "sglang"),
                        ("lmdeploy", "lmdeploy")],
)
def test_a_backend_written_for_one_engine_names_it_when_nothing_else_does(backend, engine):
    point = imported(backend=backend, endpoint_type=backend)
    assert engine_of(point).name == engine
    assert any(f"from the file's backend '{backend}'" in note for note in point.notes)


def test_metadata_naming_the_engine_wins_over_the_backend():
    # Older vllm bench releases defaulted to --backend vllm, whatever served the requests.
    point = imported(backend="vllm", engine="TensorRT-LLM", version="0.18.0")
    assert (engine_of(point).name, engine_of(point).version) == ("tensorrt-llm", "0.18.0")
    assert "serving engine tensorrt-llm: from the file's --metadata engine=TensorRT-LLM" in (
        point.notes
    )


def test_a_version_key_that_names_its_engine_names_the_engine():
    point = imported(trtllm_version="0.18.0")
    assert (engine_of(point).name, engine_of(point).version) == ("tensorrt-llm", "0.18.0")


def test_an_engine_and_a_version_key_of_another_engine_refuse_the_file():
    with pytest.raises(ImportFileError, match=r"engine=sglang and vllm_version=0\.11\.0 disagree"):
        imported(engine="sglang", vllm_version="0.11.0")


def test_a_plain_version_key_names_no_engine():
    point = imported(backend="openai", version="0.6.0")
    assert (engine_of(point).name, engine_of(point).version) == (None, "0.6.0")


def test_every_engine_setting_is_a_metadata_key_of_its_own_name():
    # num_gpu_blocks_override was once missing from a hand-written list of these keys.
    written = {int: ("3", 3), float: ("0.5", 0.5), str: ("fp8", "fp8"), bool: ("true", True)}
    for setting in EngineConfig.settings():
        text, value = written[setting.kind]
        point = imported(**{setting.name: text})
        assert getattr(point.engine_config, setting.name) == value, setting.name
