"""Saved comparisons and external references: pages, forms, dates and the controlled label."""

from __future__ import annotations

import datetime

import pytest
from django.test import Client

from benchmarks.models import Comparison, ExternalReference
from demo.comparison import save_demo_comparison
from runner.schema.engine_config import Checkpoint
from runner.schema.plan import WorkloadSpec
from runner.schema.result import EngineInfo, Hardware, Provenance, ReplicaResult, Window
from tests.rows import REVISION, make_benchmark, make_point_result

from .helpers import point, store, sweep

pytestmark = pytest.mark.django_db


def _with_version(benchmark, version: str, throughput: float):
    base = make_point_result().provenance
    engine = base.engine.model_copy(update={"version": version})
    provenance = base.model_copy(update={"engine": engine})
    return store(benchmark, max_num_seqs=1024, num_requests=2000, throughput=throughput,
                 median_e2el_ms=4000.0, update={"provenance": provenance})


def test_the_comparison_form_lists_a_bounded_number_of_recent_points_and_runs(
    owner_client, monkeypatch
):
    # A very large recent run must not make every engineer's form list all its points.
    monkeypatch.setattr("dashboard.forms_judgement.MAX_POINT_CHOICES", 2)
    monkeypatch.setattr("dashboard.forms_judgement.MAX_RUN_CHOICES", 1)
    older = sweep()
    newer = sweep(node=older.node)
    chosen = point(older, 256, 2000)
    form = owner_client.get("/comparisons/new/", {"baseline": chosen.pk}).context["form"]
    points = form.fields["baseline_point"].queryset
    assert len(points) == 3 and chosen in points  # two recent ones, and the one chosen
    assert list(form.fields["baseline_run"].queryset) == [newer]
    # A point or run chosen beyond the lists still validates: it joins the choices.
    candidate = point(older, 512, 2000)
    response = owner_client.post("/comparisons/new/", {
        "baseline_point": chosen.pk, "candidate_point": candidate.pk, "name": "", "notes": ""})
    assert response.status_code == 302


def test_a_comparison_is_saved_from_two_points_and_shows_before_and_after(owner_client):
    benchmark = sweep()
    baseline, candidate = point(benchmark, 256, 2000), point(benchmark, 512, 2000)
    form = owner_client.get("/comparisons/new/", {"baseline": baseline.pk})
    assert form.status_code == 200
    assert form.context["form"].initial["baseline_point"] == baseline.pk
    response = owner_client.post("/comparisons/new/", {
        "baseline_point": baseline.pk, "candidate_point": candidate.pk, "name": "", "notes": ""})
    comparison = Comparison.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/comparisons/{comparison.code}/"
    page = owner_client.get(response["Location"])
    result = page.context["result"]
    # 2600 -> 3000 tok/s: +15.4%, ratio 1.154; 4300 -> 4100 ms median latency.
    assert result.improvement_pct == pytest.approx(400 / 2600 * 100)
    assert result.ratio == pytest.approx(3000 / 2600)
    html = page.content.decode()
    assert "+15.4% (x1.154)" in html and "4300" in html and "4100" in html
    # Same run, same provenance, but the tiny model has no revision or precision recorded.
    assert result.controlled is False
    assert "checkpoint revision" in result.sentence and "not recorded" in result.sentence
    assert owner_client.get("/comparisons/").context["comparisons"][0] == comparison


def test_a_comparison_names_the_runtime_version_when_it_differs(owner_client):
    from tests.rows import make_node

    first, second = sweep(), sweep(node=make_node("gpu-b"))
    baseline = _with_version(first, "0.10.0", 2500.0)
    candidate = _with_version(second, "0.11.0", 3000.0)
    comparison = Comparison.objects.create(name="upgrade", baseline_point=baseline,
                                           candidate_point=candidate)
    page = owner_client.get(f"/comparisons/{comparison.code}/")
    html = page.content.decode()
    assert "not controlled" in html
    assert page.context["result"].differing == ("runtime version",)
    assert "runtime version differs" in html
    assert "0.10.0" in html and "0.11.0" in html


def test_comparing_a_point_with_itself_is_refused_by_the_form(owner_client):
    benchmark = sweep()
    same = point(benchmark, 256, 1000)
    response = owner_client.post("/comparisons/new/", {"baseline_point": same.pk,
                                                       "candidate_point": same.pk})
    assert response.status_code == 400
    assert "Choose a different point from the baseline." in response.content.decode()
    assert not Comparison.objects.exists()


