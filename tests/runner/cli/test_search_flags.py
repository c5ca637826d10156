"""`python -m runner sweep --search`: the flags that make a plan adaptive, and their errors."""

from __future__ import annotations

from runner.cli.parser import main

from .test_parser import PLAN_YAML


def sweep(tmp_path, *flags: str) -> int:
    plan = tmp_path / "plan.yaml"
    plan.write_text(PLAN_YAML)
    return main(["sweep", str(plan), "--out", str(tmp_path / "r.jsonl"), "--dry-run", *flags])


def test_a_knee_search_is_printed_as_the_plans_candidates(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert sweep(tmp_path, "--search", "knee", "--tolerance", "3", "--point-budget", "5") == 0
    printed = capsys.readouterr().out
    assert "adaptive search for the saturation knee, to within 3%, at most 5 points" in printed


def test_search_settings_without_a_search_are_refused_not_ignored(tmp_path, capsys):
    assert sweep(tmp_path, "--tolerance", "3") == 2
    assert "--tolerance set an adaptive search: add --search knee" in capsys.readouterr().err


def test_an_slo_search_needs_a_limit(tmp_path, capsys):
    assert sweep(tmp_path, "--search", "slo") == 2
    assert "an SLO search needs at least one latency limit" in capsys.readouterr().err


def test_an_unknown_latency_is_refused_by_name(tmp_path, capsys):
    try:
        sweep(tmp_path, "--search", "slo", "--slo", "p42_ttft_ms:500")
    except SystemExit as exc:
        assert exc.code == 2
    assert "'p42_ttft_ms' is not a latency the search can limit" in capsys.readouterr().err


def test_a_knee_search_takes_no_latency_limits(tmp_path, capsys):
    assert sweep(tmp_path, "--search", "knee", "--slo", "p99_ttft_ms:500") == 2
    assert "latency limits are for an SLO search" in capsys.readouterr().err


def test_a_time_budget_is_printed_with_the_search(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")
    assert sweep(tmp_path, "--search", "knee", "--time-budget", "1800") == 0
    printed = " ".join(capsys.readouterr().out.split())  # rich wraps a long line
    assert "to within 2%, a budget of 1800 s on the node" in printed


def test_a_time_budget_must_be_a_positive_number_of_seconds(tmp_path, capsys):
    for bad in ("0", "-60", "nan", "an hour"):
        try:
            sweep(tmp_path, "--search", "knee", "--time-budget", bad)
        except SystemExit as exc:
            assert exc.code == 2
        assert "--time-budget: expected a finite number > 0" in capsys.readouterr().err


def test_an_infinite_budget_or_tolerance_is_refused_without_the_rate_flags_hint(tmp_path, capsys):
    for flag in ("--time-budget", "--tolerance"):
        try:
            sweep(tmp_path, "--search", "knee", flag, "inf")
        except SystemExit as exc:
            assert exc.code == 2
        err = capsys.readouterr().err
        assert f"{flag}: expected a finite number > 0, got 'inf'" in err
        assert "--shape burst" not in err


def test_a_time_budget_without_a_search_is_refused(tmp_path, capsys):
    assert sweep(tmp_path, "--time-budget", "600") == 2
    assert "--time-budget set an adaptive search" in capsys.readouterr().err
