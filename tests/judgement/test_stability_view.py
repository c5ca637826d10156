"""How sure a run's figures are, as the run page, the comparison page and the report say it
(judgement.stability_view): the noise, the drift, a disturbed point, and the intervals."""

from __future__ import annotations

import html
import math
import re

import pytest
from django.test import Client

from benchmarks.models import Benchmark, Comparison
from runner.schema.result import HostCpu
from tests.reports.helpers import make_report
from tests.rows import make_benchmark

from .helpers import point, store

pytestmark = pytest.mark.django_db

QUIET = HostCpu(window_s=10.0, cpus=2, busy_s=11.0, own_s=1.0, engine_s=9.8, steal_s=0.0)
# Others took 0.9 of a core for 10 s.
NOISY = HostCpu(window_s=10.0, cpus=2, busy_s=20.0, own_s=1.0, engine_s=10.0, steal_s=0.0)


def drifting_run(*, control: float, disturbed_at: int | None = None) -> Benchmark:
    """max_num_seqs 4 and 64 at burst 16, 32, 64, one draw each, and each config's control point
    (burst 16 again, its repeat 1) at `control` times its first draw."""
    benchmark = make_benchmark(state="running", points_total=8)
    ladders = {4: (1000.0, 1500.0, 1530.0), 64: (1100.0, 2000.0, 3600.0)}
    for seqs, throughputs in ladders.items():
        for level, throughput in zip((16, 32, 64), throughputs, strict=True):
            host = NOISY if (seqs, level) == (4, disturbed_at) else QUIET
            store(benchmark, max_num_seqs=seqs, num_requests=level, throughput=throughput,
                  median_e2el_ms=level * 100.0, mean_running=4.0, mean_waiting=level - 4.0,
                  update={"host": host})
        store(benchmark, max_num_seqs=seqs, num_requests=16, throughput=throughputs[0] * control,
              median_e2el_ms=1600.0, mean_running=4.0, mean_waiting=12.0, repeat=1,
              update={"host": QUIET, "control": True})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    benchmark.refresh_from_db()
    return benchmark


def test_the_run_page_says_the_control_points_are_the_runs_noise(owner_client):
    benchmark = drifting_run(control=0.9)
    page = html.unescape(owner_client.get(f"/runs/{benchmark.code}/").content.decode())
    # Both pairs moved -10%: sd = ln(1/0.9) / sqrt 2; one draw good to exp(1.96 sd) - 1.
    band = math.expm1(1.96 * math.log(1 / 0.9) / math.sqrt(2)) * 100
    assert (f"moved -10.0% and -10.0%. With one draw per level, these control points are the "
            f"run's only measure of its noise: one draw is good to ±{band:.1f}%") in page
    # The operating point's figures carry their interval.
    assert re.search(r'id="operating-point-interval">[\d,]+ output tok/s \(95% interval '
                     r"[\d,]+-[\d,]+, from 1 draw\(s\)\)", page)


def test_a_disturbed_point_is_named_drawn_hollow_and_caveated(owner_client):
    benchmark = drifting_run(control=1.0, disturbed_at=32)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    page = html.unescape(response.content.decode())
    assert ("Other processes on the host disturbed 1 point(s) (seqs=4 at burst 32): they are "
            "drawn hollow") in page
    disturbed = point(benchmark, 4, 32)
    assert disturbed.caveats.filter(code="disturbed-host").exists()
    assert "other processes took 0.90 of a core" in disturbed.caveats.get(
        code="disturbed-host").text
    trace = next(t for t in response.context["throughput_figure"]["traces"]
                 if t["name"] == "seqs=4")
    assert trace["valid"] == [True, True, False, True]
    assert "disturbed: others took 0.90 cores" in trace["text"][2]