def test_a_comparison_without_latency_data_is_refused_with_the_reason(owner_client):
    benchmark = sweep()
    bare = store(benchmark, max_num_seqs=1024, num_requests=1000, throughput=900.0,
                 median_e2el_ms=None)
    response = owner_client.post("/comparisons/new/", {
        "baseline_point": point(benchmark, 256, 1000).pk, "candidate_point": bare.pk})
    assert response.status_code == 400
    assert "has no median_e2el_ms: latency data is missing" in response.content.decode()


def test_an_outsider_cannot_see_comparisons_or_references():
    for url in ("/comparisons/", "/comparisons/new/", "/references/", "/references/new/"):
        response = Client().get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


REFERENCE = {
    "source": "Vendor blog", "url": "https://example.com/h200", "recorded_on": "2026-10-01",
    "value": "1200", "unit": "output tokens/s per GPU", "gpu_name": "NVIDIA H200",
    "gpu_count": "1", "runtime": "vllm", "runtime_version": "0.11.0",
    "workload_spec": "63-66 in / 256 out", "notes": "", "no_longer_listed_on": "",
}


def test_a_reference_is_created_and_edited_with_field_errors_shown(owner_client):
    bad = owner_client.post("/references/new/", {**REFERENCE, "value": "0",
                                                 "workload_spec": "long prompts",
                                                 "no_longer_listed_on": "2026-09-01"})
    assert bad.status_code == 400
    errors = bad.context["form"].errors
    assert set(errors) == {"value", "workload_spec", "no_longer_listed_on"}
    assert "A figure cannot disappear before the day it was recorded." in bad.content.decode()
    assert owner_client.post("/references/new/", REFERENCE).status_code == 302
    ref = ExternalReference.objects.get()
    edited = owner_client.post(f"/references/{ref.pk}/edit/",
                               {**REFERENCE, "no_longer_listed_on": "2026-11-15"})
    assert edited.status_code == 302
    ref.refresh_from_db()
    assert ref.no_longer_listed_on == datetime.date(2026, 11, 15)
    assert "2026-11-15" in owner_client.get("/references/").content.decode()


def test_a_reference_comparison_shows_its_dates_and_what_differs(owner_client):
    benchmark = sweep()
    ref = ExternalReference.objects.create(
        source="Vendor blog", url="https://example.com/h200",
        recorded_on=datetime.date(2026, 10, 1), no_longer_listed_on=datetime.date(2026, 11, 15),
        value=1050.0, gpu_name="NVIDIA H200", gpu_count=1, runtime="vllm",
        runtime_version="0.11.0", workload_spec="63-66 in / 256 out")
    local = point(benchmark, 512, 1000)  # 2100 tok/s on one CPU engine
    page = owner_client.get(f"/references/{ref.pk}/compare/", {"point": local.pk})
    result = page.context["result"]
    assert result.ratio == pytest.approx(2.0)
    assert "spec" in result.matching
    assert "GPU SKU" in result.differing and "runtime version" in result.differing
    html = page.content.decode()
    assert "recorded on 2026-10-01" in html
    assert "no longer listed since 2026-11-15" in html


def test_the_run_chart_draws_references_of_the_same_spec_as_dated_lines(owner_client):
    benchmark = sweep()
    ExternalReference.objects.create(
        source="Same spec", url="https://example.com/a", recorded_on=datetime.date(2026, 10, 1),
        value=1000.0, gpu_name="NVIDIA H200", workload_spec="63-66 in / 256 out")
    ExternalReference.objects.create(
        source="Other spec", url="https://example.com/b", recorded_on=datetime.date(2026, 10, 2),
        value=1000.0, gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    overlay = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].overlay
    (line,) = overlay["references"]
    # Per GPU x the one device each point used.
    assert line["y"] == 1000.0
    assert line["label"].startswith("Same spec (2026-10-01)")


def test_the_demo_comparison_goes_from_the_smallest_to_the_best_max_num_seqs():
    benchmark = sweep()
    comparison = save_demo_comparison(benchmark)
    # At the highest load level (4000): 256 gives 2610 tok/s, 512 gives 3020.
    assert comparison.baseline_point == point(benchmark, 256, 4000)
    assert comparison.candidate_point == point(benchmark, 512, 4000)
    assert "max_num_seqs 256 -> 512" in comparison.name


