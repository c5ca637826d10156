"""The run page's judgement sections: operating point, verdicts, sweep change, repeats, scaling."""

from __future__ import annotations

import html

import pytest

from benchmarks.models import Benchmark, OperatingPoint
from judgement.verdict_rows import EvidenceItem
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import ReplicaResult, Window, point_key
from runner.schema.samples import QueueSummary
from tests.rows import make_benchmark

from .helpers import point, store, sweep

pytestmark = pytest.mark.django_db


def test_the_run_page_shows_the_default_knee_with_its_sentence(owner_client):
    benchmark = sweep()
    response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    j = response.context["judgement"]
    assert j.shown.key == point(benchmark, 512, 2000).key
    assert j.shown.stored is None
    # 3000 -> 3020 is +0.67% (two decimals below 1%), 4100 -> 7000 ms +70.7%.
    assert ("going on to burst 4000 added +0.67% output tokens/s while median latency rose "
            "+70.7%.") in response.content.decode()
    # The chart marks the selected point.
    assert j.overlay["selected"]["y"] == [3000.0]


def test_each_point_gets_a_verdict_with_its_evidence_numbers(owner_client):
    benchmark = sweep()
    response = owner_client.get(f"/runs/{benchmark.code}/")
    rows = {r.point.key: r for r in response.context["judgement"].rows}
    pinned = rows[point(benchmark, 256, 4000).key]
    # mean running 256 of max_num_seqs 256 with 3000 waiting: the scheduler cap binds.
    assert pinned.verdict.kind == "scheduler_cap"
    assert EvidenceItem(label="mean waiting", value=3000.0, kind="number") in (
        pinned.evidence
    )
    assert rows[point(benchmark, 512, 4000).key].verdict.kind == "step_time"
    html = response.content.decode()
    assert "scheduler_cap" in html and "mean waiting 3000" in html


def test_the_sweep_change_sentence_names_the_setting_and_the_bottlenecks(owner_client):
    benchmark = sweep()
    response = owner_client.get(f"/runs/{benchmark.code}/")
    summary = response.context["judgement"].summary
    assert summary is not None
    assert "max_num_seqs from 256 to 512" in summary.sentence
    assert "scheduler cap" in summary.sentence and "step time" in summary.sentence
    page = html.unescape(response.content.decode())
    assert summary.sentence in page
    # Beside it, what the step did to output at the loads compared, from the same summary.
    assert str(summary.overall.story).startswith(
        "At burst 4000, raising max_num_seqs from 256 to 512 raised output 1.16x (2,610 -> 3,020 "
        "output tok/s): at max_num_seqs 256, the scheduler cap bound")
    assert str(summary.overall.story) in page
    # And each config over its own load levels, from the same verdicts.
    ladders = response.context["judgement"].ladders
    assert [line.split(":")[0] for line in ladders] == ["seqs=256", "seqs=512"]
    assert all(line in page for line in ladders)


def test_a_knee_over_fewer_than_three_levels_is_refused_with_its_reason(owner_client):
    benchmark = make_benchmark(state="succeeded")
    store(benchmark, max_num_seqs=256, num_requests=1000, throughput=100.0, median_e2el_ms=50.0)
    store(benchmark, max_num_seqs=256, num_requests=2000, throughput=110.0, median_e2el_ms=90.0)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    assert "a knee needs at least 3 load levels; got 2 valid point(s)" in (
        response.content.decode()
    )
    assert response.context["judgement"].overlay["selected"]["keys"] == []


def test_the_page_never_fails_when_a_point_lacks_queue_samples(owner_client):
    benchmark = sweep()
    bare = store(benchmark, max_num_seqs=1024, num_requests=1000, throughput=900.0,
                 median_e2el_ms=None, samples=0, update={"provenance": None})
    response = owner_client.get(f"/runs/{benchmark.code}/")
    assert response.status_code == 200
    row = next(r for r in response.context["judgement"].rows if r.point.pk == bare.pk)
    assert row.verdict is None
    assert "no engine samples" in row.no_verdict
    assert "no engine samples" in response.content.decode()


