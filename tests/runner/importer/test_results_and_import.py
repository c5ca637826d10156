"""Result files and the vllm bench importer: validated on read, clear errors for bad files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from runner.importer.files import iter_result_file_into, load_result_file
from runner.importer.vllm_bench import from_vllm_bench
from runner.importer.vllm_document import ImportFileError
from runner.results import ResultFileError, append_point, finished_keys, read_points
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.records import RequestRecord
from runner.schema.result import PointResult
from tests import factories

DATA = Path(__file__).resolve().parents[1] / "data"


def make_point(seqs: int, repeat: int = 0) -> PointResult:
    """A burst of 8 requests of 64 input and 128 output tokens, all completed in 2 s.

    The factory derives the rest: 512 + 1,024 tokens, 4 req/s, 512 and 768 tok/s.
    """
    return factories.point_result(
        engine_config=EngineConfig(max_num_seqs=seqs),
        load=LoadSpec(num_requests=8),
        repeat=repeat,
        metrics=factories.metrics(duration=2.0, completed=8, total_output_tokens=1024),
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
    with pytest.raises(ImportFileError, match=r"package\.json: not a result file Headroom reads "
                       r"\(a JSON object with keys name, version\)"):
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


# ---------------------------------------------------------------------------------------------
# A run's JSON download from the dashboard, read as a stream
# ---------------------------------------------------------------------------------------------


def with_requests(point: PointResult, count: int) -> PointResult:
    requests = [RequestRecord(index=i, intended_send=0.01 * i, actual_send=0.01 * i,
                              chunk_times=[0.01 * i + 0.1, 0.01 * i + 0.2], chunk_tokens=[1, 1],
                              output_tokens=2, status=200) for i in range(count)]  # fmt: skip
    return point.model_copy(update={"requests": requests})


def download_of(*points: PointResult) -> str:
    """As the dashboard's run_json writes it: the run's summary, then every point in full."""
    head = json.dumps({"benchmark": {"name": "sweep", "plan": {"loads": [[8, 16]]}}})
    return head[:-1] + ', "points": [' + ",".join(p.model_dump_json() for p in points) + "]}"


@dataclass
class BatchSizes:
    """A sink that keeps each batch it is given."""

    batches: list[list[RequestRecord]] = field(default_factory=list)

    def add(self, records):
        self.batches.append(list(records))


def test_it_reads_a_runs_download_a_point_and_a_request_batch_at_a_time(tmp_path, monkeypatch):
    import runner.importer.downloads

    monkeypatch.setattr(runner.importer.downloads, "BATCH_RECORDS", 4)
    points = [with_requests(make_point(4), 10), with_requests(make_point(32), 3)]
    path = tmp_path / "run.json"
    path.write_text(download_of(*points))
    # Streamed: a file over the document limit is read, each point within it.
    largest = max(len(p.model_dump_json()) for p in points)
    assert path.stat().st_size > largest
    read = list(iter_result_file_into(path, BatchSizes, max_document_bytes=largest))
    for (point, sink), original in zip(read, points, strict=True):
        assert point.requests == []
        assert point == original.model_copy(update={"requests": []})
        assert [r for batch in sink.batches for r in batch] == original.requests
    assert [len(batch) for batch in read[0][1].batches] == [4, 4, 2]
    assert load_result_file(path) == points
    path.write_text(json.dumps(json.loads(download_of(*points)), indent=2))
    assert load_result_file(path) == points  # saved again pretty-printed


def test_it_refuses_a_deeply_nested_download_without_reading_on(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"benchmark": ' + "[" * 100_000)
    with pytest.raises(ImportFileError, match=r"^run\.json: JSON nested too deeply"):
        load_result_file(path)


# ---------------------------------------------------------------------------------------------
# vllm bench serve 0.32 documents, hand-made in the shape serve.py writes them
# ---------------------------------------------------------------------------------------------

# Dropped by vLLM without --save-detailed; `latencies` and `queue_times` stay in every file.
DETAIL_KEYS = (
    "input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors",
)


def vllm_bench_032(**changes: Any) -> dict[str, Any]:
    """`vllm bench serve --save-result --save-detailed` output of 4 completions requests.

    Default percentile metrics (ttft,tpot,itl at p99), so no `*_e2el_ms` keys.
    """
    document: dict[str, Any] = {
        "date": "20260105-101500", "endpoint_type": "openai", "backend": "openai",
        "label": None, "model_id": "Qwen/Qwen3-0.6B", "tokenizer_id": "Qwen/Qwen3-0.6B",
        "num_prompts": 4, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": None,
        "duration": 2.5, "completed": 4, "failed": 0, "total_input_tokens": 256,
        "total_output_tokens": 40, "request_throughput": 1.6, "request_goodput": None,
        "output_throughput": 16.0, "total_token_throughput": 118.4,
        "input_lens": [64, 64, 64, 64], "output_lens": [10, 10, 10, 10],
        "ttfts": [0.2, 0.4, 0.6, 0.8],
        "itls": [[0.1, 0.1, 0.1], [0.2, 0.2, 0.2], [0.3, 0.3, 0.3], [0.4, 0.4, 0.4]],
        "latencies": [0.5, 1.0, 1.5, 2.0], "start_times": [10.0, 10.0, 10.0, 10.0],
        "queue_times": [0.0, 0.0, 0.0, 0.0], "generated_texts": ["a", "b", "c", "d"],
        "errors": ["", "", "", ""], "max_output_tokens_per_s": 16.0,
        "max_concurrent_requests": 4, "rtfx": 0.0,
        "mean_ttft_ms": 500.0, "median_ttft_ms": 500.0, "std_ttft_ms": 223.6,
        "p99_ttft_ms": 794.0, "mean_tpot_ms": 33.3, "median_tpot_ms": 33.3, "std_tpot_ms": 14.9,
        "p99_tpot_ms": 52.9, "mean_itl_ms": 250.0, "median_itl_ms": 250.0, "std_itl_ms": 111.8,
        "p99_itl_ms": 400.0,
    }
    document.update(changes)
    return document


def without_detail(document: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in document.items() if key not in DETAIL_KEYS}


def write_json(path: Path, *documents: dict[str, Any]) -> Path:
    """As vLLM writes them: --append-result puts a newline before every object but the first."""
    path.write_text("\n".join(json.dumps(document) for document in documents))
    return path


def test_it_imports_every_run_of_an_append_result_file(tmp_path):
    runs = write_json(
        tmp_path / "runs.json",
        vllm_bench_032(request_rate=1.0),
        vllm_bench_032(request_rate=2.0),
        vllm_bench_032(),
    )
    points = load_result_file(runs)
    assert [p.load.shape for p in points] == ["rate", "rate", "burst"]
    assert [p.load.rate for p in points] == [1.0, 2.0, None]
    assert len({p.key for p in points}) == 3
    assert points[1].key.startswith("import:runs.json:2:")
    assert all(len(p.requests) == 4 for p in points)


def test_it_names_the_bad_line_of_an_append_result_file_and_imports_nothing(tmp_path):
    good = json.dumps(vllm_bench_032())
    cut = tmp_path / "cut.json"
    cut.write_text(f"{good}\n{good[:300]}\n{good}")
    with pytest.raises(ImportFileError, match=r"cut\.json:2: not valid JSON.*cut short"):
        load_result_file(cut)
    foreign = write_json(tmp_path / "foreign.json", vllm_bench_032(), {"name": "left-pad"})
    with pytest.raises(ImportFileError, match=r"foreign\.json:2: not a result file Headroom"):
        load_result_file(foreign)
    bad_value = write_json(tmp_path / "value.json", vllm_bench_032(), vllm_bench_032(tp="two"))
    with pytest.raises(ImportFileError, match=r"value\.json:2: --metadata tp=two"):
        load_result_file(bad_value)


def test_it_computes_e2el_statistics_from_latencies_as_vllm_does():
    (point,) = _import(without_detail(vllm_bench_032()))
    latencies_ms = [500.0, 1000.0, 1500.0, 2000.0]
    metrics = point.metrics
    assert metrics.mean_e2el_ms == pytest.approx(1250.0)
    assert metrics.median_e2el_ms == pytest.approx(1250.0)
    assert metrics.std_e2el_ms == pytest.approx(np.std(latencies_ms))  # population std
    assert metrics.p90_e2el_ms == pytest.approx(1850.0)  # numpy linear: 1500 + 0.7 * 500
    assert metrics.p99_e2el_ms == pytest.approx(1985.0)
    assert any("e2el statistics" in n and "computed" in n for n in point.notes)


def test_it_leaves_failed_requests_out_of_the_computed_e2el():
    # vLLM leaves a failed request's latency at 0.0; without --save-detailed nothing else says so.
    plain = without_detail(vllm_bench_032(completed=3, failed=1, latencies=[0.5, 0.0, 1.5, 2.0]))
    (point,) = _import(plain)
    assert point.metrics.mean_e2el_ms == pytest.approx(4000.0 / 3)
    assert point.metrics.median_e2el_ms == pytest.approx(1500.0)
    detailed = vllm_bench_032(completed=3, failed=1, errors=["", "boom", "", ""])
    (point,) = _import(detailed)
    assert point.metrics.median_e2el_ms == pytest.approx(1500.0)
    assert [r.ok for r in point.requests] == [True, False, True, True]


def test_it_keeps_e2el_statistics_that_the_file_has():
    (point,) = _import(vllm_bench_032(mean_e2el_ms=999.0, p99_e2el_ms=1999.0))
    assert point.metrics.mean_e2el_ms == 999.0
    assert point.metrics.p90_e2el_ms is None
    assert not any("e2el statistics" in note for note in point.notes)


def test_it_keeps_request_goodput_and_says_its_slos_are_unknown():
    (point,) = _import(vllm_bench_032(request_goodput=1.2))
    assert point.metrics.request_goodput == 1.2
    assert point.metrics.goodput_slos == {}
    assert any("SLOs are unknown" in note for note in point.notes)
    (point,) = _import(vllm_bench_032(request_goodput=1.2, goodput="ttft:500,tpot:50"))
    assert point.metrics.goodput_slos == {"ttft": 500.0, "tpot": 50.0}
    with pytest.raises(ImportFileError, match="--metadata goodput=ttft:soon"):
        _import(vllm_bench_032(goodput="ttft:soon"))


def test_it_keeps_percentiles_other_than_p90_p95_p99_by_their_vllm_names():
    # --metric-percentiles 25,50,99,99.9
    (point,) = _import(
        vllm_bench_032(p25_ttft_ms=300.0, p50_ttft_ms=500.0, **{"p99.9_ttft_ms": 799.4})
    )
    assert point.metrics.p99_ttft_ms == 794.0
    assert point.metrics.other_percentiles == {
        "p25_ttft_ms": 300.0, "p50_ttft_ms": 500.0, "p99.9_ttft_ms": 799.4,
    }


def test_it_keeps_max_concurrency_beside_a_rate():
    (point,) = _import(vllm_bench_032(request_rate=8.0, burstiness=0.5, max_concurrency=2))
    load = point.load
    assert (load.shape, load.rate, load.burstiness, load.max_concurrency) == ("rate", 8.0, 0.5, 2)


def test_it_reads_an_infinite_request_rate_as_a_burst(tmp_path):
    as_vllm_writes_it = _import(vllm_bench_032(request_rate="inf"))[0]
    assert as_vllm_writes_it.load.shape == "burst"
    as_json_infinity = tmp_path / "infinity.json"
    as_json_infinity.write_text(json.dumps(vllm_bench_032(request_rate=float("inf"))))
    assert "Infinity" in as_json_infinity.read_text()
    assert load_result_file(as_json_infinity)[0].load.shape == "burst"
    capped = _import(vllm_bench_032(max_concurrency=2))[0]
    assert (capped.load.shape, capped.load.concurrency) == ("concurrency", 2)
    with pytest.raises(ImportFileError, match="request_rate"):
        _import(vllm_bench_032(request_rate="fast"))


def test_it_spreads_output_lens_over_each_requests_chunks():
    (point,) = _import(vllm_bench_032())
    first = point.requests[0]
    assert first.output_tokens == 10
    assert first.chunk_tokens == [1, 3, 3, 3]  # 1 on the first chunk, 9 over the other 3
    chat = vllm_bench_032(backend="openai-chat", output_lens=[4, 4, 4, 4],
                          itls=[[0.1] * 4, [0.1] * 4, [0.1] * 4, [0.1] * 4])
    (point,) = _import(chat)
    assert point.requests[0].chunk_tokens == [0, 1, 1, 1, 1]  # the role chunk carries none


def test_it_maps_metadata_to_engine_settings_and_provenance():
    metadata = {
        "max-num-seqs": "256", "max_num_batched_tokens": "8192", "gpu_memory_utilization": "0.9",
        "kv_cache_dtype": "fp8", "enable_prefix_caching": "false", "tp": "2",
        "stream_interval": "4", "gpu": "NVIDIA H200", "host": "node-7", "revision": "a" * 40,
        "precision": "bf16", "vllm_version": "0.32.0", "image": "vllm/vllm-openai:v0.32.0",
        "owner": "alice",
    }
    (point,) = _import(vllm_bench_032(**metadata))
    config = point.engine_config
    assert (config.max_num_seqs, config.max_num_batched_tokens) == (256, 8192)
    assert (config.gpu_memory_utilization, config.kv_cache_dtype) == (0.9, "fp8")
    assert (config.enable_prefix_caching, config.tensor_parallel_size) == (False, 2)
    assert config.stream_interval == 4
    provenance = point.provenance
    assert (provenance.hardware.gpu_name, provenance.hardware.host) == ("NVIDIA H200", "node-7")
    assert (provenance.checkpoint.revision, provenance.checkpoint.precision) == ("a" * 40, "bf16")
    assert (provenance.engine.version, provenance.engine.image) == (
        "0.32.0", "vllm/vllm-openai:v0.32.0"
    )
    assert "metadata kept as notes: owner=alice" in point.notes
    assert not any("engine settings are not recorded" in note for note in point.notes)
    assert any(note.startswith("engine settings from") and "seqs=256" in note
               for note in point.notes)


def test_it_does_not_take_vllms_own_keys_for_metadata():
    (point,) = _import(vllm_bench_032())
    kept = [note for note in point.notes if note.startswith("metadata kept")]
    assert kept == []
    assert any("max_output_tokens_per_s=16" in note for note in point.notes)
    defaults = "engine settings are not recorded in vllm bench files; shown as 'defaults'"
    assert defaults in point.notes


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_num_seqs", "many"),
        ("gpu_memory_utilization", "1.5"),
        ("enable_prefix_caching", "maybe"),
        ("revision", "main"),
    ],
)
def test_it_refuses_a_bad_metadata_value_naming_its_key(key, value):
    with pytest.raises(ImportFileError, match=f"--metadata {key}={value}"):
        _import(vllm_bench_032(**{key: value}))


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"completed": "three"}, "completed"),
        ({"ttfts": [0.2, "x", 0.6, 0.8]}, r"ttfts\.1"),
        ({"itls": [[0.1]]}, "itls has 1 entries but ttfts has 4"),
        ({"mean_ttft_ms": "fast"}, "mean_ttft_ms"),
        ({"duration": 0}, "duration"),
    ],
)
def test_it_refuses_malformed_vllm_bench_values_naming_the_field(changes, named):
    with pytest.raises(ImportFileError, match=named):
        _import(vllm_bench_032(**changes))


def test_it_refuses_deeply_nested_json_without_a_recursion_error(tmp_path):
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000)
    with pytest.raises(ImportFileError, match="nested too deeply"):
        load_result_file(nested)
    second_line = tmp_path / "second.json"
    second_line.write_text(json.dumps(vllm_bench_032()) + "\n" + "[" * 100_000)
    with pytest.raises(ImportFileError, match=r"second\.json:2: .*nested too deeply"):
        load_result_file(second_line)


def _import(document: dict[str, Any]) -> list[PointResult]:
    return [from_vllm_bench(document, source_name="bench.json")]
