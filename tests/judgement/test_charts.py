"""The run page's charts and the sentences that stand in for them: queue steps, the Pareto chart,
no empty queue charts, why there is no sweep summary, percentages, node scaling refusals."""

from __future__ import annotations

import json
import re

import pytest

from benchmarks.models import Point, PointData
from judgement import charts
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.result import ReplicaResult, Window, point_key
from tests.rows import make_benchmark

from .helpers import SWEEP, point, store, sweep

pytestmark = pytest.mark.django_db


def _run_page(client, benchmark, **params):
    response = client.get(f"/runs/{benchmark.code}/", params)
    assert response.status_code == 200
    return response


# --- queue charts ------------------------------------------------------------------------------


def test_the_samples_view_tells_the_page_to_draw_gauges_as_steps(owner_client):
    benchmark = sweep()
    stored = point(benchmark, 256, 1000)
    data = owner_client.get(f"/runs/{benchmark.code}/points/{stored.pk}/samples.json").json()
    # A gauge holds its value until the next scrape: horizontal then vertical.
    assert data["line_shape"] == "hv"
    assert len(data["replicas"][0]["t"]) == 20


def test_a_point_without_engine_samples_gets_a_sentence_instead_of_a_queue_chart(owner_client):
    benchmark = sweep()
    silent = store(benchmark, max_num_seqs=1024, num_requests=1000, throughput=900.0,
                   median_e2el_ms=5000.0, samples=0, update={"samples": []})
    response = _run_page(owner_client, benchmark)
    queue = response.context["judgement"].queue
    assert silent not in queue.drawn and len(queue.drawn) == 6
    ((why, missing),) = queue.missing
    assert missing == [silent]
    assert "the engine's /metrics did not answer during the point" in why
    html = response.content.decode()
    assert "No queue chart for seqs=1024 · burst 1000 · r0: no engine samples" in html
    # The chart's point list offers only points it can draw.
    assert f"/points/{silent.pk}/samples.json" not in html


def test_an_imported_run_says_why_it_has_no_queue_chart_and_draws_none(owner_client):
    benchmark = make_benchmark(state="succeeded")
    for level in (1000, 2000):
        store(benchmark, max_num_seqs=256, num_requests=level, throughput=100.0 * level,
              median_e2el_ms=4000.0, samples=0,
              update={"source": "vllm-bench-import", "samples": [], "provenance": None})
    response = _run_page(owner_client, benchmark)
    queue = response.context["judgement"].queue
    assert queue.drawn == []
    html = response.content.decode()
    assert "No queue chart for any point of this run: imported from vllm bench serve" in html
    assert 'id="samples-chart"' not in html


def test_a_queue_summary_without_its_samples_is_named_as_such(owner_client):
    benchmark = sweep()
    summary_only = point(benchmark, 512, 4000)
    PointData.objects.filter(point=summary_only).update(sample_count=0)
    queue = _run_page(owner_client, benchmark).context["judgement"].queue
    ((why, missing),) = queue.missing
    assert missing == [summary_only]
    assert why.startswith("the result holds the queue summary of 20 engine samples")


# --- the Pareto chart --------------------------------------------------------------------------

# (max_num_seqs, requests, output tok/s, median TPOT ms) on one GPU each. Per user = 1000 / TPOT:
#   A 1000 tok/s at 10 ms = 100/user; B 2000 at 20 ms = 50/user; C 1500 at 25 ms = 40/user
#   (B beats it on both axes); D 3000 at 50 ms = 20/user. Frontier by per GPU: A, B, D.
PARETO = (
    ("A", 64, 1000, 1000.0, 10.0),
    ("B", 64, 2000, 2000.0, 20.0),
    ("C", 64, 3000, 1500.0, 25.0),
    ("D", 64, 4000, 3000.0, 50.0),
)


def _pareto_run():
    benchmark = make_benchmark(state="succeeded")
    keys = {}
    for name, seqs, level, tput, tpot in PARETO:
        keys[name] = store(benchmark, max_num_seqs=seqs, num_requests=level, throughput=tput,
                           median_e2el_ms=5000.0, median_tpot_ms=tpot).key
    return benchmark, keys


