"""One step names what a file is; a file that cannot be read is refused naming the tool, the
format recognised and what is missing, never with another tool's message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from runner.importer.detect import detect
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError
from tests.runner.importer.test_peer_files import (
    AIPERF_RECORDS,
    AIPERF_SUMMARY,
    GUIDELLM,
    STAGE_0,
    TELEMETRY_READINGS,
)
from tests.runner.importer.test_peer_versions import (
    AIPERF_EARLY,
    GUIDELLM_03,
    INFERENCE_PERF,
    KUBECON,
    LLM_D,
)

DATA = Path(__file__).parents[1] / "data"


def _first(path: Path) -> object:
    text = path.read_text()
    return json.loads(text.splitlines()[0] if path.suffix == ".jsonl" else text)


@pytest.mark.parametrize(("path", "kind", "label"), [
    (DATA / "vllm_bench_new.json", "vllm-bench",
     "vllm bench serve (vllm bench serve format, with --save-detailed arrays; vLLM's version is "
     "not in the file)"),
    (DATA / "vllm_bench_old.json", "vllm-bench",
     "vllm bench serve (benchmark_serving.py format; vLLM's version is not in the file)"),
    (AIPERF_SUMMARY, "aiperf-summary", "NVIDIA AIPerf 0.13.0"),
    (AIPERF_RECORDS, "aiperf-records", "NVIDIA AIPerf per-request record"),
    (AIPERF_EARLY / "profile_export_aiperf.json", "aiperf-summary",
     "NVIDIA AIPerf 0.1 to 0.2 summary format (records map; the file does not name its version)"),
    (AIPERF_EARLY / "profile_export.jsonl", "aiperf-records",
     "NVIDIA AIPerf per-request record (0.1 to 0.2 format)"),
    (TELEMETRY_READINGS, "aiperf-gpu-telemetry", "NVIDIA AIPerf GPU telemetry"),
    (GUIDELLM, "guidellm-report", "GuideLLM 0.8.1"),
    (GUIDELLM_03, "guidellm-report", "GuideLLM 0.3 report format"),
    (STAGE_0, "inference-perf-stage", "inference-perf stage report (0.5 or later format)"),
    (KUBECON / "stage_3_lifecycle_metrics.json", "inference-perf-stage",
     "inference-perf stage report (0.2 to 0.4 format)"),
    (KUBECON / "stage_3_prometheus_metrics.json", "inference-perf-prometheus",
     "inference-perf Prometheus report (0.2 to 0.4.0 format)"),
    (INFERENCE_PERF / "0.1.1" / "stage_0_lifecycle_metrics.json", "inference-perf-stage",
     "inference-perf stage report (0.1.1 format)"),
    (LLM_D / "0.2.1" / "kubecon_stage_4.yaml", "llm-d-report", "llm-d-benchmark report 0.2.1"),
])  # fmt: skip
def test_detection_names_the_tool_and_the_format_it_found(path, kind, label):
    document = yaml.safe_load(path.read_text()) if path.suffix == ".yaml" else _first(path)
    found = detect(document, path.name)
    assert (found.kind, found.label) == (kind, label)


def _write(tmp_path: Path, name: str, document: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(("name", "document", "message"), [
    ("result.json", {"backend": "vllm", "model_id": "m", "num_prompts": 10, "completed": 10},
     "result.json: vllm bench serve (benchmark_serving.py format; vLLM's version is not in the "
     "file): without duration and without total_input_tokens and without total_output_tokens"),
    ("notes.json", {"title": "meeting notes"},
     "notes.json: not a result file Headroom reads (a JSON object with keys title); it reads "
     "Headroom JSONL, a run's JSON download, and the results of vllm bench serve, NVIDIA AIPerf, "
     "GuideLLM, inference-perf and llm-d-benchmark"),
    ("list.json", [1, 2],
     "list.json: not a result file Headroom reads (a list of 2 items)"),
    ("old.json", {"benchmarks": [{"benchmarks": [], "args": {}}]},
     "old.json: GuideLLM report from before 0.3: a GuidanceReport of GuideLLM 0.1 or 0.2 is not "
     "read"),
    ("pytorch.json", [{"benchmark": {"name": "vLLM benchmark"}, "metric": {}, "model": {}}],
     "pytorch.json: vllm bench serve (PyTorch benchmark format): a .pytorch.json file; import "
     "the result file written beside it"),
    ("per_request_lifecycle_metrics.json",
     [{"start_time": 1.0, "end_time": 2.0, "request": "", "response": "", "info": {},
       "error": None}],
     "per_request_lifecycle_metrics.json: inference-perf: per-request report "
     "(per_request_lifecycle_metrics.json) is not read"),
])  # fmt: skip
def test_a_file_that_is_not_read_is_refused_naming_what_it_is(tmp_path, name, document, message):
    with pytest.raises(ImportFileError) as refused:
        load_result_file(_write(tmp_path, name, document))
    assert str(refused.value).startswith(message)


def test_aiperf_telemetry_alone_says_what_it_goes_with():
    with pytest.raises(ImportFileError) as refused:
        load_result_file(TELEMETRY_READINGS)
    assert str(refused.value).startswith(
        "gpu_telemetry_export.jsonl:1: NVIDIA AIPerf GPU telemetry: gpu_telemetry_export.jsonl "
        "is read with the run's profile_export.jsonl")


def test_a_companion_that_is_no_companion_is_named(tmp_path):
    with pytest.raises(ImportFileError) as refused:
        load_result_file(STAGE_0, companion=GUIDELLM)
    assert str(refused.value).startswith(
        "guidellm_benchmarks.json: GuideLLM 0.8.1: not a file that comes with a result file")


def test_a_prometheus_report_goes_only_with_a_stage_report():
    with pytest.raises(ImportFileError) as refused:
        load_result_file(GUIDELLM, companion=KUBECON / "stage_0_prometheus_metrics.json")
    assert str(refused.value) == (
        "guidellm_benchmarks.json: inference-perf's Prometheus report (0.2 to 0.4.0 format) "
        "stage_0_prometheus_metrics.json is read only with the stage report of the same stage, "
        "stage_N_lifecycle_metrics.json, not with GuideLLM 0.8.1")