def test_a_knee_selection_is_stored_with_its_parameters(owner_client, owner):
    benchmark = sweep()
    response = owner_client.post(
        f"/runs/{benchmark.code}/operating-point/",
        {"method": "knee", "throughput_gain_pct": "1", "latency_growth_pct": "50"},
    )
    assert response.status_code == 302
    chosen = OperatingPoint.objects.get(benchmark=benchmark, is_current=True)
    assert chosen.method == "knee"
    assert chosen.params == {"throughput_gain_pct": 1.0, "latency_growth_pct": 50.0}
    assert chosen.point == point(benchmark, 512, 2000)
    assert chosen.chosen_by == owner
    assert chosen.evidence["latency_growth_pct"] == pytest.approx((7000 / 4100 - 1) * 100)
    page = owner_client.get(f"/runs/{benchmark.code}/")
    assert page.context["judgement"].shown.stored == chosen


def test_an_slo_selection_names_the_binding_limit(owner_client):
    benchmark = sweep()
    response = owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                                 {"method": "slo", "slo_median_e2el_ms": "5000"})
    assert response.status_code == 302
    chosen = OperatingPoint.objects.get(benchmark=benchmark, is_current=True)
    assert chosen.params == {"limits": {"median_e2el_ms": 5000.0}}
    assert chosen.point == point(benchmark, 512, 2000)
    assert chosen.evidence["binding_metric"] == "median_e2el_ms"


def test_an_override_requires_a_written_reason(owner_client):
    benchmark = sweep()
    target = point(benchmark, 256, 1000)
    response = owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                                 {"method": "override", "point": target.pk, "reason": "   "})
    assert response.status_code == 400
    assert "An override needs a written reason." in response.content.decode()
    assert not OperatingPoint.objects.exists()


def test_an_override_keeps_its_reason_and_what_it_replaced(owner_client):
    benchmark = sweep()
    owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                      {"method": "knee", "throughput_gain_pct": "2", "latency_growth_pct": "20"})
    target = point(benchmark, 256, 1000)
    response = owner_client.post(
        f"/runs/{benchmark.code}/operating-point/",
        {"method": "override", "point": target.pk, "reason": "customer p99 budget is tight"},
    )
    assert response.status_code == 302
    current = OperatingPoint.objects.get(benchmark=benchmark, is_current=True)
    assert current.point == target and current.reason == "customer p99 budget is tight"
    assert current.params["replaces_method"] == "knee"
    assert OperatingPoint.objects.filter(benchmark=benchmark).count() == 2
    page = owner_client.get(f"/runs/{benchmark.code}/").content.decode()
    assert "customer p99 budget is tight" in page


def test_the_database_refuses_an_override_without_reason():
    from django.db import IntegrityError

    benchmark = sweep()
    with pytest.raises(IntegrityError):
        OperatingPoint.objects.create(benchmark=benchmark, method="override",
                                      point=point(benchmark, 256, 1000), sentence="x", reason=" ")


def test_repeats_show_the_lowest_as_capacity_with_the_spread(owner_client):
    benchmark = sweep()
    store(benchmark, max_num_seqs=256, num_requests=1000, throughput=1900.0,
          median_e2el_ms=4100.0, repeat=1)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    (row,) = response.context["judgement"].capacity
    assert row["estimate"].capacity == 1900.0
    assert row["estimate"].spread == 100.0
    assert "1900.0" in response.content.decode()


def _replica_point(benchmark, replicas=2, output_tokens=256):
    per_replica = [
        ReplicaResult(replica=i, base_url=f"http://127.0.0.1:{8000 + i}",
                             window=Window(start=0.0, end=9.5 + i * 0.5),
                             metrics=None)
        for i in range(replicas)
    ]
    return store(
        benchmark, max_num_seqs=256, num_requests=8000, throughput=3800.0,
        median_e2el_ms=5000.0, completed=8000 * replicas,  # each replica was sent the load
        update={"replicas": replicas, "per_replica": per_replica,
                "workload": WorkloadSpec(output_tokens=output_tokens)},
    )


def test_node_scaling_uses_the_chosen_single_replica_reference(owner_client):
    benchmark = sweep()
    node = _replica_point(benchmark)
    reference = point(benchmark, 256, 2000)  # 2600 tok/s, one replica, same spec
    response = owner_client.get(f"/runs/{benchmark.code}/",
                                {f"scaling_ref_{node.pk}": reference.pk})
    (section,) = response.context["judgement"].scaling
    assert section.error is None
    assert section.result.efficiency == pytest.approx(3800.0 / (2 * 2600.0))
    html = response.content.decode()
    assert "73.1%" in html
    assert 'class="scaling-efficiency">73.1% (0.731)</dd>' in html
    assert section.window_seconds == 10.0
    assert len(section.per_replica) == 2
    assert reference in section.choices