def test_the_demo_comparison_is_skipped_for_a_single_setting():
    benchmark = make_benchmark(state="succeeded")
    store(benchmark, max_num_seqs=256, num_requests=1000, throughput=100.0, median_e2el_ms=50.0)
    assert save_demo_comparison(benchmark) is None


def test_a_compared_point_cannot_be_deleted_from_under_its_comparison():
    from django.db.models import ProtectedError

    benchmark = sweep()
    Comparison.objects.create(name="x", baseline_point=point(benchmark, 256, 1000),
                              candidate_point=point(benchmark, 512, 1000))
    with pytest.raises(ProtectedError):
        benchmark.delete()


def test_two_runs_are_compared_through_their_operating_points(owner_client):
    first = sweep(name="before")
    second = sweep(name="after", node=first.node)
    response = owner_client.post("/comparisons/new/", {
        "baseline_run": first.pk, "candidate_run": second.pk, "name": "", "notes": ""})
    assert response.status_code == 302
    comparison = Comparison.objects.get()
    # Each run is represented by the operating point its page shows (the knee here).
    page = owner_client.get(f"/runs/{first.code}/")
    shown_key = page.context["judgement"].shown.key
    assert comparison.baseline_point.benchmark == first
    assert comparison.baseline_point.key == shown_key
    assert comparison.candidate_point.benchmark == second


def test_a_comparison_needs_a_point_or_a_run_on_each_side(owner_client):
    benchmark = sweep()
    response = owner_client.post("/comparisons/new/", {
        "baseline_point": point(benchmark, 256, 2000).pk, "baseline_run": benchmark.pk,
        "name": "", "notes": ""})
    form = response.context["form"]
    assert "not both" in form.errors["baseline_run"][0]
    assert "Choose a point, or a run" in form.errors["candidate_point"][0]
    assert not Comparison.objects.exists()


# --- references with full provenance, and the comparison guard on every comparison -----------

FULL_REFERENCE = {
    **REFERENCE, "host": "vendor-lab-1", "checkpoint": "nvidia/Qwen3-30B-A3B-NVFP4",
    "checkpoint_revision": "0123456789abcdef0123456789abcdef01234567", "precision": "NVFP4",
    "kv_dtype": "fp8", "request_count": "2000", "latency_ms": "12000",
    "latency_statistic": "median",
}


def test_a_reference_keeps_every_fixed_factor_and_a_labelled_latency(owner_client):
    from analysis.types import Reference, WorkloadShape
    from judgement.figures import reference

    assert owner_client.post("/references/new/", FULL_REFERENCE).status_code == 302
    row = ExternalReference.objects.get()
    # The adapter passes every recorded factor on; a dropped one would read "not recorded".
    assert reference(row) == Reference(
        name="Vendor blog", value=1200.0, unit="output tokens/s per GPU",
        recorded_on=datetime.date(2026, 10, 1), gpu_sku="NVIDIA H200", gpu_count=1,
        runtime="vllm", runtime_version="0.11.0", checkpoint="nvidia/Qwen3-30B-A3B-NVFP4",
        checkpoint_revision="0123456789abcdef0123456789abcdef01234567", precision="NVFP4",
        kv_dtype="fp8", request_count=2000,
        workload=WorkloadShape(input_tokens_min=63, input_tokens_max=66, output_tokens=256),
        host="vendor-lab-1", latency_ms=12000.0, latency_statistic="median",
        source_url="https://example.com/h200",
    )
    html = owner_client.get("/references/").content.decode()
    assert "12000 ms (median E2EL)" in html
    assert "NVIDIA H200 on vendor-lab-1" in html and "@0123456789ab" in html


def test_the_reference_form_refuses_bad_revisions_latencies_and_links(owner_client):
    cases = {
        "url": ({"url": "javascript:alert(1)"}, None),
        "url ": ({"url": "ftp://example.com/figures"}, "Only http and https links are kept."),
        "checkpoint_revision": ({"checkpoint_revision": "main"}, "40-hex commit id"),
        "latency_ms": ({"latency_ms": "0"}, "A published latency must be greater than zero."),
        "latency_statistic": ({"latency_statistic": ""}, "median or a mean"),
        "latency_ms ": ({"latency_ms": ""}, "A median or mean needs the latency it describes."),
    }
    for field, (change, message) in cases.items():
        response = owner_client.post("/references/new/", {**FULL_REFERENCE, **change})
        assert response.status_code == 400, field
        errors = response.context["form"].errors
        assert set(errors) == {field.strip()}, (field, errors)
        if message:
            assert message in errors[field.strip()][0], (field, errors)
    assert not ExternalReference.objects.exists()


