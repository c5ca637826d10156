"""The regression watch's rule (runner.regression) and `python -m runner compare`, on hand-made
baselines: within the spread, beyond it, a differing factor, the CLI's exit status."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.cli.parser import main
from runner.regression import FIGURES, check_figure, compare_runs, plan_key
from runner.results import append_point
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.result import ClientHealth, EngineInfo, Hardware, PointResult, Provenance
from tests import factories

THROUGHPUT = FIGURES[0]
MEDIAN_E2EL = next(f for f in FIGURES if f.name == "median_e2el_ms")


def provenance(version: str = "0.32.0", revision: str | None = "a" * 40) -> Provenance:
    return Provenance(
        hardware=Hardware(host="node-1", gpu_count=1, gpu_name="NVIDIA H200"),
        engine=EngineInfo(launch_style="serve", name="vllm", version=version, cache_dtype="fp8"),
        checkpoint=Checkpoint(model="Qwen/Qwen3-30B-A3B", revision=revision, precision="NVFP4"),
        client_version="headroom-runner 0.1.0",
        started_at="2026-12-01T10:00:00Z",
    )


def point(
    throughput: float, *, seqs: int = 8, burst: int = 100, repeat: int = 0,
    e2el_ms: float = 5_000.0, version: str = "0.32.0", revision: str | None = "a" * 40,
    **overrides: object
) -> PointResult:
    latencies = {**factories.BURST_LATENCIES_MS, "median_e2el_ms": e2el_ms}
    return factories.point_result(
        engine_config=EngineConfig(max_num_seqs=seqs),
        load=LoadSpec(shape="burst", num_requests=burst),
        repeat=repeat,
        metrics=factories.metrics_at(throughput, completed=burst,
                                     **{**latencies, **overrides}),
        provenance=provenance(version, revision),
    )


# Baseline repeats 1,000 and 1,040 tok/s: with a 5% tolerance a candidate regresses below
# 1,000 x 0.95 = 950 and improves above 1,040 x 1.05 = 1,092.
BASELINE = [point(1000.0, repeat=0), point(1040.0, repeat=1)]


@pytest.mark.parametrize(
    ("candidate", "verdict"),
    [
        ([951.0], "within spread"),
        ([949.0], "regressed"),
        ([1092.0], "within spread"),
        ([1093.0], "improved"),
        # One repeat inside the band is enough to clear a regression, and to deny an improvement.
        ([900.0, 960.0], "within spread"),
        ([1200.0, 1090.0], "within spread"),
    ],
)
def test_throughput_is_judged_against_the_spread_widened_by_the_tolerance(candidate, verdict):
    check = check_figure(THROUGHPUT, [1000.0, 1040.0], candidate, 5.0)
    assert check.verdict == verdict


def test_a_latency_regresses_upward():
    # Baseline 5,000-5,200 ms: regressed above 5,200 x 1.05 = 5,460, improved below 4,750.
    assert check_figure(MEDIAN_E2EL, [5000.0, 5200.0], [5461.0], 5.0).verdict == "regressed"
    assert check_figure(MEDIAN_E2EL, [5000.0, 5200.0], [5459.0], 5.0).verdict == "within spread"
    assert check_figure(MEDIAN_E2EL, [5000.0, 5200.0], [4749.0], 5.0).verdict == "improved"


@pytest.mark.parametrize(
    ("figure", "candidate"),
    [
        # Exactly on the tolerance is not beyond it: "by more than" is strict, both ways.
        (THROUGHPUT, 1000.0 * 0.95),
        (THROUGHPUT, 1040.0 * 1.05),
        (MEDIAN_E2EL, 5200.0 * 1.05),
        (MEDIAN_E2EL, 5000.0 * 0.95),
    ],
)
def test_a_figure_exactly_on_the_tolerance_is_within_spread(figure, candidate):
    baseline = [1000.0, 1040.0] if figure.higher_is_better else [5000.0, 5200.0]
    assert candidate in (950.0, 1092.0, 5460.0, 4750.0)  # the bound itself, no rounding
    assert check_figure(figure, baseline, [candidate], 5.0).verdict == "within spread"


def test_the_change_is_median_against_median():
    check = check_figure(THROUGHPUT, [1000.0, 1040.0], [816.0], 5.0)
    assert check.change_pct == pytest.approx((816 - 1020) / 1020 * 100)


def test_a_regressed_config_is_named_and_the_others_are_not():
    baseline = [*BASELINE, point(2000.0, seqs=64), point(2010.0, seqs=64, repeat=1)]
    candidate = [point(1010.0), point(1500.0, seqs=64)]
    report = compare_runs(baseline, candidate)
    assert report.verdict == "regressed"
    assert report.regressed_configs == ("seqs=64",)
    verdicts = {c.config: c.verdict for c in report.configs}
    assert verdicts == {"seqs=8": "within spread", "seqs=64": "regressed"}
    line = next(c.sentence() for c in report.configs if c.config == "seqs=64")
    assert line.startswith("seqs=64 regressed: at burst 100, output throughput 1,500.0 tok/s")
    assert "against the baseline's 2,000.0-2,010.0" in line


def test_a_latency_alone_makes_a_regression():
    report = compare_runs(BASELINE, [point(1020.0, e2el_ms=9_000.0)])
    assert report.verdict == "regressed"
    assert "median E2EL 9,000.0 ms" in report.configs[0].sentence()


def test_the_factors_that_differ_are_named_beside_the_verdict():
    candidate = [point(1010.0, version="0.33.0")]
    report = compare_runs(BASELINE, candidate)
    assert report.verdict == "within spread"
    assert report.differing == ("runtime version: 0.32.0 -> 0.33.0",)
    assert report.factors_sentence().startswith("not a controlled comparison")


def test_matching_factors_make_a_controlled_comparison():
    report = compare_runs(BASELINE, [point(1010.0)])
    assert (report.differing, report.unknown) == ((), ())
    assert report.factors_sentence() == "every fixed factor matches (a controlled comparison)"


def test_a_factor_one_side_did_not_record_is_unknown_not_equal():
    report = compare_runs(BASELINE, [point(1010.0, revision=None)])
    assert report.unknown == ("checkpoint revision",)
    assert report.factors_sentence().endswith("not recorded on both sides: checkpoint revision")


def test_an_invalid_repeat_is_left_out_and_a_setting_without_one_cannot_be_judged():
    bad = point(400.0, failed=3)
    assert not bad.metrics.valid
    assert compare_runs(BASELINE, [bad, point(1010.0, repeat=1)]).verdict == "within spread"
    report = compare_runs(BASELINE, [bad])
    assert report.verdict == "not comparable"
    assert "the candidate has no valid repeat" in report.configs[0].sentence()


def test_what_could_distort_a_verdict_is_said_beside_it():
    saturated = point(1010.0, repeat=1).model_copy(
        update={"client": ClientHealth(saturated=True, reasons=["event-loop lag"])})
    report = compare_runs(BASELINE, [point(400.0, failed=3), saturated])
    assert report.verdict == "within spread"
    assert report.configs[0].sentence().endswith(
        "(doubtful: at burst 100, 1 invalid repeat(s) of the candidate left out; at burst 100, "
        "the candidate's client saturated in 1 repeat(s))")


def test_settings_on_one_side_only_are_listed_not_judged():
    report = compare_runs(BASELINE, [point(1010.0), point(900.0, burst=200)])
    assert report.verdict == "within spread"
    assert [s.load for s in report.only_candidate] == ["burst 200"]


def test_files_with_no_setting_in_common_are_not_comparable():
    report = compare_runs(BASELINE, [point(1010.0, seqs=16)])
    assert report.verdict == "not comparable"
    assert report.configs == ()


def test_the_plan_key_ignores_what_run_again_changes():
    plan = {"name": "a", "engine_configs": [{"max_num_seqs": 8}], "loads": [{"n": 1}],
            "workload": {"output_tokens": 256}, "replicas": 1, "repeats": 2,
            "checkpoint": {"model": "m", "revision": "a" * 40}, "launch": {"image": "v:0.32"}}
    again = {**plan, "name": "b", "repeats": 3, "checkpoint": {"model": "m", "revision": "b" * 40},
             "launch": {"image": "v:0.33"}}
    other = {**plan, "loads": [{"n": 2}]}
    assert plan_key(plan) == plan_key(again)
    assert plan_key(plan) != plan_key(other)
    assert plan_key(plan) != plan_key({**plan, "checkpoint": {"model": "other"}})


def _write(path: Path, points: list[PointResult]) -> Path:
    for p in points:
        append_point(path, p)
    return path


def test_cli_exits_non_zero_with_the_reason_on_a_regression(tmp_path, capsys):
    baseline = _write(tmp_path / "base.jsonl", BASELINE)
    candidate = _write(tmp_path / "cand.jsonl", [point(900.0, version="0.33.0")])
    status = main(["compare", str(baseline), str(candidate), "--fail-on-regression", "5"])
    out = capsys.readouterr()
    assert status == 1
    assert out.out.splitlines()[0] == "regressed (tolerance 5% beyond the baseline's repeat spread)"
    assert "runtime version: 0.32.0 -> 0.33.0" in out.out
    assert "error: regression beyond 5% in seqs=8" in out.err


def test_cli_passes_within_the_tolerance_and_reports_without_the_flag(tmp_path, capsys):
    baseline = _write(tmp_path / "base.jsonl", BASELINE)
    candidate = _write(tmp_path / "cand.jsonl", [point(900.0)])
    # 900 is within 1,000 x (1 - 0.15) = 850.
    assert main(["compare", str(baseline), str(candidate), "--fail-on-regression", "15"]) == 0
    # Without the flag a regression is reported, at the default tolerance, and exits 0.
    assert main(["compare", str(baseline), str(candidate)]) == 0
    assert "regressed (tolerance 5%" in capsys.readouterr().out


@pytest.mark.parametrize("value", ["-1", "100", "nan", "five"])
def test_cli_refuses_a_bad_tolerance(tmp_path, value, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["compare", "a", "b", "--fail-on-regression", value])
    assert exit_info.value.code == 2
    assert "expected a percentage from 0 to under 100" in capsys.readouterr().err


def test_cli_says_which_file_it_cannot_read(tmp_path, capsys):
    baseline = _write(tmp_path / "base.jsonl", BASELINE)
    assert main(["compare", str(baseline), str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: no such file" in capsys.readouterr().err
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text(json.dumps({"not": "a result"}) + "\n")
    assert main(["compare", str(baseline), str(garbage)]) == 2
    assert "garbage.jsonl" in capsys.readouterr().err


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_figure_that_is_not_finite_is_not_comparable_and_named(value):
    candidate = point(1000.0).model_copy(deep=True)
    candidate.metrics.median_ttft_ms = value
    report = compare_runs(BASELINE, [candidate])
    assert report.verdict == "not comparable"
    assert report.not_finite == (f"seqs=8 at burst 100: the candidate's median TTFT is {value}",)


def test_cli_fails_the_gate_on_a_candidate_whose_figures_are_nan(tmp_path, capsys):
    baseline = _write(tmp_path / "base.jsonl", BASELINE)
    # As a hand-made or broken file has them: json writes NaN, pydantic reads it back.
    document = point(1000.0).model_dump(mode="json")
    for figure in FIGURES:
        document["metrics"][figure.name] = float("nan")
    candidate = tmp_path / "cand.jsonl"
    candidate.write_text(json.dumps(document) + "\n")
    status = main(["compare", str(baseline), str(candidate), "--fail-on-regression", "5"])
    out = capsys.readouterr()
    assert status == 1
    assert "within spread" not in out.out
    assert ("error: not a finite number, so no verdict: seqs=8 at burst 100: the candidate's "
            "output throughput is nan;") in out.err


def test_cli_refuses_files_with_nothing_in_common(tmp_path, capsys):
    baseline = _write(tmp_path / "base.jsonl", BASELINE)
    candidate = _write(tmp_path / "cand.jsonl", [point(1000.0, seqs=16)])
    assert main(["compare", str(baseline), str(candidate), "--fail-on-regression", "5"]) == 2
    assert "share no setting" in capsys.readouterr().err