def test_node_scaling_refuses_a_reference_of_another_workload_spec(owner_client):
    benchmark = sweep()
    node = _replica_point(benchmark, output_tokens=128)
    other = point(benchmark, 256, 2000)  # 256 output tokens
    response = owner_client.get(f"/runs/{benchmark.code}/", {f"scaling_ref_{node.pk}": other.pk})
    assert response.status_code == 200
    (section,) = response.context["judgement"].scaling
    assert section.result is None
    assert "a scaling reference needs the same workload spec" in section.error
    assert other not in section.choices
    assert "a scaling reference needs the same workload spec" in response.content.decode()


def test_an_unfinished_run_without_points_renders(owner_client):
    benchmark = make_benchmark()
    assert owner_client.get(f"/runs/{benchmark.code}/").status_code == 200
    Benchmark.objects.all()  # no error either way


def test_the_operating_point_page_lists_the_choices_made(owner_client):
    benchmark = sweep()
    owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                      {"method": "pareto", "min_tokens_per_user": "10"})
    page = owner_client.get(f"/runs/{benchmark.code}/operating-point/")
    assert page.status_code == 200
    (chosen,) = page.context["history"]
    assert chosen.method == "pareto" and chosen.params == {"min_tokens_per_user": 10.0}
    assert "Pareto frontier" in page.content.decode()


def test_an_unreachable_pareto_target_is_refused_with_the_reason(owner_client):
    benchmark = sweep()  # median TPOT 20 ms everywhere: 50 tokens/s per user at most
    response = owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                                 {"method": "pareto", "min_tokens_per_user": "80"})
    assert response.status_code == 400
    assert "no frontier point gives 80.0 tokens/s per user; the most is 50.0" in (
        response.content.decode()
    )
    assert not OperatingPoint.objects.exists()


def test_an_slo_without_any_limit_is_refused(owner_client):
    benchmark = sweep()
    response = owner_client.post(f"/runs/{benchmark.code}/operating-point/", {"method": "slo"})
    assert response.status_code == 400
    assert "An SLO selection needs at least one latency limit." in response.content.decode()


def _node_point(benchmark, num_requests, throughput, median_e2el_ms, repeat=0, replicas=8):
    """An 8-replica node run of sweep()'s seqs=256 config, pinned on every replica (8 x 256
    running, 8 x 1,500 waiting), keyed apart from the single-replica point of the same load."""
    single_key = point_key(EngineConfig(max_num_seqs=256),
                                  LoadSpec(shape="burst", num_requests=num_requests),
                                  repeat)
    per_replica = [
        ReplicaResult(replica=i, base_url=f"http://127.0.0.1:{8000 + i}",
                             window=Window(start=0.0, end=10.0), metrics=None)
        for i in range(replicas)
    ]
    queue = QueueSummary(samples=160, mean_running=256.0 * replicas,
                                mean_waiting=1500.0 * replicas, peak_running=256.0,
                                peak_waiting=3000.0, peak_kv_usage=0.5, preemptions=0.0,
                                running_while_waiting_s={"256": 10.0 * replicas})
    return store(benchmark, max_num_seqs=256, num_requests=num_requests, throughput=throughput,
                 median_e2el_ms=median_e2el_ms, repeat=repeat,
                 completed=num_requests * replicas,  # each replica was sent the load
                 update={"key": f"{single_key}|x{replicas}", "replicas": replicas,
                         "per_replica": per_replica, "queue": queue})