def test_the_comparison_and_the_report_give_the_ratio_with_its_interval(owner, owner_client):
    benchmark = drifting_run(control=0.9)
    before, after = point(benchmark, 4, 64), point(benchmark, 64, 64)
    comparison = Comparison.objects.create(name="c", baseline_point=before,
                                           candidate_point=after, created_by=owner)
    page = html.unescape(owner_client.get(f"/comparisons/{comparison.code}/").content.decode())
    # 3600 / 1530 = 2.35x, one draw a side, both runs' sd ln(1/0.9) / sqrt 2.
    half = 1.96 * math.sqrt(2 * (math.log(1 / 0.9) / math.sqrt(2)) ** 2)
    ratio = 3600 / 1530
    expected = (f"{ratio:.2f}x (95% interval {ratio * math.exp(-half):.2f}x-"
                f"{ratio * math.exp(half):.2f}x, from 1 and 1 draws)")
    assert f"Candidate / baseline output tokens/s: {expected}." in page
    report = make_report(benchmark, owner, baseline_point=before, candidate_point=after,
                         scaling_point=None, scaling_reference=None,
                         items=["headline", "curves"])
    body = html.unescape(Client().get(f"/r/{report.issued_token}/").content.decode())
    assert f"Ratio: {expected}." in body
    # The operating point's figures carry the interval the run page gives them.
    run_page = html.unescape(owner_client.get(f"/runs/{benchmark.code}/").content.decode())
    shown = re.search(r'id="operating-point-interval">([^<]*)</p>', run_page)
    assert shown is not None and f'id="curve-interval">{shown.group(1)}</p>' in body
    assert "Before: Each engine config's first load level was measured again" in body


def ended_run(end: float) -> Benchmark:
    """max_num_seqs 4 and 64 at burst 16 and 32, two draws each (the second 10% above the first:
    the band of a pair is +/-20.5%), then the end control: seqs=4 at burst 16 once more, on a
    fresh start after seqs=64, at `end` times its first draw."""
    benchmark = make_benchmark(state="running", points_total=9)
    for seqs, base in ((4, 1000.0), (64, 2000.0)):
        for repeat, factor in ((0, 1.0), (1, 1.1)):
            for level, times in ((16, 1.0), (32, 1.5)):
                store(benchmark, max_num_seqs=seqs, num_requests=level,
                      throughput=base * times * factor, median_e2el_ms=level * 100.0,
                      mean_running=4.0, mean_waiting=level - 4.0, repeat=repeat,
                      update={"host": QUIET})
    store(benchmark, max_num_seqs=4, num_requests=16, throughput=1000.0 * end,
          median_e2el_ms=1600.0, mean_running=4.0, mean_waiting=12.0, repeat=2,
          update={"host": QUIET, "end_control": True})
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    benchmark.refresh_from_db()
    return benchmark


END_DRIFT_EN = ("Drifted by -25.0% between the start and the end of the sweep: seqs=4's first "
                "load level, measured again on a fresh engine start after the last config, moved "
                "beyond the ±20.5% its repeats scatter by.")
END_DRIFT_KO = "스윕의 시작과 끝 사이에 -25.0% 표류했습니다."


def test_an_end_control_beyond_the_spread_is_said_on_the_run_page_the_comparison_and_report(
    owner, owner_client
):
    benchmark = ended_run(0.75)
    assert point(benchmark, 4, 16, repeat=2).end_control
    page = html.unescape(owner_client.get(f"/runs/{benchmark.code}/").content.decode())
    assert END_DRIFT_EN in page
    before, after = point(benchmark, 4, 32), point(benchmark, 64, 32)
    comparison = Comparison.objects.create(name="c", baseline_point=before,
                                           candidate_point=after, created_by=owner)
    compared = html.unescape(
        owner_client.get(f"/comparisons/{comparison.code}/").content.decode())
    assert END_DRIFT_EN in compared
    # The drift widens the ratio's interval: both sides' sd is the end pair's, |ln 0.75| / sqrt 2,
    # over two draws each (2,250 and 2,475 against 4,500 and 4,950: exactly 2x).
    sd = abs(math.log(0.75)) / math.sqrt(2)
    half = 1.96 * math.sqrt(2 * sd ** 2 / 2)
    assert (f"2.00x (95% interval {2 * math.exp(-half):.2f}x-{2 * math.exp(half):.2f}x, from 2 "
            "and 2 draws)") in compared
    for language, words in (("en", END_DRIFT_EN), ("ko", END_DRIFT_KO)):
        report = make_report(benchmark, owner, baseline_point=before, candidate_point=after,
                             scaling_point=None, scaling_reference=None, language=language,
                             items=["headline", "curves"])
        body = html.unescape(Client().get(f"/r/{report.issued_token}/").content.decode())
        assert words in body


def test_an_end_control_inside_the_spread_says_no_drift_and_leaves_the_band(owner_client):
    page = html.unescape(owner_client.get(f"/runs/{ended_run(1.1).code}/").content.decode())
    assert ("The end control (seqs=4's first load level, measured again on a fresh engine start "
            "after the last config) moved +10.0%, inside the ±20.5% the repeats scatter by: no "
            "drift between the start and the end of the sweep.") in page
    assert "Drifted by" not in page
