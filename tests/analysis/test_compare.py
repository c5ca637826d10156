"""Controlled comparisons and dated references, on the case study's figures."""

from __future__ import annotations

from datetime import date

import pytest

from analysis.compare import (
    FACTORS,
    compare,
    compare_factors,
    compare_reference,
)
from analysis.errors import AnalysisError
from analysis.sentences import factors_sentence
from analysis.types import (
    UNIT_OUTPUT_TPS,
    UNIT_OUTPUT_TPS_PER_GPU,
    Measured,
    Reference,
    RunFacts,
    WorkloadShape,
)
from tests.analysis.helpers import facts, point

ALL_LABELS = (
    "GPU SKU",
    "GPU count",
    "runtime",
    "runtime version",
    "checkpoint",
    "checkpoint revision",
    "precision",
    "KV dtype",
    "request count",
    "spec",
    "host",
)


def initial():
    return point("seqs=256", 2000, 18_000, median_e2el_ms=16_000)


def tuned():
    return point("seqs=1024", 2000, 42_000, median_e2el_ms=12_000)


def test_compare_gives_improvement_ratio_and_latency_before_and_after():
    c = compare(
        Measured(facts=facts(), figures=initial()), Measured(facts=facts(), figures=tuned())
    )
    assert (c.baseline_throughput, c.candidate_throughput) == (18_000, 42_000)
    assert c.improvement_pct == pytest.approx(24_000 / 18_000 * 100)  # 133.3%
    assert c.ratio == pytest.approx(42_000 / 18_000)  # 2.33x
    assert (c.baseline_median_e2el_ms, c.candidate_median_e2el_ms) == (16_000, 12_000)
    assert c.latency_change_pct == pytest.approx(-25.0)
    assert c.controlled is True
    assert c.matching == ALL_LABELS
    assert c.differing == () and c.unknown == ()
    assert c.sentence.startswith("controlled: same GPU SKU, GPU count, runtime")
    assert c.sentence.endswith("request count, spec and host")


def test_compare_is_not_controlled_when_a_factor_differs_and_names_it():
    c = compare(
        Measured(facts=facts(), figures=initial()),
        Measured(facts=facts(runtime_version="0.11.2", host="gpu-host-2"), figures=tuned()),
    )
    assert c.controlled is False
    assert c.differing == ("runtime version", "host")
    assert c.sentence.endswith("; runtime version and host differ")
    rows = {r.name: r for r in c.factors}
    assert (rows["host"].baseline, rows["host"].candidate, rows["host"].status) == (
        "gpu-host-1",
        "gpu-host-2",
        "differ",
    )
    assert rows["workload"].baseline == "63-66 in / 256 out"
    assert rows["gpu_sku"].status == "match"


def test_compare_treats_an_unrecorded_factor_as_unknown_not_as_a_match():
    c = compare(
        Measured(facts=facts(host=None), figures=initial()),
        Measured(facts=facts(), figures=tuned()),
    )
    assert c.controlled is False
    assert c.unknown == ("host",)
    assert c.sentence.endswith("; host not recorded on both sides")


def test_compare_refuses_a_zero_baseline_and_missing_latency():
    zero = point("zero", 1, 0.0, median_e2el_ms=1_000)
    with pytest.raises(AnalysisError, match="zero output throughput"):
        compare(Measured(facts=facts(), figures=zero), Measured(facts=facts(), figures=tuned()))
    no_latency = point("nolat", 1, 100.0)
    with pytest.raises(AnalysisError, match="nolat has no median_e2el_ms"):
        compare(
            Measured(facts=facts(), figures=initial()), Measured(facts=facts(), figures=no_latency)
        )


def test_the_factors_sentence_reads_like_the_write_up():
    assert (
        factors_sentence(["GPU SKU", "spec"], ["runtime version", "host"], [])
        == "same GPU SKU and spec; runtime version and host differ"
    )
    assert factors_sentence([], ["host"], []) == "host differs"


