"""The files vLLM 0.32's own `vllm bench serve` and `vllm bench sweep serve` wrote
(tests/data/peers/vllm/, README.md there): each run's figures are vLLM's as it stated them, the
sweep's repeats and swept settings come with each point."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError

VLLM = Path(__file__).parents[2] / "data" / "peers" / "vllm" / "0.32"
BENCH = VLLM / "bench"
SWEEP = VLLM / "sweep" / "demo"
STATED = ("duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
          "request_throughput", "output_throughput", "total_token_throughput", "mean_ttft_ms",
          "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_itl_ms", "median_e2el_ms")  # fmt: skip


def _same_as_stated(point, stated: dict) -> None:
    for name in STATED:
        assert getattr(point.metrics, name) == pytest.approx(stated[name]), name


@pytest.mark.parametrize("name", ["plain.json", "detailed.json"])
def test_a_vllm_bench_file_has_vllms_own_figures(name):
    stated = json.loads((BENCH / name).read_text())
    [point] = load_result_file(BENCH / name)
    _same_as_stated(point, stated)
    assert point.load.rate == 4.0
    assert point.provenance is not None
    assert point.provenance.client_version.startswith("vllm bench serve (vllm) (vllm bench serve "
                                                      "format")  # fmt: skip
    assert len(point.requests) == (8 if name == "detailed.json" else 0)


def test_the_detailed_files_requests_give_back_its_statistics():
    stated = json.loads((BENCH / "detailed.json").read_text())
    [point] = load_result_file(BENCH / "detailed.json")
    assert [r.ttft for r in point.requests] == pytest.approx(stated["ttfts"])
    assert [r.output_tokens for r in point.requests] == stated["output_lens"]


def test_every_appended_run_is_a_point():
    lines = (BENCH / "append.json").read_text().splitlines()
    points = load_result_file(BENCH / "append.json")
    assert len(points) == len(lines) == 2
    for point, line in zip(points, lines, strict=True):
        _same_as_stated(point, json.loads(line))
    assert [p.load.label() for p in points] == ["rate 4.0/s x 8", "concurrency 2 x 8"]


def test_a_sweep_folder_is_a_point_a_run_with_its_setting_and_repeat():
    points = load_result_file(SWEEP)
    assert len(points) == 12
    for point in points:
        stated = json.loads((SWEEP / point.key.split("/", 1)[1].split(":")[0]).read_text())
        _same_as_stated(point, stated)
        assert point.engine_config.max_num_seqs == stated["max_num_seqs"]
        assert point.repeat == stated["run_number"]
        assert point.load.rate == stated["request_rate"]
    assert any("from the sweep's serve parameters: seqs=8" in n for n in points[-1].notes)
    assert {(p.engine_config.max_num_seqs, p.load.rate) for p in points} == {
        (2, 4.0), (2, 16.0), (8, 4.0), (8, 16.0)}


def test_the_sweeps_summary_csv_gives_the_same_figures_as_its_runs():
    rows = list(csv.DictReader((SWEEP / "summary.csv").read_text().splitlines()))
    points = load_result_file(SWEEP / "summary.csv")
    assert len(points) == len(rows) == 12
    for point, row in zip(points, rows, strict=True):
        assert point.metrics.duration == float(row["duration"])
        assert point.metrics.output_throughput == float(row["output_throughput"])
        assert point.metrics.p99_e2el_ms == float(row["p99_e2el_ms"])
        assert point.engine_config.max_num_seqs == int(row["max_num_seqs"])
        assert point.repeat == int(row["run_number"])
    assert "its --save-detailed columns (latencies" in points[0].notes[-1]


def test_a_combinations_summary_json_is_its_runs():
    folder = SWEEP / "SERVE--max_num_seqs=8-BENCH--request_rate=4"
    runs = json.loads((folder / "summary.json").read_text())
    points = load_result_file(folder / "summary.json")
    for point, run in zip(points, runs, strict=True):
        _same_as_stated(point, run)
    assert [p.repeat for p in points] == [0, 1, 2]


def test_a_csv_that_is_not_a_sweep_summary_is_refused(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(ImportFileError, match=r"data\.csv: not a vllm bench sweep summary\.csv"):
        load_result_file(path)