def test_the_pareto_chart_joins_the_frontier_and_keeps_the_beaten_points_apart(owner_client):
    benchmark, keys = _pareto_run()
    j = _run_page(owner_client, benchmark).context["judgement"]
    figure = j.pareto
    assert figure["frontier"]["keys"] == [keys["A"], keys["B"], keys["D"]]
    assert figure["frontier"]["x"] == pytest.approx([100.0, 50.0, 20.0])
    assert figure["frontier"]["y"] == pytest.approx([1000.0, 2000.0, 3000.0])
    assert figure["others"]["keys"] == [keys["C"]]
    assert figure["others"]["x"] == pytest.approx([40.0])
    assert figure["frontier"]["text"][0] == "seqs=64 · burst 1000 · r0"
    assert "median TPOT" in figure["x_title"] and "tokens/s per user" in figure["x_title"]
    # The factory's points ran on the CPU engine, which has no GPU to divide by.
    assert figure["y_title"] == "Output tokens/s per CPU engine (the point's / CPU engines it used)"
    assert j.pareto_unit == "CPU engine"


def test_the_throughput_chart_no_longer_draws_the_frontier_on_its_latency_axes(owner_client):
    benchmark, _ = _pareto_run()
    response = _run_page(owner_client, benchmark)
    assert "frontier" not in response.context["judgement"].overlay
    assert 'id="pareto-data"' in response.content.decode()


def test_the_pareto_chart_divides_throughput_by_the_gpus_a_point_used(owner_client):
    benchmark = make_benchmark(state="succeeded")
    store(benchmark, max_num_seqs=64, num_requests=1000, throughput=4000.0,
          median_e2el_ms=5000.0, median_tpot_ms=10.0,
          update={"engine_config": EngineConfig(max_num_seqs=64, tensor_parallel_size=2)})
    figure = _run_page(owner_client, benchmark).context["judgement"].pareto
    assert figure["frontier"]["y"] == pytest.approx([2000.0])


def test_without_a_frontier_the_page_says_why_instead_of_drawing(owner_client):
    benchmark = make_benchmark(state="succeeded")
    store(benchmark, max_num_seqs=64, num_requests=1000, throughput=1000.0,
          median_e2el_ms=5000.0, median_tpot_ms=None)
    response = _run_page(owner_client, benchmark)
    assert response.context["judgement"].pareto is None
    html = response.content.decode()
    assert "No Pareto frontier: point " in html and "has no median_tpot_ms" in html
    assert 'id="pareto-chart"' not in html


def test_the_figure_keeps_frontier_keys_it_has_coordinates_for():
    from analysis.types import ParetoPoint

    figure = charts.pareto_figure(
        [ParetoPoint(key="a", output_throughput_per_gpu=10.0, tokens_per_user=5.0)],
        ["a"], {"a": "label a"},
    )
    assert figure["frontier"] == {"keys": ["a"], "x": [5.0], "y": [10.0], "text": ["label a"]}
    assert figure["others"]["keys"] == []
    assert figure["y_title"] == "Output tokens/s per GPU (the point's / GPUs it used)"


# --- what the sweep changed ----------------------------------------------------------------------


def test_a_sweep_whose_other_config_has_no_samples_says_so_instead_of_one_config(owner_client):
    benchmark = make_benchmark(state="succeeded")
    for level, tput in ((1000, 2000.0), (2000, 2600.0)):
        store(benchmark, max_num_seqs=256, num_requests=level, throughput=tput,
              median_e2el_ms=4000.0, mean_running=256.0, mean_waiting=600.0)
        store(benchmark, max_num_seqs=512, num_requests=level, throughput=tput,
              median_e2el_ms=4000.0, samples=0)
    response = _run_page(owner_client, benchmark)
    j = response.context["judgement"]
    assert j.summary is None
    assert j.summary_error.startswith("only seqs=256 has bottleneck verdicts (seqs=512: no engine samples")
    assert "one engine config" not in j.summary_error
    assert f"No summary: {j.summary_error}." in response.content.decode()


