"""Saved comparisons and external references: pages, forms, dates and the controlled label."""

from __future__ import annotations

import datetime

import pytest
from django.test import Client

from benchmarks.judgement import save_demo_comparison
from benchmarks.models import Comparison, ExternalReference
from tests.dashboard.factories import make_benchmark, make_point_result

from .helpers import point, store, sweep

pytestmark = pytest.mark.django_db


def _with_version(benchmark, version: str, throughput: float):
    base = make_point_result().provenance
    engine = base.engine.model_copy(update={"version": version})
    provenance = base.model_copy(update={"engine": engine})
    return store(benchmark, max_num_seqs=1024, num_requests=2000, throughput=throughput,
                 median_e2el_ms=4000.0, update={"provenance": provenance})


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
    from tests.dashboard.factories import make_node

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
    overlay = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"]["overlay"]
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
    shown_key = page.context["judgement"]["shown"].key
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