def test_node_runs_beside_single_replica_points_keep_every_verdict_and_the_summary(
    owner_client,
):
    benchmark = sweep()
    low = _node_point(benchmark, 2000, 20_000.0, 4500.0)
    high = _node_point(benchmark, 4000, 20_100.0, 8200.0)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    j = response.context["judgement"]
    assert j.verdict_error is None
    rows = {r.point.key: r for r in j.rows}
    assert len(rows) == 8
    assert all(r.verdict is not None for r in rows.values()), {
        k: r.no_verdict for k, r in rows.items() if r.verdict is None
    }
    # Each is judged against the lower load level of its own ladder: the node against the node.
    assert rows[high.key].verdict.kind == "scheduler_cap"
    assert rows[high.key].verdict.evidence.previous_key == low.key
    single = point(benchmark, 256, 4000)
    assert rows[single.key].verdict.evidence.previous_key == point(benchmark, 256, 2000).key
    # The sweep summary still joins the single-replica configs.
    summary = j.summary
    assert summary is not None
    assert "max_num_seqs from 256 to 512" in summary.sentence
    assert summary.overall.from_key == single.key
    assert summary.sentence in html.unescape(response.content.decode())
    # A node run is not a repeat of the single-replica point at its config and load.
    assert j.capacity == []


def test_the_capacity_table_groups_node_repeats_apart_and_names_replicas_and_spec(
    owner_client,
):
    benchmark = sweep()
    _node_point(benchmark, 2000, 20_000.0, 4500.0, repeat=0)
    _node_point(benchmark, 2000, 19_000.0, 4600.0, repeat=1)
    response = owner_client.get(f"/runs/{benchmark.code}/")
    (row,) = response.context["judgement"].capacity
    assert (row["config"], row["offered_concurrency"], row["replicas"]) == ("seqs=256", 2000, 8)
    assert row["spec"] == "63-66 in / 256 out"
    assert row["estimate"].capacity == 19_000.0
    assert row["estimate"].spread == 1_000.0


def test_a_ladder_with_two_points_at_one_level_loses_only_its_own_verdicts(owner_client):
    # The same point stored twice under another key (imported again): its ladder cannot say
    # which is the lower load level, so it gets no verdicts; the other config keeps its own.
    benchmark = sweep()
    twin_key = f"{point(benchmark, 256, 2000).key}|again"
    store(benchmark, max_num_seqs=256, num_requests=2000, throughput=2590.0,
          median_e2el_ms=4310.0, mean_running=256.0, mean_waiting=1500.0,
          update={"key": twin_key})
    response = owner_client.get(f"/runs/{benchmark.code}/")
    j = response.context["judgement"]
    rows = {r.point.key: r for r in j.rows}
    assert "share config, replica count, workload spec, repeat and load level" in j.verdict_error
    assert rows[twin_key].verdict is None
    assert rows[point(benchmark, 256, 4000).key].verdict is None
    assert "share config" in rows[point(benchmark, 256, 4000).key].no_verdict
    assert rows[point(benchmark, 512, 4000).key].verdict.kind == "step_time"


def test_run_page_gives_each_row_its_own_points_judgement():
    from judgement.run_page import run_page

    benchmark = sweep()
    page = run_page(benchmark, {})
    assert page is not None and page.pareto_unit == "CPU engine"  # the factories run on CPU
    assert [r.point.key for r in page.rows if r.selected] == [page.shown.key]
    assert page.pareto is not None
    frontier = set(page.pareto["frontier"]["keys"])
    assert frontier and any(not r.on_frontier for r in page.rows)
    for row in page.rows:
        assert row.verdict is not None and row.verdict.key == row.point.key
        assert row.on_frontier == (row.point.key in frontier)
    pinned = next(r for r in page.rows if r.point.key == point(benchmark, 256, 4000).key)
    assert pinned.verdict is not None and pinned.verdict.kind == "scheduler_cap"
    assert run_page(make_benchmark(node=benchmark.node), {}) is None


def test_a_stored_knee_from_before_to_load_keeps_its_own_sentence(owner_client):
    benchmark = sweep()
    owner_client.post(f"/runs/{benchmark.code}/operating-point/",
                      {"method": "knee", "throughput_gain_pct": "1", "latency_growth_pct": "50"})
    chosen = OperatingPoint.objects.get(benchmark=benchmark, is_current=True)
    fresh = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].shown
    assert fresh.evidence.found.to_load == "burst 4000"
    # A row stored before the knee's step named its next load level.
    del chosen.evidence["to_load"]
    chosen.sentence = "The operating point is the last load level before the knee (old text)."
    chosen.save()
    shown = owner_client.get(f"/runs/{benchmark.code}/").context["judgement"].shown
    assert shown.evidence is None
    assert shown.sentence == chosen.sentence