def test_compare_factors_sees_equal_workload_shapes_as_matching():
    a = RunFacts(
        workload=WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)
    )
    b = RunFacts(
        workload=WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)
    )
    rows = {r.name: r.status for r in compare_factors(a, b)}
    assert rows["workload"] == "match"
    assert rows["host"] == "unknown"


SPEC_1K = WorkloadShape(input_tokens_min=1000, input_tokens_max=1000, output_tokens=1000)


def vendor_reference(**overrides):
    values = dict(
        name="Vendor per-GPU figure",
        value=6_250.0,
        unit=UNIT_OUTPUT_TPS_PER_GPU,
        recorded_on=date(2025, 3, 1),
        no_longer_listed_on=date(2025, 8, 15),
        gpu_sku="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        runtime="vllm/vllm-openai",
        runtime_version="0.9.0",
        workload=SPEC_1K,
    )
    values.update(overrides)
    return Reference(**values)


def local_1k(gpu_count=1, throughput=5_000.0):
    return Measured(
        facts=facts(workload=SPEC_1K, gpu_count=gpu_count),
        figures=point("local", 64, throughput, workload=SPEC_1K, gpu_count=gpu_count),
    )


def test_reference_comparison_keeps_dates_ratio_and_what_matches():
    r = compare_reference(local_1k(), vendor_reference())
    assert r.local_value == 5_000
    assert r.reference_value == 6_250
    assert r.ratio == pytest.approx(0.8)
    assert r.difference_pct == pytest.approx(-20.0)
    assert r.recorded_on == date(2025, 3, 1)
    assert r.no_longer_listed_on == date(2025, 8, 15)
    assert r.matching == ("GPU SKU", "runtime", "spec")
    assert r.differing == ("runtime version",)
    assert "host" in r.unknown and "checkpoint" in r.unknown
    assert r.controlled is False and r.spec_differs is False
    assert r.sentence.startswith(
        "Vendor per-GPU figure, recorded on 2025-03-01, no longer listed since 2025-08-15: "
        "not controlled: same GPU SKU, runtime and spec; runtime version differs; "
    )


def test_reference_comparison_per_gpu_divides_a_node_result_by_its_gpus():
    r = compare_reference(local_1k(gpu_count=8, throughput=40_000.0), vendor_reference())
    assert r.local_value == 5_000
    assert r.ratio == pytest.approx(0.8)


def test_reference_comparison_in_total_tokens_uses_the_whole_throughput():
    r = compare_reference(
        local_1k(gpu_count=8, throughput=40_000.0),
        vendor_reference(unit=UNIT_OUTPUT_TPS, value=50_000.0, no_longer_listed_on=None),
    )
    assert r.local_value == 40_000
    assert r.ratio == pytest.approx(0.8)
    assert "no longer listed" not in r.sentence


def test_a_reference_refuses_an_unknown_unit_reversed_dates_and_a_non_positive_value():
    with pytest.raises(AnalysisError, match="unit 'requests/s'"):
        vendor_reference(unit="requests/s")
    with pytest.raises(AnalysisError, match="before it was recorded"):
        vendor_reference(no_longer_listed_on=date(2025, 1, 1))
    with pytest.raises(AnalysisError, match="value must be > 0"):
        vendor_reference(value=0.0)


# --- the comparison guard: spec rule and controlled / not controlled ---------------------------

def matching_reference(**overrides):
    """A reference that states every fixed factor exactly as facts() records it."""
    f = facts()
    values = {
        "name": "Same setup, published",
        "value": 40_000.0,
        "unit": UNIT_OUTPUT_TPS_PER_GPU,
        "recorded_on": date(2025, 3, 1),
        **{name: getattr(f, name) for name, _ in FACTORS},
    }
    values.update(overrides)
    return Reference(**values)


def local_case_study(throughput=42_000.0, **figures):
    return Measured(facts=facts(), figures=point("local", 2000, throughput, **figures))


