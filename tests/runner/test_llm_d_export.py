"""A Headroom point as llm-d-benchmark's benchmark report: valid against the JSON Schema llm-d
publishes (tests/data/peers/llm-d-benchmark/schemas/), and read back with every figure the
schema holds."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from runner import llm_d_export
from runner.importer.files import load_result_file
from runner.measure.sampler import summarize
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec
from runner.schema.result import Metrics, Window
from runner.schema.samples import QueueSummary
from tests import factories
from tests.rows import make_point_result

SCHEMAS = Path(__file__).parents[1] / "data" / "peers" / "llm-d-benchmark" / "schemas"
# Queue figures the report holds: each component's running, waiting and KV statistics.
QUEUE_FIGURES = ("mean_running", "peak_running", "mean_waiting", "peak_waiting", "mean_kv_usage",
                 "peak_kv_usage")  # fmt: skip


def schema(version: str) -> dict:
    return json.loads((SCHEMAS / f"br_v{version.replace('.', '_')}_json_schema.json").read_text())


def point(**changes):
    """A measured point whose figures are all set and whose queue is its samples' summary."""
    result = make_point_result(samples=24, max_num_seqs=8)
    metrics = factories.metrics(
        completed=1000, mean_ttft_ms=110.5, std_ttft_ms=20.25, median_ttft_ms=120.0,
        p90_ttft_ms=250.0, p95_ttft_ms=300.0, p99_ttft_ms=350.0, mean_tpot_ms=19.5,
        median_tpot_ms=20.0, p99_tpot_ms=30.0, mean_itl_ms=19.0, p99_itl_ms=41.0,
        mean_e2el_ms=5100.0, median_e2el_ms=5200.0, p99_e2el_ms=6500.0,
        other_percentiles={"p99.9_ttft_ms": 377.25, "p25_e2el_ms": 4800.0},
    )  # fmt: skip
    window = Window(start=0.25, end=0.25 + metrics.duration)
    samples = [s.model_copy(update={"t": s.t + 0.25}) for s in result.samples]
    queue = summarize(samples, window.start, window.end)
    return result.model_copy(update={
        "metrics": metrics, "window": window, "samples": samples, "queue": queue,
        "engine_config": EngineConfig(max_num_seqs=8, max_num_batched_tokens=512,
                                      extra_args=["--enforce-eager"]),
        "load": LoadSpec(shape="rate", num_requests=1000, rate=12.5, burstiness=1.0),
        **changes,
    })  # fmt: skip


def test_an_export_is_valid_against_llm_ds_published_schema():
    document = llm_d_export.report(point(), run_code="c0de", run_name="sweep", stage=3)
    assert document["version"] == "0.2.1"
    # YAML is how the download writes it: validate what a reader of that gets.
    read = yaml.safe_load(llm_d_export.write_reports([document]))
    jsonschema.validate(json.loads(json.dumps(read, default=str)), schema("0.2.1"))


def test_the_round_trip_keeps_every_figure_the_schema_holds(tmp_path):
    original = point()
    documents = llm_d_export.reports([original], run_code="c0de", run_name="sweep")
    path = tmp_path / "run.llm-d.yaml"
    path.write_text(llm_d_export.write_reports(documents))
    [back] = load_result_file(path)
    held = [name for name in Metrics.model_fields
            if not ("_sched_" in name or "_token_itl_" in name or "connect" in name)
            and name not in ("max_send_lag_ms", "goodput_slos", "slo_attainment",
                             "request_goodput", "short_responses", "incomplete_responses")]
    for name in held:
        assert getattr(back.metrics, name) == getattr(original.metrics, name), name
    for name in QUEUE_FIGURES:
        assert getattr(back.queue, name) == getattr(original.queue, name), name
    # The counters come back from the samples, over the same window.
    assert back.queue.preemptions == original.queue.preemptions
    assert back.queue.generation_tokens == pytest.approx(original.queue.generation_tokens)
    assert back.load == original.load and back.workload == original.workload
    assert back.engine_config == original.engine_config
    assert len(back.samples) == len(original.samples)
    assert back.provenance is not None and original.provenance is not None
    assert back.provenance.engine.version == original.provenance.engine.version
    assert back.provenance.checkpoint.model == original.provenance.checkpoint.model
    assert back.source == "llm-d-import" and back.peer is not None
    assert back.peer.server is not None and back.peer.server.lacks == []
    # Headroom's own summary, carried as it was; the samples beside it.
    assert back.peer.server.tool == "Headroom's own /metrics samples, exported as an llm-d report"


def test_a_point_without_a_start_time_exports_no_time_series():
    original = point()
    original.provenance = original.provenance.model_copy(update={"started_at": "unknown"})
    document = llm_d_export.report(original, run_code="c0de", run_name="sweep", stage=0)
    [component] = document["results"]["observability"]["components"]
    assert "time_series" not in component and component["aggregate"]["running_requests"]
    jsonschema.validate(document, schema("0.2.1"))


def test_a_point_without_engine_samples_or_latencies_still_validates():
    bare = point(samples=[], queue=QueueSummary(),
                 metrics=factories.metrics(completed=10, failed=0))  # fmt: skip
    document = llm_d_export.report(bare, run_code="c0de", run_name="sweep", stage=0)
    assert "observability" not in document["results"]
    jsonschema.validate(document, schema("0.2.1"))


def test_llm_ds_per_pod_time_series_become_the_points_samples_and_queue(tmp_path):
    """A report whose load tool is not Headroom, with its engine pods' time series as llm-d's
    metrics embedding writes them (0.2.1, one component per pod) and no aggregate: Headroom
    summarises the series over the point's window, as it does its own samples."""
    original = point()
    document = llm_d_export.report(original, run_code="c0de", run_name="sweep", stage=0)
    document["scenario"]["load"]["standardized"]["tool"] = "inference-perf"
    document["scenario"]["load"]["native"] = {"config": {}}
    components = document["results"]["observability"]["components"]
    document["results"]["observability"]["components"] = [
        component for component in components if "time_series" in component]
    jsonschema.validate(json.loads(json.dumps(document, default=str)), schema("0.2.1"))
    path = tmp_path / "report.yaml"
    path.write_text(llm_d_export.write_reports([document]))
    [back] = load_result_file(path)
    assert back.peer is not None and back.peer.server is not None
    assert back.peer.server.kind == "samples"
    assert back.peer.server.tool == "llm-d-benchmark's scrape of the engines' /metrics"
    assert len(back.samples) == len(original.samples)
    for name in (*QUEUE_FIGURES, "preemptions", "samples"):
        assert getattr(back.queue, name) == pytest.approx(getattr(original.queue, name)), name
