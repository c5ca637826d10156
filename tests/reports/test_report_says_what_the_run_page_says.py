"""The report quotes the judgement layer as the run page does: the same operating point and
measured step, references only at their own spec, one table row per comparison, and a
methodology that describes each side's own hardware."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from benchmarks.models import Benchmark, ExternalReference, Point
from benchmarks.storage.operating_points import save_operating_point
from benchmarks.storage.points import store_point
from judgement.figures import figures, figures_by_key
from judgement.lora_view import adapter_rows
from judgement.operating_point import select
from judgement.scaling_view import scaling_for
from judgement.verdict_rows import step_story, verdict_rows
from runner.schema.plan import WorkloadSpec
from tests import rows as factories
from tests.reports.conftest import make_sweep, point, point_result
from tests.reports.helpers import drafting_lora_sides, make_report

pytestmark = pytest.mark.django_db

SPEC_1000 = WorkloadSpec(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)


def _text(body: str, element_id: str) -> str:
    match = re.search(rf'id="{element_id}"[^>]*>(.*?)</', body, re.DOTALL)
    assert match, element_id
    return html.unescape(match.group(1)).strip()


def _section(body: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}".*?</section>', body, re.DOTALL)
    assert match, section_id
    return html.unescape(re.sub(r"<[^>]+>", " ", match.group(0)))


def _benchmark(owner) -> Benchmark:
    return factories.make_benchmark(node=factories.make_node(queue="node-ladder"),
                                    state="succeeded", created_by=owner)


def _ladder(benchmark: Benchmark, seqs: int, levels: list[tuple[int, float, float]]) -> None:
    """(requests, output tokens/s, median latency ms) per load level of one engine config."""
    for requests, tps, e2el in levels:
        store_point(benchmark, point_result(seqs, requests, throughput=tps, median_e2el_ms=e2el))


# A knee ladder as in the case study: the last step adds under 1% output tokens/s while median
# latency rises by half. The knee's thresholds (2% / 20%) are not the measured step.
KNEE_LADDER = [(16, 30000.0, 2000.0), (32, 41000.0, 2500.0), (64, 41200.0, 3750.0)]


@pytest.mark.parametrize("stored", [False, True], ids=["default", "saved"])
def test_the_trade_off_sentence_quotes_the_measured_step_not_the_knee_thresholds(
        owner, owner_client, stored):
    benchmark = _benchmark(owner)
    _ladder(benchmark, 64, KNEE_LADDER)
    if stored:
        points = list(benchmark.points.all())
        figs = list(figures_by_key(points)[0].values())
        save_operating_point(benchmark, select("knee", {}, figs), points)
    report = make_report(benchmark, owner, baseline_point=point(benchmark, 64, 16),
                         candidate_point=point(benchmark, 64, 32), scaling_point=None,
                         scaling_reference=None, items=["headline", "curves"])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    # (41,200 - 41,000) / 41,000 = +0.49%; (3,750 - 2,500) / 2,500 = +50%.
    assert _text(body, "curve-sentence") == (
        "The operating point is the last load level before the knee: going on to burst 64 "
        "added +0.49% output tokens/s while median latency rose +50.0%.")
    shown = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].shown
    assert shown.key == point(benchmark, 64, 32).key
    assert round(shown.evidence.found.throughput_gain_pct, 1) == 0.5
    assert round(shown.evidence.found.latency_growth_pct, 1) == 50.0


def test_without_a_saved_choice_the_report_names_the_run_pages_point_in_another_config(
        owner, owner_client):
    # The report's points are both seqs=8, yet the run page's default knee walks every config
    # and picks seqs=64, whose operating point delivers more: the report must say the same.
    sweep = make_sweep(owner, node_run=False)
    report = make_report(sweep, owner, baseline_point=point(sweep, 8, 16),
                         candidate_point=point(sweep, 8, 64), scaling_point=None,
                         scaling_reference=None, items=["headline", "curves"])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    run_page = owner_client.get(f"/runs/{sweep.code}/")
    shown = run_page.context["judgement"].shown
    assert shown.stored is None and shown.key == point(sweep, 64, 32, repeat=1).key
    assert _text(body, "curve-selected").startswith(
        "max_num_seqs 64 at burst 32: 41,600 output tokens/s, median latency 2.5 s")
    # One sentence on both pages, written by the judgement layer. The sweep's repeats scatter
    # by about 1%, so the +1.2% step past the knee is within its noise and is said so.
    sentence = _text(body, "curve-sentence")
    assert sentence.endswith(
        "going on to burst 64 changed output tokens/s by +1.2%, within noise (±1.3%), while "
        "median latency rose +60.0%.")
    assert shown.sentence == sentence and sentence in run_page.content.decode()


def test_a_reference_at_another_spec_gets_no_ratio_and_the_report_says_none_matches(
        sweep, owner):
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=10000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    report = make_report(sweep, owner, references=[reference])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    references = _section(body, "references")
    assert ("No point in this report was measured at the reference's input/output spec "
            "(1000 in / 1000 out; this report: 63-66 in / 256 out), so no ratio is given."
            in " ".join(references.split()))
    assert not re.search(r"\d\.\d\dx", references) and "%" not in references
    row = _table_rows(body)[1]
    assert row[0].startswith("Vendor per-GPU figure (recorded March 1, 2025)")
    assert row[1:3] == ["10,000", "→ -"] and "%" not in " ".join(row)


def test_a_reference_is_compared_with_the_report_point_of_its_own_spec(sweep, owner):
    store_point(sweep, point_result(16, 32, throughput=18000.0, median_e2el_ms=8000.0,
                                    workload=SPEC_1000))
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=10000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    # Before ran 1000 in / 1000 out, after 63-66 / 256: the reference meets the "before" point.
    report = make_report(sweep, owner, baseline_point=point(sweep, 16, 32),
                         references=[reference])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    references = " ".join(_section(body, "references").split())
    assert "Before: max_num_seqs 16: 18,000 output tokens/s per GPU (CPU engine) (1.80x, +80.0%)" \
        in references
    # And the headline, across specs, says so instead of printing a ratio.
    assert 'id="headline-ratio"' not in body
    assert _text(body, "headline-spec") == (
        "The input/output specs differ (1000 in / 1000 out against 63-66 in / 256 out): no "
        "ratio or percentage is given.")
    tuning = _table_rows(body)[0]
    assert "%" not in " ".join(tuning) and "no ratio or percentage is given" in tuning[3]


def _table_rows(body: str) -> list[list[str]]:
    table = re.search(r'<section id="comparison-table">.*?</section>', body, re.DOTALL).group(0)
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("</thead>")[1], re.DOTALL)
    return [[" ".join(html.unescape(re.sub(r"<[^>]+>", " ", cell)).split())
             for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.DOTALL)] for row in rows]


def test_the_comparison_table_holds_one_row_per_comparison(sweep, owner):
    reference = ExternalReference.objects.create(
        source="Vendor per-GPU figure", url="https://vendor.example/perf", value=20000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")
    report = make_report(sweep, owner, references=[reference])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    tuning, vendor, node = _table_rows(body)
    # The local tuning result: 18,012.4 -> 41,873.6 is 2.32x, +132.5%.
    assert tuning[0] == "Local tuning: output tokens/s (CPU engine)"
    assert tuning[1:3] == ["18,012", "→ 41,874"]
    assert tuning[3].startswith("Ratio 2.32x (+132.5%). Median request latency fell from "
                                "5.0 s to 2.5 s.")
    assert "Engine settings max_num_seqs 8 → max_num_seqs 64." in tuning[4]
    # The dated reference: 41,873.6 / 20,000 = 2.09x, +109.4%, against the "after" point.
    assert vendor[1:3] == ["20,000", "→ 41,874 (CPU engine)"]
    assert vendor[3] == "After: max_num_seqs 64 is 2.09x the reference (+109.4%)."
    assert vendor[4].startswith("Not controlled. Differs: GPU: NVIDIA H200 → CPU only")
    # The node capacity: 80,000 over 2 x 41,873.6 = 83,747.2 is 95.5%.
    assert node[0] == "Node capacity: 2 replicas, one common window (CPU engine)"
    assert node[1:3] == ["2 x 41,874 = 83,747", "→ 80,000"]
    assert node[3].startswith("Scaling efficiency 95.5%")
    assert "GPU count: 1 → 2" in node[4]


def test_every_percentage_on_the_page_follows_the_run_pages_precision(sweep, owner):
    reference = ExternalReference.objects.create(
        source="Vendor", url="https://vendor.example/perf", value=20000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")
    report = make_report(sweep, owner, references=[reference])
    for lang in ("en", "ko"):
        body = Client().get(f"/r/{report.issued_token}/?lang={lang}").content.decode()
        article = body.split('<script id="report-figures"')[0]
        # "95% interval" names a confidence level, not a measured figure.
        found = re.findall(r"[\d.,]+%(?! interval| 구간)", article)
        assert len(found) > 8
        # One decimal, two below 1% (pct_decimals), so a sub-1% step never reads "+0%".
        for value in found:
            number = float(value.rstrip("%").replace(",", ""))
            decimals = 2 if abs(number) < 1 else 1
            assert re.fullmatch(rf"[\d,]*\d\.\d{{{decimals}}}%", value), (value, found)
        assert "42.0%" in article  # peak KV use 0.42, not "42%" beside "95.5%"


def test_zero_failures_read_as_zero(sweep, owner):
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    scaling = " ".join(_section(body, "scaling").split())
    assert "Requests completed / failed 64 / 0" in scaling


def _gpu_point(benchmark: Benchmark, seqs: int, *, tp: int = 1, replicas: int = 1,
               throughput: float = 20000.0) -> Point:
    return store_point(benchmark, point_result(
        seqs, 32, launch_style="serve", host_gpus=8, tensor_parallel_size=tp,
        replicas=replicas, throughput=throughput, median_e2el_ms=3000.0))


def test_the_methodology_describes_each_sides_own_devices_not_the_hosts(owner):
    benchmark = _benchmark(owner)
    before = _gpu_point(benchmark, 8)
    after = _gpu_point(benchmark, 64, tp=2, throughput=40000.0)
    reference = _gpu_point(benchmark, 64, throughput=21000.0)
    node = _gpu_point(benchmark, 64, replicas=2, throughput=40000.0)
    report = make_report(benchmark, owner, baseline_point=before, candidate_point=after,
                         scaling_point=node, scaling_reference=reference)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    hardware = re.search(r"<dt>Hardware</dt><dd>(.*?)</dd>", body, re.DOTALL).group(1)
    lines = [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", line)).split())
             for line in hardware.split("<br>")]
    assert lines == [
        "Before: 1 x NVIDIA H200 (1 replica x tensor parallel 1); the host has 8 GPUs",
        "After: 2 x NVIDIA H200 (1 replica x tensor parallel 2); the host has 8 GPUs",
        "Node run: 2 x NVIDIA H200 (2 replicas x tensor parallel 1); the host has 8 GPUs",
    ]
    assert "8 x NVIDIA H200" not in body


def test_a_fact_both_sides_share_is_written_once(sweep, owner):
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    software = re.search(r"<dt>Software</dt><dd>(.*?)</dd>", body, re.DOTALL).group(1)
    assert software == "vLLM 0.32.0"
    requests = re.search(r"<dt>Requests per point</dt><dd>(.*?)</dd>", body, re.DOTALL).group(1)
    assert "<br>" not in requests and requests == "32, load burst 32"


def test_node_scaling_counts_every_gpu_of_a_tensor_parallel_replica(owner):
    # 2 replicas of tensor parallel 2 at 40,000 tok/s against one TP-2 engine at 20,000: ideal
    # 2 x 20,000 = 40,000 (the reference already spans 2 GPUs), so 100%; 4 GPUs, 10,000 each.
    benchmark = _benchmark(owner)
    reference = _gpu_point(benchmark, 64, tp=2, throughput=20000.0)
    node = _gpu_point(benchmark, 64, tp=2, replicas=2, throughput=40000.0)
    result = scaling_for(node, reference)
    assert (result.gpus_per_replica, result.total_gpus) == (2, 4)
    assert result.throughput_per_gpu == 10000.0
    assert result.ideal_throughput == 40000.0
    assert result.efficiency == pytest.approx(1.0)


def test_the_queue_evidence_tells_the_step_as_the_run_pages_story_does(sweep, owner):
    # Before: seqs=8 at burst 32 runs 8 of 8 while 24 wait (the scheduler cap); after: seqs=64
    # runs 32 with nothing waiting, but running 16 -> 32 (+100%) added only +39.6% output, less
    # than the square root of the growth: the engine's own step time.
    report = make_report(sweep, owner)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    queue = " ".join(_section(body, "queue").split())
    assert ("Binding limit: the scheduler cap bound, with running at max_num_seqs 8 for 100.0% "
            "of the time requests waited and 24.0 waiting on average") in queue
    assert ("Binding limit: the engine's own step time bound, with mean running up +100.0% over "
            "the previous load level for +39.6% output") in queue
    story = _text(body, "queue-story")
    assert story == (
        "At burst 32, raising max_num_seqs from 8 to 64 raised output 2.32x (18,012 -> 41,874 "
        "output tok/s): at max_num_seqs 8, the scheduler cap bound, with running at "
        "max_num_seqs 8 for 100.0% of the time requests waited and 24.0 waiting on average; at "
        "max_num_seqs 64, the engine's own step time bound, with mean running up +100.0% over "
        "the previous load level for +39.6% output.")
    # From the function the run page's story uses, on the same verdicts.
    found = verdict_rows([figures(p) for p in sweep.points.all()]).by_key
    before = found[point(sweep, 8, 32).key]
    after = found[point(sweep, 64, 32).key]
    assert story == str(step_story(before, after))


def test_the_korean_report_tells_the_same_step_in_korean(sweep, owner):
    report = make_report(sweep, owner, language="ko")
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    story = _text(body, "queue-story")
    assert story.startswith("burst 32에서 max_num_seqs 8 → 64 상향 후 출력이 2.32x 늘었습니다 "
                            "(18,012 -> 41,874 output tok/s). max_num_seqs 8에서는 스케줄러 상한이 제약")
    assert "raising" not in story and "bound" not in story


def test_an_adaptive_runs_report_names_the_point_its_search_chose(owner, owner_client):
    from tests.judgement.helpers import adaptive_run
    from tests.judgement.helpers import point as run_point

    benchmark = adaptive_run()
    chosen = run_point(benchmark, 512, 2000, repeat=1)
    report = make_report(benchmark, owner, baseline_point=run_point(benchmark, 256, 4000),
                         candidate_point=chosen, scaling_point=None, scaling_reference=None,
                         items=["headline", "curves"])
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    shown = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].shown
    assert shown.method == "slo" and shown.key == chosen.key
    assert _text(body, "curve-selected").startswith("max_num_seqs 512 at burst 2000")
    # The same sentence, its point key's engine settings in words for the customer.
    assert shown.sentence.replace("(seqs=512|", "(max_num_seqs 512|") == _text(
        body, "curve-sentence")


def _methodology_row(body: str, label: str) -> list[str] | None:
    found = re.search(rf"<dt>{label}</dt><dd>(.*?)</dd>", body, re.DOTALL)
    if found is None:
        return None
    return [" ".join(html.unescape(re.sub(r"<[^>]+>", " ", line)).split())
            for line in found.group(1).split("<br>")]


def test_speculative_decoding_and_lora_are_in_the_methodology_only_where_they_ran(owner):
    # The after side drafted (160 drafts, 320 draft tokens, 150 accepted: 46.9%, 1 + 150/160)
    # and spread its 4 requests over two adapters, 3 to alpha and 1 to beta.
    benchmark = _benchmark(owner)
    report = make_report(benchmark, owner, **drafting_lora_sides(benchmark))
    after = report.candidate_point
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert _methodology_row(body, "Speculative decoding") == [
        "Before: off",
        "After: acceptance rate 46.9%, mean acceptance length 1.94 (accepted draft tokens over "
        "drafted ones, and 1 + accepted per draft, from vLLM's counters over the point)",
    ]
    # The run page's own per-adapter figures (judgement.lora_view), one adapter after the other.
    alpha, beta = adapter_rows(after)
    [lora_before, lora_after] = _methodology_row(body, "LoRA adapters")
    assert lora_before == "Before: none: every request went to the base model"
    assert lora_after == (
        f"After: alpha: 3 of 3 requests completed, {alpha.output_throughput:,.0f} output "
        f"tokens/s, median latency {alpha.median_e2el_ms / 1000:.1f} s; beta: 1 of 1 requests "
        f"completed, {beta.output_throughput:,.0f} output tokens/s, median latency "
        f"{beta.median_e2el_ms / 1000:.1f} s")


def test_a_report_of_engines_without_either_has_neither_row(sweep, owner):
    body = Client().get(f"/r/{make_report(sweep, owner).issued_token}/").content.decode()
    assert _methodology_row(body, "Prefix cache") is not None
    assert _methodology_row(body, "Speculative decoding") is None
    assert _methodology_row(body, "LoRA adapters") is None