def test_a_reference_at_another_spec_gives_no_ratio_and_says_which_spec_each_side_has():
    # The case: a 1,000 in / 1,000 out vendor figure against a 63-66 / 256 point.
    r = compare_reference(local_case_study(), vendor_reference())
    assert r.ratio is None and r.difference_pct is None
    assert r.spec_differs is True and r.controlled is False
    assert "spec" in r.differing
    # Both figures still stand side by side; only the percentage is withheld.
    assert (r.local_value, r.reference_value) == (42_000, 6_250)
    assert r.spec.baseline == "1000 in / 1000 out" and r.spec.candidate == "63-66 in / 256 out"
    assert r.sentence.endswith(
        "; no percentage across different specs: reference 1000 in / 1000 out, "
        "local point 63-66 in / 256 out"
    )


def test_a_reference_matching_every_factor_is_controlled():
    r = compare_reference(local_case_study(), matching_reference())
    assert r.controlled is True
    assert r.matching == ALL_LABELS and r.differing == () and r.unknown == ()
    assert r.ratio == pytest.approx(42_000 / 40_000)  # 1.05
    assert r.difference_pct == pytest.approx(5.0)
    assert r.sentence == (
        "Same setup, published, recorded on 2025-03-01: controlled: same GPU SKU, GPU count, "
        "runtime, runtime version, checkpoint, checkpoint revision, precision, KV dtype, "
        "request count, spec and host"
    )


def test_a_reference_missing_only_its_host_is_not_controlled_and_names_host():
    r = compare_reference(local_case_study(), matching_reference(host=None))
    assert r.controlled is False
    assert r.unknown == ("host",) and r.differing == ()
    assert r.sentence.endswith(": not controlled: same GPU SKU, GPU count, runtime, runtime "
                               "version, checkpoint, checkpoint revision, precision, KV dtype, "
                               "request count and spec; host not recorded on both sides")
    # Same spec: the ratio is still given, beside the "not controlled" label.
    assert r.ratio == pytest.approx(1.05)


def test_a_reference_without_a_request_count_is_never_called_controlled():
    r = compare_reference(local_case_study(), matching_reference(request_count=None))
    assert r.controlled is False and r.unknown == ("request count",)


def test_a_reference_latency_stands_beside_the_same_local_statistic():
    r = compare_reference(
        local_case_study(median_e2el_ms=11_000.0),
        matching_reference(latency_ms=12_000.0, latency_statistic="median"),
    )
    assert r.latency_statistic == "median"
    assert r.latency_label == "Median request latency (ms, E2EL)"
    assert (r.reference_latency_ms, r.local_latency_ms) == (12_000.0, 11_000.0)
    assert r.latency_difference_pct == pytest.approx(-1_000 / 12_000 * 100)  # -8.3%


def test_a_mean_reference_latency_is_never_set_beside_the_local_median():
    r = compare_reference(
        local_case_study(median_e2el_ms=11_000.0),
        matching_reference(latency_ms=12_000.0, latency_statistic="mean"),
    )
    # The point records only a median: beside a published mean there is no local figure.
    assert r.latency_label == "Mean request latency (ms, E2EL)"
    assert r.reference_latency_ms == 12_000.0
    assert r.local_latency_ms is None and r.latency_difference_pct is None


def test_a_reference_latency_at_another_spec_has_no_percentage():
    r = compare_reference(
        local_case_study(median_e2el_ms=11_000.0),
        vendor_reference(latency_ms=20_000.0, latency_statistic="median"),
    )
    assert (r.reference_latency_ms, r.local_latency_ms) == (20_000.0, 11_000.0)
    assert r.latency_difference_pct is None


def test_a_reference_without_latency_has_no_latency_pair():
    r = compare_reference(local_case_study(median_e2el_ms=11_000.0), matching_reference())
    assert r.latency_statistic is None and r.latency_label is None
    assert r.reference_latency_ms is None and r.local_latency_ms is None


