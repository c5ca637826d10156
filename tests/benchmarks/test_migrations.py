"""Points stored before Headroom used vLLM's definitions keep their meaning after the upgrade."""

from __future__ import annotations

import pytest

from analysis.caveats import HEADROOM_IMPORT_TEXT
from benchmarks.storage import columnar
from runner.schema.records import RequestRecord
from tests.migrations import migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("benchmarks", "0004_vllm_parity_metrics")]
AFTER = [("benchmarks", "0005_points_measured_before_vllm_parity")]


def old_era_record() -> RequestRecord:
    """Sent 20 ms after it was due; chunks at 0.10, 0.15, 0.30 s (content chunks of that era)."""
    return RequestRecord(
        index=0, intended_send=0.0, actual_send=0.02, ttft=0.10, e2el=0.30, completed_at=0.31,
        chunk_times=[0.10, 0.15, 0.30], chunk_tokens=[1, 1, 2], prompt_tokens=5, output_tokens=4,
        status=200,
    )


def test_old_points_move_schedule_figures_to_their_names_and_get_vllm_figures_recomputed(
    newest_schema_after,
):
    apps = migrate(BEFORE)
    Workload, Benchmark, Point, PointData = (
        apps.get_model("benchmarks", name)
        for name in ("Workload", "Benchmark", "Point", "PointData")
    )
    workload = Workload.objects.create(name="old era")
    benchmark = Benchmark.objects.create(
        name="old", plan={}, points_total=1, workload=workload, source="imported"
    )
    point = Point.objects.create(
        benchmark=benchmark, key="k", engine_label="defaults", engine_config={},
        load_label="burst 1", load={}, offered_concurrency=1, workload={}, duration=0.31,
        completed=1, failed=0, short_responses=0, valid=True, total_input_tokens=5,
        total_output_tokens=4, request_throughput=1, output_throughput=4,
        total_token_throughput=9,
        # What that era stored: from the intended send, per-token ITL (0.05, 0.075, 0.075).
        median_ttft_ms=100.0, median_e2el_ms=300.0, mean_itl_ms=200 / 3, median_tpot_ms=200 / 3,
    )
    PointData.objects.create(point=point, request_count=1, sample_count=0,
                             requests=columnar.encode_requests([old_era_record()]),
                             samples=columnar.encode_samples([]))
    imported = Point.objects.create(
        benchmark=benchmark, key="i", source="vllm-bench-import", engine_label="defaults",
        engine_config={}, load_label="burst 1", load={}, offered_concurrency=1, workload={},
        duration=1, completed=1, failed=0, short_responses=0, valid=True, total_input_tokens=1,
        total_output_tokens=1, request_throughput=1, output_throughput=1,
        total_token_throughput=2, median_ttft_ms=42.0,
    )

    apps = migrate(AFTER)
    Point = apps.get_model("benchmarks", "Point")
    point = Point.objects.get(pk=point.pk)
    assert (point.median_sched_ttft_ms, point.median_sched_e2el_ms) == (100.0, 300.0)
    assert point.mean_token_itl_ms == pytest.approx(200 / 3)
    # vLLM's: from the actual send (0.02 s), one ITL per chunk (0.05 s, 0.15 s).
    assert point.median_ttft_ms == pytest.approx(80.0)
    assert point.median_e2el_ms == pytest.approx(280.0)
    assert point.mean_itl_ms == pytest.approx(100.0)
    assert point.median_tpot_ms == pytest.approx(200 / 3)  # the same under both origins
    assert "recomputed" in point.notes[-1]
    assert Point.objects.get(pk=imported.pk).median_ttft_ms == 42.0


def test_imported_runs_lose_their_shared_plan_key_and_headroom_points_get_a_caveat(
    newest_schema_after,
):
    apps = migrate([("benchmarks", "0026_workload_lora_split")])
    Workload, Benchmark = (apps.get_model("benchmarks", name) for name in ("Workload", "Benchmark"))
    workload = Workload.objects.create(name="imported")
    shared = "f" * 64  # what every import's {name, imported_from} plan was keyed as
    baseline, judged = (
        Benchmark.objects.create(name=name, plan={"name": name, "imported_from": f"{name}.json"},
                                 workload=workload, source="imported", state="succeeded",
                                 plan_key=shared, accepted_baseline=accepted, regression=verdict)
        for name, accepted, verdict in (("a", True, "baseline"), ("b", False, "regressed"))
    )

    Point = apps.get_model("benchmarks", "Point")
    fields = {"engine_label": "defaults", "engine_config": {}, "load_label": "burst 1",
              "load": {}, "offered_concurrency": 1, "workload": {}, "duration": 1.0,
              "completed": 1, "failed": 0, "short_responses": 0, "valid": True,
              "total_input_tokens": 1, "total_output_tokens": 1, "request_throughput": 1.0,
              "output_throughput": 1.0, "total_token_throughput": 2.0}
    headroom = Point.objects.create(benchmark=judged, key="h", source="headroom", **fields)
    bench = Point.objects.create(benchmark=judged, key="v", source="vllm-bench-import", **fields)

    apps = migrate([("benchmarks", "0028_imported_runs")])
    Benchmark, Caveat = (apps.get_model("benchmarks", name) for name in ("Benchmark", "Caveat"))
    rows = Benchmark.objects.filter(pk__in=[baseline.pk, judged.pk])
    assert set(rows.values_list("plan_key", "accepted_baseline", "regression")) == {
        ("", False, "")}
    assert list(Caveat.objects.filter(code="headroom-import").values_list("point", "text")) == [
        (headroom.pk, HEADROOM_IMPORT_TEXT)]
    assert not Caveat.objects.filter(point=bench.pk).exists()