def test_the_model_refuses_a_non_http_link_in_clean_and_in_the_database():
    from django.core.exceptions import ValidationError
    from django.db import IntegrityError, transaction

    fields = {"source": "Vendor", "recorded_on": datetime.date(2026, 10, 1), "value": 1.0,
              "gpu_name": "NVIDIA H200", "workload_spec": "1000 in / 1000 out"}
    with pytest.raises(ValidationError) as refused:
        ExternalReference(url="javascript:alert(1)", **fields).clean()
    assert set(refused.value.message_dict) == {"url"}
    ExternalReference(url="HTTPS://example.com/a", **fields).clean()  # schemes ignore case
    with pytest.raises(IntegrityError), transaction.atomic():
        ExternalReference.objects.create(url="ftp://example.com/a", **fields)


def test_the_listing_date_is_shown_only_when_recorded(owner_client):
    benchmark = sweep()
    ref = ExternalReference.objects.create(
        source="Vendor blog", url="https://example.com/h200",
        recorded_on=datetime.date(2026, 10, 1), value=1050.0, gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    pages = [owner_client.get("/references/"),
             owner_client.get(f"/references/{ref.pk}/compare/",
                              {"point": point(benchmark, 512, 1000).pk})]
    for page in pages:
        assert "listed" not in page.content.decode()
    ExternalReference.objects.filter(pk=ref.pk).update(
        no_longer_listed_on=datetime.date(2026, 11, 15))
    for url in ("/references/", f"/references/{ref.pk}/compare/"):
        assert "no longer listed since 2026-11-15" in owner_client.get(url).content.decode()


def test_a_reference_at_another_spec_shows_no_ratio_and_says_which_spec_each_side_has(
    owner_client,
):
    benchmark = sweep()
    ref = ExternalReference.objects.create(
        source="Vendor blog", url="https://example.com/h200",
        recorded_on=datetime.date(2026, 10, 1), value=1050.0, gpu_name="NVIDIA H200",
        workload_spec="1000 in / 1000 out", latency_ms=20000.0, latency_statistic="median")
    local = point(benchmark, 512, 1000)  # 2100 tok/s at 63-66 in / 256 out, 3900 ms median
    page = owner_client.get(f"/references/{ref.pk}/compare/", {"point": local.pk})
    result = page.context["result"]
    assert result.ratio is None and result.difference_pct is None
    assert result.spec_differs is True and result.controlled is False
    html = page.content.decode()
    assert "The reference is 1000 in / 1000 out, the local point 63-66 in / 256 out" in html
    assert _cell(html, "reference-ratio") == "no percentage: specs differ"
    # The published latency still stands beside the local median, without a percentage.
    assert (result.reference_latency_ms, result.local_latency_ms) == (20000.0, 3900.0)
    assert "Median request latency (ms, E2EL)" in html and "x2.000" not in html


def _full_provenance(host: str = "test-host", version: str = "0.32.0") -> Provenance:
    return Provenance(
        hardware=Hardware(host=host, gpu_name="NVIDIA H200", gpu_count=1),
        engine=EngineInfo(launch_style="serve", version=version, cache_dtype="fp8"),
        checkpoint=Checkpoint(model="nvidia/Qwen3-30B-A3B-NVFP4", revision=REVISION,
                                     precision="NVFP4"),
        client_version="headroom-runner 0.1.0",
        started_at="2026-11-30T15:00:00Z",
    )


def _reference_like(local_point, **overrides) -> ExternalReference:
    """A reference stating each fixed factor exactly as the local point records it."""
    from judgement.figures import measured

    facts = measured(local_point).facts
    fields = {
        "source": "Same setup", "url": "https://example.com/same",
        "recorded_on": datetime.date(2026, 10, 1), "value": 1050.0, "gpu_name": facts.gpu_sku,
        "gpu_count": facts.gpu_count, "runtime": facts.runtime,
        "runtime_version": facts.runtime_version, "checkpoint": facts.checkpoint,
        "checkpoint_revision": facts.checkpoint_revision, "precision": facts.precision,
        "kv_dtype": facts.kv_dtype, "request_count": facts.request_count, "host": facts.host,
        "workload_spec": facts.workload.label(), "latency_ms": 4000.0,
        "latency_statistic": "median",
    }
    return ExternalReference.objects.create(**{**fields, **overrides})


def test_a_reference_matching_every_factor_is_controlled_and_one_without_host_is_not(
    owner_client,
):
    benchmark = sweep()
    local = store(benchmark, max_num_seqs=1024, num_requests=2000, throughput=2100.0,
                  median_e2el_ms=4300.0, update={"provenance": _full_provenance()})
    ref = _reference_like(local)
    page = owner_client.get(f"/references/{ref.pk}/compare/", {"point": local.pk})
    result = page.context["result"]
    assert result.controlled is True, result.sentence
    assert result.ratio == pytest.approx(2.0)  # 2100 / 1050 per GPU on one GPU
    html = page.content.decode()
    assert "not controlled" not in html and ": controlled: same GPU SKU" in html
    assert _cell(html, "reference-ratio") == "x2.000 (+100.0%)"
    # 4000 ms published median against the local 4300 ms median: +7.5%.
    assert result.latency_difference_pct == pytest.approx(7.5)
    assert "+7.5%" in html

    no_host = _reference_like(local, source="No host", host="")
    page = owner_client.get(f"/references/{no_host.pk}/compare/", {"point": local.pk})
    assert page.context["result"].controlled is False
    assert page.context["result"].unknown == ("host",)
    html = page.content.decode()
    assert "not controlled" in html and "host not recorded on both sides" in html


def _node_run(benchmark, *, version: str, workload: WorkloadSpec, throughput: float,
              median_e2el_ms: float, replicas: int = 8):
    per_replica = [
        ReplicaResult(replica=i, base_url=f"http://127.0.0.1:{8000 + i}",
                             window=Window(start=0.0, end=10.0), metrics=None)
        for i in range(replicas)
    ]
    return store(benchmark, max_num_seqs=256, num_requests=2000, throughput=throughput,
                 median_e2el_ms=median_e2el_ms,
                 update={"key": f"node x{replicas}", "replicas": replicas,
                         "per_replica": per_replica, "workload": workload,
                         "provenance": _full_provenance(version=version)})


def test_two_node_runs_at_different_specs_give_no_percentage(owner_client):
    from tests.rows import make_node

    first, second = sweep(), sweep(node=make_node("gpu-b"))
    baseline = _node_run(first, version="0.10.0", workload=WorkloadSpec(),  # 63-66 / 256
                         throughput=42_000.0, median_e2el_ms=16_000.0)
    spec_1k = WorkloadSpec(input_tokens_min=1000, input_tokens_max=1000,
                                  output_tokens=1000)
    candidate = _node_run(second, version="0.11.0", workload=spec_1k, throughput=50_000.0,
                          median_e2el_ms=30_000.0)
    response = owner_client.post("/comparisons/new/", {
        "baseline_point": baseline.pk, "candidate_point": candidate.pk, "name": "", "notes": ""})
    assert response.status_code == 302  # shown with the statement, not refused
    page = owner_client.get(response["Location"])
    result = page.context["result"]
    assert result.improvement_pct is None and result.ratio is None
    assert result.latency_change_pct is None
    assert result.spec_differs is True and result.controlled is False
    assert result.differing == ("runtime version", "spec")
    html = page.content.decode()
    assert "The baseline is 63-66 in / 256 out, the candidate 1000 in / 1000 out" in html
    assert _cell(html, "comparison-improvement") == "no percentage: specs differ"
    assert _cell(html, "comparison-latency-change") == "no percentage: specs differ"
    assert "42000.0" in html and "50000.0" in html  # the figures themselves stay


def _cell(html: str, cell_id: str) -> str:
    """The text of the element with this id, tags removed and whitespace collapsed."""
    import re

    match = re.search(rf'id="{cell_id}"[^>]*>(.*?)</td>', html, re.DOTALL)
    assert match, cell_id
    return " ".join(re.sub(r"<[^>]+>", "", match.group(1)).split())