# --- percentages ----------------------------------------------------------------------------------


def test_a_sub_one_percent_step_keeps_two_decimals_everywhere_on_the_page(owner_client):
    benchmark = sweep()
    html = _run_page(owner_client, benchmark).content.decode()
    # seqs=512 at 4000: 3000 -> 3020 is +0.67%, 4100 -> 7000 ms is +70.7%.
    assert ("engine step time: mean running rose +60.0% over the previous load level (to 480) "
            "for +0.67% output tokens/s") in html
    assert "gain vs previous level +0.67%" in html
    assert "+0%" not in html and "+1%" not in html
    # Peak KV 0.5 in the table and in the evidence, one decimal.
    assert "peak KV 50.0%" in html


# --- node scaling ----------------------------------------------------------------------------------


def _node(benchmark, completed_per_replica=8000, replicas=2):
    per_replica = [
        ReplicaResult(replica=i, base_url=f"http://127.0.0.1:{8000 + i}",
                             window=Window(start=0.0, end=10.0), metrics=None)
        for i in range(replicas)
    ]
    return store(benchmark, max_num_seqs=256, num_requests=8000, throughput=3800.0,
                 median_e2el_ms=5000.0, completed=completed_per_replica * replicas,
                 update={"replicas": replicas, "per_replica": per_replica})


def test_a_node_point_that_fails_a_stored_point_check_is_refused_with_the_check(owner_client):
    benchmark = sweep()
    # 2 replicas were each sent 8,000 requests, but the node accounts for 8,000 in all.
    node = _node(benchmark, completed_per_replica=4000)
    reference = point(benchmark, 256, 2000)
    response = _run_page(owner_client, benchmark, **{f"scaling_ref_{node.pk}": reference.pk})
    (section,) = response.context["judgement"].scaling
    assert section.result is None
    assert "fails a check of its stored aggregates" in section.refusal
    assert "8000 completed + 0 failed = 8000 requests, but the load sent 16000" in (
        section.refusal)
    html = response.content.decode()
    assert "No scaling for this node run:" in html
    assert "Compute efficiency" not in html


def test_a_reference_that_fails_a_stored_point_check_is_refused_with_the_check(owner_client):
    benchmark = sweep()
    node = _node(benchmark)
    # Claims 2,600 tok/s over a 10 s window that holds 10,000 output tokens (1,000 tok/s).
    bad = store(benchmark, max_num_seqs=128, num_requests=2000, throughput=2600.0,
                median_e2el_ms=4300.0, total_output_tokens=10_000)
    response = _run_page(owner_client, benchmark, **{f"scaling_ref_{node.pk}": bad.pk})
    (section,) = response.context["judgement"].scaling
    assert section.refusal is None and section.result is None
    assert f"reference {bad.key} fails a check of its stored aggregates" in section.error
    assert "output_throughput is 2,600.00/s" in section.error
    assert Point.objects.get(pk=bad.pk).valid  # the run itself completed: only the check fails


def test_a_node_rows_evidence_says_whose_figure_each_number_is(owner_client):
    from tests.judgement.test_run_page import _node_point

    benchmark = sweep()
    node = _node_point(benchmark, 2000, 20_000.0, 4500.0)
    response = _run_page(owner_client, benchmark)
    row = next(r for r in response.context["judgement"].rows if r.point.pk == node.pk)
    labels = {e.label: e.value for e in row.evidence}
    # The queue summary's node rules: means summed, peaks the highest replica's.
    assert labels["mean running (all 8 replicas)"] == 2048.0
    assert labels["peak running (highest replica)"] == 256.0
    assert labels["max_num_seqs (per replica)"] == 256
    assert "mean 256 per replica" in row.verdict.sentence
    assert "A node run's row (several replicas) holds the node's queue" in (
        response.content.decode())


# --- trace names -------------------------------------------------------------------------------


