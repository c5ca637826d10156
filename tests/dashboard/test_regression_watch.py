"""Regression watch on the dashboard: accepting a run as its plan's baseline, the verdict each
run of the plan gets against it (run page and runs list), and who may accept one."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction
from django.test import Client
from django.urls import reverse

from benchmarks.models import AuditEvent, Benchmark, Node
from benchmarks.storage import imports, regression_record
from benchmarks.storage.points import store_point
from benchmarks.worker.tasks import _judge_against_baseline
from tests.dashboard.test_plan_files import form_post
from tests.rows import (
    launch_form_data,
    make_benchmark,
    make_checkpoint,
    make_node,
    make_point_result,
    make_runtime,
    make_workload,
)

pytestmark = pytest.mark.django_db


def run_with(*throughputs: float, state: str = "succeeded", **fields) -> Benchmark:
    """A finished run of the test plan: seqs=256 under a burst of 1000, one point a repeat."""
    node = Node.objects.filter(queue="gpu-a").first() or make_node()
    benchmark = make_benchmark(node, state=state, **fields)
    for repeat, throughput in enumerate(throughputs):
        store_point(benchmark, make_point_result(output_throughput=throughput, repeat=repeat))
    return benchmark


def fresh(benchmark: Benchmark) -> Benchmark:
    return Benchmark.objects.get(pk=benchmark.pk)


def test_runs_of_one_plan_share_its_key_and_another_plan_does_not():
    first = run_with(1000.0)
    again = run_with(1000.0, runtime=make_runtime(version="0.12.0"))
    other = run_with(1000.0, workload=make_workload(name="other", output_tokens=128))
    assert first.plan_key and first.plan_key == again.plan_key
    assert other.plan_key != first.plan_key


def test_a_candidate_beyond_the_spread_regressed_and_one_within_did_not():
    baseline = run_with(1000.0, 1040.0)
    within = run_with(960.0, runtime=make_runtime(version="0.12.0"))
    beyond = run_with(800.0, runtime=make_runtime(version="0.12.0"))
    regression_record.accept(baseline)
    assert fresh(baseline).regression == regression_record.BASELINE
    assert fresh(within).regression == "within spread"
    assert fresh(beyond).regression == "regressed"


def test_a_run_finishing_after_the_baseline_is_judged_then():
    regression_record.accept(run_with(1000.0))
    later = run_with(700.0)
    assert fresh(later).regression == ""
    _judge_against_baseline(later.pk)
    assert fresh(later).regression == "regressed"


def test_a_new_baseline_replaces_the_old_and_judges_the_plan_again():
    old = run_with(1000.0)
    new = run_with(700.0)
    regression_record.accept(old)
    assert fresh(new).regression == "regressed"
    regression_record.accept(new)
    assert not fresh(old).accepted_baseline
    assert fresh(old).regression == "improved"
    regression_record.withdraw(fresh(new))
    assert {fresh(old).regression, fresh(new).regression} == {""}


def test_only_a_succeeded_run_with_points_can_be_a_baseline():
    with pytest.raises(regression_record.BaselineError, match="only a run that succeeded"):
        regression_record.accept(run_with(1000.0, state="failed"))
    with pytest.raises(regression_record.BaselineError, match="no points"):
        regression_record.accept(make_benchmark(make_node("gpu-b"), state="succeeded"))


def test_the_database_holds_one_baseline_per_plan():
    first, second = run_with(1000.0), run_with(1000.0)
    Benchmark.objects.filter(pk=first.pk).update(accepted_baseline=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Benchmark.objects.filter(pk=second.pk).update(accepted_baseline=True)
    with pytest.raises(IntegrityError), transaction.atomic():
        Benchmark.objects.filter(pk=run_with(1.0, state="failed").pk).update(
            accepted_baseline=True)


def test_an_engineer_accepts_a_baseline_and_it_is_audited(owner_client):
    baseline = run_with(1000.0)
    candidate = run_with(800.0, runtime=make_runtime(version="0.12.0"))
    response = owner_client.post(reverse("run_baseline", args=[baseline.code]))
    assert response.status_code == 302
    assert fresh(baseline).accepted_baseline
    event = AuditEvent.objects.get(action=AuditEvent.Action.BASELINE)
    assert event.detail == "accepted as the plan's baseline"

    page = owner_client.get(reverse("run_detail", args=[candidate.code])).content.decode()
    assert '<strong class="verdict-regressed">Regressed</strong>' in page
    assert "seqs=256 regressed: at burst 1000, output throughput 800.0 tok/s (-20.0%)" in page
    listing = owner_client.get(reverse("runs")).content.decode()
    assert '<td class="regression verdict-regressed">regressed</td>' in listing
    assert '<td class="regression verdict-baseline">baseline</td>' in listing


def test_the_factors_that_differ_are_named_on_the_run_page(owner_client):
    baseline = run_with(1000.0)
    regression_record.accept(baseline)
    candidate = make_benchmark(Node.objects.get(queue="gpu-a"), state="succeeded")
    result = make_point_result(output_throughput=990.0)
    result.provenance.engine.version = "0.33.0"
    store_point(candidate, result)
    page = owner_client.get(reverse("run_detail", args=[candidate.code])).content.decode()
    assert '<strong class="verdict-within-spread">Within spread</strong>' in page
    assert "differs: runtime version: 0.32.0 -&gt; 0.33.0" in page


def test_a_viewer_without_the_permission_cannot_accept_a_baseline(client, django_user_model):
    baseline = run_with(1000.0)
    # A new account in no group reads every run and changes nothing.
    client.force_login(django_user_model.objects.create_user("viewer"))
    response = client.post(reverse("run_baseline", args=[baseline.code]))
    assert response.status_code == 403
    assert not fresh(baseline).accepted_baseline
    page = client.get(reverse("run_detail", args=[baseline.code])).content.decode()
    assert 'id="accept-baseline"' not in page


def test_accepting_a_failed_run_says_why_and_changes_nothing(owner_client):
    failed = run_with(1000.0, state="failed")
    response = owner_client.post(reverse("run_baseline", args=[failed.code]), follow=True)
    assert "Not accepted as the baseline: only a run that succeeded" in response.content.decode()
    assert not fresh(failed).accepted_baseline
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.BASELINE).exists()


def test_accepting_needs_a_post(owner_client):
    baseline = run_with(1000.0)
    assert owner_client.get(reverse("run_baseline", args=[baseline.code])).status_code == 405


def test_run_again_on_another_runtime_revision_and_node_is_the_same_plan(owner_client,
                                                                          monkeypatch):
    monkeypatch.setattr("benchmarks.worker.tasks.enqueue_benchmark", lambda benchmark: None)
    first_node, other_node = make_node("gpu-a", gpu_count=2), make_node("gpu-b", gpu_count=2)
    data = launch_form_data(first_node, max_num_seqs="64, 256", load_levels="8, 32",
                            repeats="2")
    assert owner_client.post("/runs/new/", data).status_code == 302
    first = Benchmark.objects.get()

    form = owner_client.get(f"/runs/{first.code}/again/").context["form"]
    newer_runtime = make_runtime(version="0.12.0")
    other_revision = make_checkpoint(revision="f" * 40)
    again = {**form_post(form), "node": other_node.pk, "runtime": newer_runtime.pk,
             "checkpoint": other_revision.pk, "repeats": "3", "confirm": "1"}
    assert owner_client.post("/runs/new/", again).status_code == 302
    second = Benchmark.objects.exclude(pk=first.pk).get()
    assert second.plan != first.plan
    assert second.plan_key == first.plan_key

    other = {**form_post(form), "load_levels": "8, 64", "confirm": "1"}
    assert owner_client.post("/runs/new/", other).status_code == 302
    third = Benchmark.objects.exclude(pk__in=[first.pk, second.pk]).get()
    assert third.plan_key != first.plan_key


def imported_by(user, throughput: float, name: str) -> Benchmark:
    """A run imported from a Headroom file by user: one point, its plan only a name and file."""
    point = make_point_result(output_throughput=throughput)
    return imports.import_points([(point, None)], name=name, source_file=f"{name}.jsonl",
                                 user=user)


def test_imported_runs_have_no_plan_key_and_cannot_be_a_baseline(owner):
    first, second = imported_by(owner, 1000.0, "a"), imported_by(owner, 700.0, "b")
    assert (first.plan_key, second.plan_key) == ("", "")
    with pytest.raises(regression_record.BaselineError, match="launched from no plan"):
        regression_record.accept(first)
    with pytest.raises(IntegrityError), transaction.atomic():
        Benchmark.objects.filter(pk=first.pk).update(accepted_baseline=True)


def test_the_baseline_endpoint_refuses_another_users_import(owner, teammate):
    # The owner's imports as the teammate found them: one had a verdict from a shared key.
    theirs, other = imported_by(owner, 1000.0, "theirs"), imported_by(owner, 700.0, "other")
    client = Client()
    client.force_login(teammate)
    page = client.get(reverse("run_detail", args=[theirs.code]))
    assert page.context["regression"] is None  # not computed where it is not shown
    assert 'id="accept-baseline"' not in page.content.decode()

    response = client.post(reverse("run_baseline", args=[theirs.code]))
    assert response.status_code == 403
    assert not fresh(theirs).accepted_baseline
    assert {fresh(theirs).regression, fresh(other).regression} == {""}
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.BASELINE).exists()


def test_a_teammate_may_accept_another_users_launched_run_as_the_page_offers(owner, teammate):
    # A launched run's plan is the team's: the button the page shows, the endpoint accepts.
    baseline = run_with(1000.0, created_by=owner)
    client = Client()
    client.force_login(teammate)
    page = client.get(reverse("run_detail", args=[baseline.code])).content.decode()
    assert 'id="accept-baseline"' in page
    assert client.post(reverse("run_baseline", args=[baseline.code])).status_code == 302
    assert fresh(baseline).accepted_baseline
