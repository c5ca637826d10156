"""Result files and the vllm bench importer: validated on read, clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.importer import ImportFileError, load_result_file
from runner.results import ResultFileError, append_point, finished_keys, read_points
from runner.schema import EngineConfig, LoadSpec, Metrics, PointResult, WorkloadSpec, point_key

DATA = Path(__file__).parent / "data"


def make_point(seqs: int, repeat: int = 0) -> PointResult:
    config = EngineConfig(max_num_seqs=seqs)
    load = LoadSpec(num_requests=8)
    metrics = Metrics(
        duration=2.0,
        completed=8,
        failed=0,
        short_responses=0,
        valid=True,
        total_input_tokens=512,
        total_output_tokens=1024,
        request_throughput=4.0,
        output_throughput=512.0,
        total_token_throughput=768.0,
    )
    return PointResult(
        key=point_key(config, load, repeat),
        engine_config=config,
        load=load,
        workload=WorkloadSpec(),
        repeat=repeat,
        metrics=metrics,
    )


def test_it_reads_back_what_it_appended(tmp_path):
    out = tmp_path / "results.jsonl"
    append_point(out, make_point(4))
    append_point(out, make_point(32))
    points = read_points(out).points
    assert [p.engine_config.max_num_seqs for p in points] == [4, 32]
    assert finished_keys(out) == {"seqs=4|burst 8|r0", "seqs=32|burst 8|r0"}


def test_it_skips_a_last_line_cut_short_by_a_crash(tmp_path):
    out = tmp_path / "results.jsonl"
    append_point(out, make_point(4))
    whole = make_point(32).model_dump_json()
    with out.open("a") as handle:
        handle.write(whole[: len(whole) // 2])
    result = read_points(out)
    assert len(result.points) == 1
    assert "cut short" in result.warnings[0]


def test_it_names_the_line_of_a_foreign_record(tmp_path):
    out = tmp_path / "results.jsonl"
    append_point(out, make_point(4))
    with out.open("a") as handle:
        handle.write(json.dumps({"hello": "world"}) + "\n")
        handle.write(make_point(8).model_dump_json() + "\n")
    with pytest.raises(ResultFileError, match=r"results.jsonl:2"):
        read_points(out)


def test_it_imports_a_detailed_vllm_bench_file():
    (point,) = load_result_file(DATA / "vllm_bench_new.json")
    assert point.source == "vllm-bench-import"
    assert point.metrics.completed == 3
    assert point.metrics.output_throughput == 6.0
    assert point.metrics.p90_ttft_ms == 280.0
    assert point.workload.endpoint == "chat"
    assert point.provenance.checkpoint.model == "Qwen/Qwen3-30B-A3B"
    assert len(point.requests) == 3
    third = point.requests[2]
    assert third.intended_send == pytest.approx(0.5)
    assert third.chunk_times == pytest.approx([0.8, 0.82, 0.84, 0.86])
    assert third.output_tokens == 4
    assert any("short responses cannot be checked" in note for note in point.notes)


def test_it_imports_an_old_vllm_bench_file_without_failed_or_p90():
    (point,) = load_result_file(DATA / "vllm_bench_old.json")
    assert point.metrics.failed == 1  # 10 prompts, 9 completed
    assert point.metrics.valid is False
    assert point.metrics.p90_ttft_ms is None
    assert point.load.shape == "rate" and point.load.rate == 4.0
    assert point.requests == []
    assert any("inferred" in note for note in point.notes)


def test_it_refuses_a_truncated_json_file(tmp_path):
    text = (DATA / "vllm_bench_new.json").read_text()
    bad = tmp_path / "cut.json"
    bad.write_text(text[:200])
    with pytest.raises(ImportFileError, match="truncated"):
        load_result_file(bad)


def test_it_refuses_a_foreign_json_file(tmp_path):
    foreign = tmp_path / "package.json"
    foreign.write_text(json.dumps({"name": "left-pad", "version": "1.3.0"}))
    with pytest.raises(ImportFileError, match="missing duration"):
        load_result_file(foreign)


def test_it_refuses_binary_and_empty_files(tmp_path):
    binary = tmp_path / "result.json.gz"
    binary.write_bytes(b"\x1f\x8b\x08\x00\xff\xfe")
    with pytest.raises(ImportFileError, match="not a text file"):
        load_result_file(binary)
    empty = tmp_path / "empty.json"
    empty.write_text("")
    with pytest.raises(ImportFileError, match="empty"):
        load_result_file(empty)


def test_it_reads_headroom_jsonl_through_the_same_entry_point(tmp_path):
    out = tmp_path / "results.jsonl"
    append_point(out, make_point(4))
    append_point(out, make_point(32))
    assert len(load_result_file(out)) == 2