def test_a_node_run_is_its_own_line_not_a_load_level_of_its_config():
    benchmark = sweep()
    points = list(benchmark.points.all())
    node = next(p for p in points if p.engine_label == "seqs=256")
    node.replicas = 2
    traces = {t["name"]: t for t in charts.throughput_figure(points)["traces"]}
    assert traces["seqs=256, 2 replicas"]["y"] == [node.output_throughput]
    assert node.output_throughput not in traces["seqs=256"]["y"]
    assert len(traces["seqs=256"]["y"]) == sum(p.engine_label == "seqs=256" for p in points) - 1


def test_every_string_in_chart_data_reaches_plotly_as_text_not_as_its_html_subset():
    typed = '<a href="https://evil.example/">click</a> & <b>more</b>'
    shown = charts.plotly_text(typed)
    assert shown == ('&lt;a href="https://evil.example/"&gt;click&lt;/a&gt; &amp; '
                     "&lt;b&gt;more&lt;/b&gt;")
    figure = {"traces": [{"name": typed, "text": [typed, "burst 2"], "y": [1.0, None],
                          "valid": [True, False]}],
              "x": {"median_e2el_ms": [2.5]}, "labels": (typed,)}
    assert charts.plotly_data(figure) == {
        "traces": [{"name": shown, "text": [shown, "burst 2"], "y": [1.0, None],
                    "valid": [True, False]}],
        "x": {"median_e2el_ms": [2.5]}, "labels": [shown]}


def _chart_data(html, element_id):
    """What the page's script reads from a json_script block."""
    found = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html)
    assert found is not None, element_id
    return json.loads(found[1])


# A value an imported file can give an engine flag; it reaches the point's key and label.
LINK_FLAG = "--seed=<a href=x>x</a>"


def _sweep_with_a_link_in_its_flags():
    benchmark = make_benchmark(state="succeeded")
    config = EngineConfig(max_num_seqs=512, extra_args=[LINK_FLAG])
    for seqs, level, tput, e2el, running, waiting in SWEEP[3:]:
        load = LoadSpec(shape="burst", num_requests=level)
        store(benchmark, max_num_seqs=seqs, num_requests=level, throughput=tput,
              median_e2el_ms=e2el, mean_running=running, mean_waiting=waiting,
              update={"engine_config": config, "key": point_key(config, load, 0)})
    return benchmark


def test_the_operating_points_hover_text_shows_a_flag_value_as_text_not_a_link(owner_client):
    benchmark = _sweep_with_a_link_in_its_flags()
    html = _run_page(owner_client, benchmark).content.decode()
    (key,) = _chart_data(html, "judgement-overlay")["selected"]["keys"]
    assert key == "seqs=512,--seed=&lt;a href=x&gt;x&lt;/a&gt;|burst 2000|r0"


def test_each_chart_on_the_run_page_gets_the_flag_value_escaped_once(owner_client):
    benchmark = _sweep_with_a_link_in_its_flags()
    html = _run_page(owner_client, benchmark).content.decode()
    label = "seqs=512,--seed=&lt;a href=x&gt;x&lt;/a&gt;"
    throughput = _chart_data(html, "throughput-data")
    assert [t["name"] for t in throughput["traces"]] == [label]
    pareto = _chart_data(html, "pareto-data")
    assert pareto["frontier"]["text"][0].startswith(f"{label} · burst ")
    assert "&amp;" not in json.dumps([throughput, pareto, _chart_data(html, "judgement-overlay")])
    # The page's own text beside the charts is escaped by the template, as any text.
    assert "<a href=x>" not in html


def test_a_reference_label_on_the_curve_is_escaped_too():
    import datetime

    from benchmarks.models import ExternalReference
    from judgement.charts import chart_overlay

    ref = ExternalReference(source="<img src=x onerror=alert(1)>", value=1000.0,
                            unit="output tokens/s",
                            recorded_on=datetime.date(2026, 1, 2), url="https://example.com/")
    overlay = chart_overlay([], {}, None, [ref], ["median_e2el_ms"])
    (line,) = charts.plotly_data(overlay)["references"]
    assert line["label"].startswith("&lt;img src=x onerror=alert(1)&gt; (2026-01-02)")
