"""The files vLLM's own benchmark code wrote: 0.32's `vllm bench serve` and `vllm bench sweep
serve`, 0.6.3, 0.7.3, 0.8.4, 0.8.5 and 0.9.2's benchmark_serving.py, `vllm bench serve` of 0.9.0,
0.9.1, 0.10.2, 0.11.0, 0.14.1, 0.16.0, 0.29.0 and 0.33.0 (tests/data/peers/vllm/, README.md
there): each run's figures are vLLM's as it stated them, the sweep's repeats and swept settings
come with each point; 0.29.0's named parameter sets and 0.32's warmup and failure files are read
or refused as vLLM meant them."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest

from runner.importer.files import load_result_file
from runner.importer.vllm_bench import TEXTLESS
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


# ---------------------------------------------------------------------------------------------
# benchmark_serving.py of vLLM 0.6.3 and 0.7.3 (tests/data/peers/vllm/README.md)
# ---------------------------------------------------------------------------------------------

OLDER = VLLM.parent
# What benchmark_serving.py states in every file of these releases (no `failed`, no p90/p95).
STATED_BEFORE_08 = ("duration", "completed", "total_input_tokens", "total_output_tokens",
                    "request_throughput", "output_throughput", "total_token_throughput",
                    "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms",
                    "mean_tpot_ms", "p99_tpot_ms", "median_itl_ms", "p99_itl_ms",
                    "mean_e2el_ms", "median_e2el_ms", "p99_e2el_ms")  # fmt: skip
BS_ARRAYS = ("benchmark_serving.py format, with per-request arrays (every file to vLLM 0.8.4, "
             "--save-detailed from 0.8.5)")  # fmt: skip
ARRAYS_ALWAYS = f"{BS_ARRAYS}; vLLM's version is not in the file"


@pytest.mark.parametrize("path", [
    OLDER / "0.6.3" / "rate4.json", OLDER / "0.7.3" / "rate4_goodput.json",
    OLDER / "0.7.3" / "concurrency2.json",
])  # fmt: skip
def test_an_older_benchmark_serving_file_has_vllms_own_figures_and_its_requests(path):
    stated = json.loads(path.read_text())
    [point] = load_result_file(path)
    for name in STATED_BEFORE_08:
        assert getattr(point.metrics, name) == pytest.approx(stated[name]), name
    # No `failed` key (none to 0.11 at least): failures are num_prompts - completed, said so.
    assert "failed" not in stated and point.metrics.failed == 0
    assert any("file has no 'failed' key" in note for note in point.notes)
    # Figures these releases do not state stay absent.
    assert point.metrics.p90_ttft_ms is None and point.metrics.p95_e2el_ms is None
    assert point.provenance is not None
    assert point.provenance.client_version == f"vllm bench serve (vllm) ({ARRAYS_ALWAYS})"
    # A TTFT of 0 is vLLM's for a stream that sent no text: no first token time here.
    assert [r.ttft or 0.0 for r in point.requests] == pytest.approx(stated["ttfts"])


def test_a_request_vllm_completed_without_text_says_so_and_keeps_vllms_count():
    stated = json.loads((OLDER / "0.6.3" / "rate4.json").read_text())
    [point] = load_result_file(OLDER / "0.6.3" / "rate4.json")
    textless = [i for i, ttft in enumerate(stated["ttfts"]) if ttft == 0]
    assert textless and stated["completed"] == stated["num_prompts"] == point.metrics.completed
    for index, record in enumerate(point.requests):
        assert record.ttft is None if index in textless else record.ok
        if index in textless:
            assert record.error == TEXTLESS
    assert any(f"{len(textless)} requests sent no chunk of text" in note for note in point.notes)


def test_vllm_0_6_names_neither_burstiness_nor_concurrency_and_runs_at_its_rate():
    stated = json.loads((OLDER / "0.6.3" / "rate4.json").read_text())
    [point] = load_result_file(OLDER / "0.6.3" / "rate4.json")
    assert "burstiness" not in stated and "max_concurrency" not in stated
    assert point.load.label() == "rate 4.0/s x 8" and point.load.burstiness == 1.0


def test_vllm_0_7_goodput_written_with_a_colon_is_its_request_goodput():
    stated = json.loads((OLDER / "0.7.3" / "rate4_goodput.json").read_text())
    [point] = load_result_file(OLDER / "0.7.3" / "rate4_goodput.json")
    assert point.metrics.request_goodput == stated["request_goodput:"] > 0
    assert not any("request_goodput:" in note for note in point.notes)
    # Without --goodput the key is there, null: no goodput.
    [plain] = load_result_file(OLDER / "0.7.3" / "concurrency2.json")
    assert plain.metrics.request_goodput is None


def test_vllm_0_7_max_concurrency_without_a_rate_is_a_closed_loop():
    [point] = load_result_file(OLDER / "0.7.3" / "concurrency2.json")
    assert point.load.label() == "concurrency 2 x 8"


# ---------------------------------------------------------------------------------------------
# benchmark_serving.py of vLLM 0.8.5, 0.9.2 and `vllm bench serve` of 0.11.0 (README.md)
# ---------------------------------------------------------------------------------------------

# What these state in every file with --percentile-metrics ttft,tpot,itl,e2el: still no `failed`
# and no p90/p95, and the per-request arrays only with --save-detailed (no latencies array).
STATED_08_TO_011 = (*STATED_BEFORE_08, "median_tpot_ms", "std_tpot_ms", "mean_itl_ms",
                    "std_itl_ms", "std_e2el_ms")  # fmt: skip
LABELS = {
    ("0.8.5", "plain.json"): "benchmark_serving.py format",
    ("0.8.5", "detailed.json"): BS_ARRAYS,
    ("0.9.2", "plain.json"): "benchmark_serving.py format",
    ("0.9.2", "detailed.json"): BS_ARRAYS,
    ("0.11.0", "plain.json"): "vllm bench serve format",
    ("0.11.0", "detailed.json"): "vllm bench serve format, with --save-detailed arrays",
}  # fmt: skip


def _same_as_stated_08_to_011(point, stated: dict) -> None:
    for name in STATED_08_TO_011:
        assert getattr(point.metrics, name) == pytest.approx(stated[name]), name
    assert "failed" not in stated and point.metrics.failed == 0
    assert any("file has no 'failed' key" in note for note in point.notes)
    assert point.metrics.p90_ttft_ms is None and point.metrics.p95_e2el_ms is None


@pytest.mark.parametrize(("version", "name"), sorted(LABELS))
def test_a_vllm_0_8_to_0_11_file_has_vllms_own_figures_under_its_format(version, name):
    path = OLDER / version / name
    stated = json.loads(path.read_text())
    [point] = load_result_file(path)
    _same_as_stated_08_to_011(point, stated)
    assert point.load.label() == "rate 4.0/s x 8"
    assert point.provenance is not None
    assert point.provenance.client_version == (
        f"vllm bench serve (vllm) ({LABELS[version, name]}; vLLM's version is not in the file)"
    )
    assert len(point.requests) == (8 if name == "detailed.json" else 0)


@pytest.mark.parametrize("version", ["0.8.5", "0.9.2", "0.11.0"])
def test_a_vllm_0_8_to_0_11_detailed_files_requests_give_back_its_e2el(version):
    # These releases save no latencies array: each request's e2el is its TTFT plus its ITLs,
    # the moment of its last chunk, which is where vLLM stopped its latency clock.
    stated = json.loads((OLDER / version / "detailed.json").read_text())
    [point] = load_result_file(OLDER / version / "detailed.json")
    assert "latencies" not in stated
    assert [r.ttft for r in point.requests] == pytest.approx(stated["ttfts"])
    assert [r.output_tokens for r in point.requests] == stated["output_lens"]
    e2els = [r.e2el for r in point.requests]
    assert sum(e2els) / len(e2els) * 1000 == pytest.approx(stated["mean_e2el_ms"], rel=1e-3)


@pytest.mark.parametrize("version", ["0.8.5", "0.9.1", "0.9.2", "0.11.0"])
def test_every_run_a_vllm_0_8_to_0_11_appended_is_a_point(version):
    path = OLDER / version / "append.json"
    lines = path.read_text().splitlines()
    points = load_result_file(path)
    assert len(points) == len(lines) == 2
    for point, line in zip(points, lines, strict=True):
        _same_as_stated_08_to_011(point, json.loads(line))
    assert [p.load.label() for p in points] == ["rate 4.0/s x 8", "concurrency 2 x 8"]


def test_vllm_0_11s_peak_figures_are_kept_as_its_own_under_their_names():
    stated = json.loads((OLDER / "0.11.0" / "plain.json").read_text())
    [point] = load_result_file(OLDER / "0.11.0" / "plain.json")
    [note] = [n for n in point.notes if n.startswith("vLLM figures without a Headroom field")]
    assert f"max_output_tokens_per_s={stated['max_output_tokens_per_s']:g}" in note
    assert f"max_concurrent_requests={stated['max_concurrent_requests']:g}" in note


def test_vllm_0_8_goodput_written_with_a_colon_is_its_request_goodput_and_0_9_drops_it():
    stated = json.loads((OLDER / "0.8.5" / "plain.json").read_text())
    [point] = load_result_file(OLDER / "0.8.5" / "plain.json")
    assert "request_goodput" not in stated
    assert point.metrics.request_goodput == stated["request_goodput:"] > 0
    # 0.9.2 writes the key without the colon (null: run without --goodput).
    later = json.loads((OLDER / "0.9.2" / "plain.json").read_text())
    assert "request_goodput:" not in later and later["request_goodput"] is None


# ---------------------------------------------------------------------------------------------
# A release of each format version the files above leave out (README.md, "Format versions"):
# benchmark_serving.py 0.8.4; `vllm bench serve` 0.9.0, 0.9.1, 0.10.2, 0.14.1, 0.16.0, 0.29.0,
# 0.33.0
# ---------------------------------------------------------------------------------------------

ALWAYS_08_TO_090 = ("vllm bench serve format, with per-request arrays (every file of vLLM 0.8.0 "
                    "to 0.9.0)")  # fmt: skip
SERVE_DETAILED = "vllm bench serve format, with --save-detailed arrays"
# (version, file) -> (the request function named in the provenance, the format it recognised)
FORMATS = {
    ("0.8.4", "plain.json"): ("vllm", BS_ARRAYS),
    ("0.8.4", "detailed.json"): ("vllm", BS_ARRAYS),
    ("0.9.0", "plain.json"): ("openai-comp", ALWAYS_08_TO_090),
    ("0.9.1", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.9.1", "detailed.json"): ("vllm", SERVE_DETAILED),
    ("0.10.2", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.10.2", "detailed.json"): ("vllm", SERVE_DETAILED),
    ("0.14.1", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.14.1", "detailed.json"): ("vllm", SERVE_DETAILED),
    ("0.16.0", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.16.0", "detailed.json"): ("vllm", SERVE_DETAILED),
    ("0.29.0", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.29.0", "detailed.json"): ("vllm", SERVE_DETAILED),
    ("0.33.0", "plain.json"): ("vllm", "vllm bench serve format"),
    ("0.33.0", "detailed.json"): ("vllm", SERVE_DETAILED),
}  # fmt: skip


@pytest.mark.parametrize(("version", "name"), sorted(FORMATS))
def test_a_file_of_each_format_version_has_vllms_own_figures_under_its_format(version, name):
    path = OLDER / version / name
    stated = json.loads(path.read_text())
    [point] = load_result_file(path)
    for key in (*STATED_08_TO_011, "failed"):
        if key in stated:
            assert getattr(point.metrics, key) == pytest.approx(stated[key]), key
    if "failed" not in stated:
        assert point.metrics.failed == 0
        assert any("file has no 'failed' key" in note for note in point.notes)
    assert point.load.label() == "rate 4.0/s x 8"
    backend, label = FORMATS[version, name]
    assert point.provenance is not None
    assert point.provenance.client_version == (
        f"vllm bench serve ({backend}) ({label}; vLLM's version is not in the file)"
    )
    assert len(point.requests) == (8 if "ttfts" in stated else 0)
    assert [r.ttft or 0.0 for r in point.requests] == pytest.approx(stated.get("ttfts", []))


def test_benchmark_serving_0_8_4_writes_the_requests_without_save_detailed():
    # 0.8.0 to 0.8.4 deleted the arrays from result_json before merging them into it.
    stated = json.loads((OLDER / "0.8.4" / "plain.json").read_text())
    [point] = load_result_file(OLDER / "0.8.4" / "plain.json")
    assert "ttfts" in stated and "best_of" not in stated
    assert len(point.requests) == 8 and all(r.ok for r in point.requests)
    assert point.metrics.request_goodput == stated["request_goodput:"]


def test_vllm_bench_serve_0_9_0_writes_the_requests_and_names_no_engine():
    stated = json.loads((OLDER / "0.9.0" / "plain.json").read_text())
    [point] = load_result_file(OLDER / "0.9.0" / "plain.json")
    assert stated["endpoint_type"] == "openai-comp" and "backend" not in stated
    assert "best_of" in stated and len(point.requests) == 8
    assert point.provenance is not None and point.provenance.engine.name is None
    assert any("backend 'openai-comp' is a request format" in note for note in point.notes)
    assert point.metrics.request_goodput == stated["request_goodput:"]


@pytest.mark.parametrize("version", ["0.9.1", "0.10.2"])
def test_vllm_bench_serve_before_0_11_names_vllm_by_its_endpoint_type(version):
    stated = json.loads((OLDER / version / "plain.json").read_text())
    [point] = load_result_file(OLDER / version / "plain.json")
    assert stated["endpoint_type"] == "vllm" and "backend" not in stated
    assert point.provenance is not None and point.provenance.engine.name == "vllm"


def test_vllm_0_16s_start_times_place_each_request():
    stated = json.loads((OLDER / "0.16.0" / "detailed.json").read_text())
    [point] = load_result_file(OLDER / "0.16.0" / "detailed.json")
    first = min(stated["start_times"])
    sends = [start - first for start in stated["start_times"]]
    assert [r.intended_send for r in point.requests] == pytest.approx(sends)
    assert not any("file has no start_times" in note for note in point.notes)


def test_vllm_0_29s_rtfx_is_kept_as_its_own_figure():
    stated = json.loads((OLDER / "0.29.0" / "plain.json").read_text())
    [point] = load_result_file(OLDER / "0.29.0" / "plain.json")
    [note] = [n for n in point.notes if n.startswith("vLLM figures without a Headroom field")]
    assert f"rtfx={stated['rtfx']:g}" in note


@pytest.mark.parametrize("version", ["0.12.0", "0.29.0"])
def test_an_older_sweep_folder_is_a_point_a_run_with_its_setting_and_repeat(version):
    folder = OLDER / version / "sweep" / "demo"
    points = load_result_file(folder)
    rows = list(csv.DictReader((folder / "summary.csv").read_text().splitlines()))
    assert len(points) == len(rows) == 8
    for point in points:
        stated = json.loads((folder / point.key.split("/", 1)[1].split(":")[0]).read_text())
        _same_as_stated(point, stated)
        assert point.engine_config.max_num_seqs == stated["max_num_seqs"]
        assert point.repeat == stated["run_number"]
        assert point.load.rate == stated["request_rate"]
        assert point.provenance is not None
        assert point.provenance.client_version == (
            "vllm bench serve (vllm) (vllm bench serve format, a vllm bench sweep run; vLLM's "
            "version is not in the file)"
        )
    for point, row in zip(load_result_file(folder / "summary.csv"), rows, strict=True):
        assert point.metrics.output_throughput == float(row["output_throughput"])
        assert point.engine_config.max_num_seqs == int(row["max_num_seqs"])


def test_a_sweep_of_named_parameter_sets_is_a_point_a_run_named_by_its_set():
    # vLLM 0.29.0's sweep with {"small": ...} serve and {"slow": ..., "fast": ...} bench sets:
    # each combination's folder is named after the sets, each run carries _benchmark_name.
    folder = OLDER / "0.29.0" / "sweep" / "named"
    points = load_result_file(folder)
    rows = list(csv.DictReader((folder / "summary.csv").read_text().splitlines()))
    assert [p.key.split("/")[1] for p in points] == ["SERVE--small-BENCH--fast",
                                                     "SERVE--small-BENCH--slow"]  # fmt: skip
    for point in points:
        stated = json.loads((folder / point.key.split("/", 1)[1].split(":")[0]).read_text())
        _same_as_stated(point, stated)
        assert point.engine_config.max_num_seqs == stated["max_num_seqs"] == 2
        assert point.load.rate == stated["request_rate"]
        assert f"_benchmark_name={stated['_benchmark_name']}" in " ".join(point.notes)
    from_csv = sorted(load_result_file(folder / "summary.csv"), key=lambda p: -p.load.rate)
    assert len(from_csv) == len(rows) == 2
    for point, run in zip(from_csv, points, strict=True):
        _same_as_stated(point, {name: getattr(run.metrics, name) for name in STATED})
        assert point.engine_config.max_num_seqs == 2


FAILURES = VLLM / "sweep" / "failures"


def test_a_sweep_with_warmup_and_failures_is_its_measured_runs_naming_the_failures():
    # vLLM 0.32's sweep with --warmup-num-prompts 2 --continue-on-error: one measured run, its
    # warmup.json, a refused bench set (run and warmup failure records) and a server set that
    # failed (SERVE-broken-failure.json).
    [point] = load_result_file(FAILURES)
    stated = json.loads((FAILURES / "SERVE--small-BENCH--fast" / "run=0.json").read_text())
    _same_as_stated(point, stated)
    assert point.key.startswith("import:failures/SERVE--small-BENCH--fast/run=0.json:")
    assert point.repeat == 0 and point.load.rate == 16.0
    [note] = [n for n in point.notes if n.startswith("this sweep also recorded 3 failure(s) "
                                                     "(vLLM's --continue-on-error records")]  # fmt: skip
    said = note.split("not imported): ", 1)[1].split("; failures/")
    assert said[0].startswith("failures/SERVE--small-BENCH--refused/run=0.failure.json: serve set "
                              "small, bench set refused, run 0 failed; vLLM: CalledProcessError: "
                              "Command '['nice', '-n', '19', ")  # fmt: skip
    assert said[0].endswith("'--result-filename', 'run=0.json']' returned non-zero exit status 1.")
    assert " ... " in said[0]  # vLLM's message holds the whole command: its middle is cut
    assert said[1].startswith("SERVE--small-BENCH--refused/warmup.failure.json: serve set small, "
                              "bench set refused, the warmup run failed; vLLM: "
                              "CalledProcessError: ")  # fmt: skip
    assert said[2] == ("SERVE-broken-failure.json: serve set broken failed before its runs; "
                       "vLLM: ValueError: invalid literal for int() with base 10: 'none'")
    [row] = load_result_file(FAILURES / "summary.csv")
    _same_as_stated(row, stated)


SERVER_EXIT = VLLM / "sweep" / "server-exit"


def test_a_sweep_whose_server_exited_keeps_its_measured_runs_and_names_the_exit():
    # vLLM 0.32's sweep with --continue-on-error over three serve sets: "steady" (two runs),
    # "dies" (its server exits after answering 4 requests: run 0 partly failed, run 1 wholly)
    # and "exits" (its server exits at once, code 2: SERVE-exits-failure.json, vLLM's
    # RuntimeError from sweep/server.py wait_until_ready).
    points = load_result_file(SERVER_EXIT)
    assert [p.key.split(":")[1] for p in points] == [
        "server-exit/SERVE--dies-BENCH--fast/run=0.json",
        "server-exit/SERVE--dies-BENCH--fast/run=1.json",
        "server-exit/SERVE--steady-BENCH--fast/run=0.json",
        "server-exit/SERVE--steady-BENCH--fast/run=1.json",
    ]
    for point in points:
        stated = json.loads((SERVER_EXIT / point.key.split(":")[1].split("/", 1)[1]).read_text())
        _same_as_stated(point, stated)
        assert point.repeat == stated["run_number"]
        assert point.metrics.valid == (stated["failed"] == 0)
        assert point.notes[-1] == (
            "this sweep also recorded 1 failure(s) (vLLM's --continue-on-error records, no "
            "figures; not imported): server-exit/SERVE-exits-failure.json: serve set exits: its "
            "server process exited (return code 2) before it was ready, so none of its runs was "
            "measured; vLLM: RuntimeError: Server process crashed with return code 2"
        )
    # The server that died mid-sweep left no record of its own: vLLM wrote the run after it
    # as a run whose 8 requests all failed, which Headroom keeps as an invalid point.
    assert (points[1].metrics.completed, points[1].metrics.failed) == (0, 8)
    rows = load_result_file(SERVER_EXIT / "summary.csv")
    assert sorted(p.metrics.duration for p in rows) == sorted(p.metrics.duration for p in points)


def test_an_unreadable_failure_record_is_named_as_such_and_the_runs_still_import(tmp_path):
    sweep = tmp_path / "server-exit"
    shutil.copytree(SERVER_EXIT, sweep)
    record = sweep / "SERVE-exits-failure.json"
    record.write_text(record.read_text()[:40])  # cut short, as a sweep killed mid-write leaves it
    points = load_result_file(sweep)
    assert len(points) == 4
    assert points[0].notes[-1].endswith("server-exit/SERVE-exits-failure.json: not a failure "
                                        "record vLLM wrote (unreadable)")  # fmt: skip


@pytest.mark.parametrize(("path", "why"), [
    (FAILURES / "SERVE-broken-failure.json", "a failed server combination (ValueError)"),
    (FAILURES / "SERVE--small-BENCH--refused/run=0.failure.json",
     "a failed run (CalledProcessError)"),
    (FAILURES / "SERVE--small-BENCH--refused/warmup.failure.json",
     "a failed warmup run (CalledProcessError)"),
    (SERVER_EXIT / "SERVE-exits-failure.json", "a failed server combination (RuntimeError)"),
])  # fmt: skip
def test_a_sweep_failure_record_is_refused_by_name(path, why):
    with pytest.raises(ImportFileError, match=(
        rf"vllm bench sweep --continue-on-error failure record: {re.escape(why)}: it holds no "
        "figures, and Headroom does not import failures"
    )):  # fmt: skip
        load_result_file(path)


def test_a_sweeps_warmup_is_refused_as_unmeasured_not_read_as_run_0():
    with pytest.raises(ImportFileError, match=r"warmup\.json: vllm bench sweep warmup\.json: the "
                       r"unmeasured warmup run \(--warmup-num-prompts, run_number -1\)"):  # fmt: skip
        load_result_file(FAILURES / "SERVE--small-BENCH--fast" / "warmup.json")


@pytest.mark.parametrize("sweep", [
    OLDER / "0.29.0" / "sweep" / "workload", OLDER / "0.12.0" / "sweep" / "sla",
])  # fmt: skip
def test_a_serve_workload_or_sla_sweep_is_a_point_a_run_at_its_load(sweep):
    # vllm bench sweep serve_workload (0.17.0 on: folders ...-WL--request_rate=N) and serve_sla
    # (0.11.1-0.16.0: a k=v/ folder per tried value): each run=N.json is a point at the load it
    # states, with vLLM's own figures; summary.csv gives the same.
    points = load_result_file(sweep)
    runs = sorted(sweep.rglob("run=*.json"))
    rows = list(csv.DictReader((sweep / "summary.csv").read_text().splitlines()))
    assert len(points) == len(runs) == len(rows) >= 2
    for point in points:
        stated = json.loads((sweep / point.key.split("/", 1)[1].split(":")[0]).read_text())
        _same_as_stated(point, stated)
        assert point.load.rate == stated["request_rate"]
        assert point.load.max_concurrency == stated["max_concurrency"]
        assert point.repeat == stated["run_number"]
        assert point.engine_config.max_num_seqs == stated.get("max_num_seqs")
    by_date = {p.key.rsplit(":", 1)[1]: p for p in points}
    for row_point in load_result_file(sweep / "summary.csv"):
        run = by_date[row_point.key.rsplit(":", 1)[1]]
        _same_as_stated(row_point, {name: getattr(run.metrics, name) for name in STATED})
        assert (row_point.load.rate, row_point.load.max_concurrency) == (
            run.load.rate, run.load.max_concurrency)  # fmt: skip


def test_a_serve_sla_sweeps_sla_file_is_the_list_of_every_run_it_tried():
    # vLLM 0.12.0's serve_sla writes SLA--<constraint>.json beside the k=v/ folders: every run
    # of its search, in the order it ran them (as summary.json lists a combination's runs).
    [sla_file] = (OLDER / "0.12.0" / "sweep" / "sla").rglob("SLA--*.json")
    runs = json.loads(sla_file.read_text())
    points = load_result_file(sla_file)
    assert len(points) == len(runs) >= 2
    for point, run in zip(points, runs, strict=True):
        _same_as_stated(point, run)
        assert point.load.rate == run["request_rate"]