def test_a_reference_latency_needs_its_statistic_and_a_positive_value():
    with pytest.raises(AnalysisError, match="needs its statistic"):
        matching_reference(latency_ms=12_000.0)
    with pytest.raises(AnalysisError, match="needs its statistic"):
        matching_reference(latency_statistic="median")
    with pytest.raises(AnalysisError, match="latency_ms must be > 0"):
        matching_reference(latency_ms=0.0, latency_statistic="median")
    with pytest.raises(AnalysisError, match="'p99' is not one of median, mean"):
        matching_reference(latency_ms=12_000.0, latency_statistic="p99")


def test_two_points_at_different_specs_give_no_percentage_and_name_both_specs():
    # Two node runs on different runtimes and specs, both with latencies: figures side by
    # side, no improvement, ratio or latency change.
    before = Measured(facts=facts(gpu_count=8), figures=point("node-a", 2000, 42_000,
                                                             median_e2el_ms=16_000, gpu_count=8,
                                                             replicas=8))
    after = Measured(
        facts=facts(gpu_count=8, runtime_version="0.11.2", workload=SPEC_1K),
        figures=point("node-b", 2000, 50_000, median_e2el_ms=30_000, gpu_count=8, replicas=8,
                      workload=SPEC_1K),
    )
    c = compare(before, after)
    assert c.improvement_pct is None and c.ratio is None and c.latency_change_pct is None
    assert c.spec_differs is True and c.controlled is False
    assert c.differing == ("runtime version", "spec")
    assert (c.baseline_throughput, c.candidate_throughput) == (42_000, 50_000)
    assert (c.baseline_median_e2el_ms, c.candidate_median_e2el_ms) == (16_000, 30_000)
    assert c.sentence == (
        "not controlled: same GPU SKU, GPU count, runtime, checkpoint, checkpoint revision, "
        "precision, KV dtype, request count and host; runtime version and spec differ; "
        "no percentage across different specs: baseline 63-66 in / 256 out, "
        "candidate 1000 in / 1000 out"
    )


def test_a_spec_recorded_on_one_side_only_gives_no_percentage_either():
    c = compare(
        Measured(facts=facts(workload=None), figures=initial()),
        Measured(facts=facts(), figures=tuned()),
    )
    assert c.ratio is None and c.improvement_pct is None and c.latency_change_pct is None
    assert c.spec_differs is False and c.unknown == ("spec",)
    assert c.sentence.endswith(
        "; no percentage without the spec on both sides: baseline (spec not recorded), "
        "candidate 63-66 in / 256 out"
    )


def test_same_spec_comparisons_keep_their_percentages_and_no_spec_statement():
    c = compare(
        Measured(facts=facts(host="gpu-host-2"), figures=initial()),
        Measured(facts=facts(), figures=tuned()),
    )
    assert c.spec_differs is False and c.controlled is False
    assert c.ratio == pytest.approx(42_000 / 18_000)
    assert "no percentage" not in c.sentence


def test_runs_on_two_traces_or_a_trace_and_a_synthetic_spec_are_not_controlled():
    # The same token bounds, other files: the requests sent were not the same.
    bounds = dict(input_tokens_min=10, input_tokens_max=4000, output_tokens=1000)
    trace_a = WorkloadShape(**bounds, source="trace customer-a.jsonl")
    trace_b = WorkloadShape(**bounds, source="trace customer-b.jsonl")
    for other in (trace_b, WorkloadShape(**bounds)):
        c = compare(
            Measured(facts=facts(workload=trace_a), figures=initial()),
            Measured(facts=facts(workload=other), figures=tuned()),
        )
        assert c.controlled is False and "spec" in c.differing
    rows = {r.name: r for r in c.factors}
    assert rows["workload"].baseline == "trace customer-a.jsonl"
    same = compare(
        Measured(facts=facts(workload=trace_a), figures=initial()),
        Measured(facts=facts(workload=WorkloadShape(**bounds, source="trace customer-a.jsonl")),
                 figures=tuned()),
    )
    assert same.controlled is True
