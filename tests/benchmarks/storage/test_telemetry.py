"""A point's GPU telemetry (or CPU engine's CPU use) stored, read back, shown and exported."""

from __future__ import annotations

import csv
import io
import json

import pytest

from benchmarks.launch import plans
from benchmarks.models import Benchmark, Point, PointData
from benchmarks.storage import columnar
from benchmarks.storage.points import point_to_result, store_point
from judgement.cost_view import joules_per_output_token
from runner.measure.telemetry_summary import summarize_telemetry
from runner.schema.result import PointResult, Window
from runner.schema.samples import TelemetrySample, TelemetrySummary
from tests.rows import make_benchmark, make_node, make_point_result

WINDOW = Window(start=0.0, end=2.0)
# One GPU read by NVML around the window: 675 J over the window by its counter (see
# tests/runner/measure/test_telemetry.py for the same readings worked by hand), and a CPU engine.
GPU_READINGS = [
    TelemetrySample(t=-0.5, gpu=0, utilization_pct=0.0, memory_used_mib=40960.0,
                           power_w=100.0, sm_clock_mhz=1980.0, energy_j=1_000_000.0),
    TelemetrySample(t=0.5, gpu=0, utilization_pct=80.0, memory_used_mib=41984.0,
                           power_w=300.0, sm_clock_mhz=1980.0, energy_j=1_000_200.0),
    TelemetrySample(t=1.5, gpu=0, utilization_pct=100.0, memory_used_mib=41984.0,
                           power_w=500.0, sm_clock_mhz=1980.0, energy_j=1_000_600.0),
    TelemetrySample(t=2.5, gpu=0, utilization_pct=20.0, memory_used_mib=40960.0,
                           power_w=900.0, sm_clock_mhz=1980.0, energy_j=1_000_950.0),
]
CPU_READINGS = [
    TelemetrySample(t=t, cpu_seconds=s)
    for t, s in [(-0.5, 10.0), (0.5, 10.5), (1.5, 12.0), (2.5, 13.0)]
]


def with_telemetry(result: PointResult, readings, source) -> PointResult:
    result.telemetry_samples = list(readings)
    result.telemetry = summarize_telemetry(readings, WINDOW, 1350, source=source)
    return result


def gpu_point(**fields) -> PointResult:
    return with_telemetry(make_point_result(launch_style="serve", **fields), GPU_READINGS, "nvml")


def test_readings_survive_the_column_encoding_with_missing_values():
    readings = GPU_READINGS[:2] + [
        TelemetrySample(t=0.7, replica=1, gpu=3, power_w=250.0),  # the rest missing
        *CPU_READINGS,
    ]
    assert columnar.decode_telemetry(columnar.encode_telemetry(readings)) == readings


@pytest.mark.parametrize("field", ["gpu", "replica"])
def test_a_negative_gpu_or_replica_is_refused_as_storage_marks_a_missing_one_with_minus_one(
    field,
):
    # A GPU index of -1 would be stored as the CPU reading's "no GPU" and read back as None.
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        TelemetrySample(t=0.0, **{field: -1})


def test_no_readings_store_as_an_empty_blob():
    assert columnar.encode_telemetry([]) == b""
    assert columnar.decode_telemetry(b"") == [] and columnar.decode_telemetry(memoryview(b"")) == []


def test_the_telemetry_encoding_covers_every_field_of_the_schema():
    sample = TelemetrySample(t=1.0, replica=2, gpu=5, **{
        name: 7.0 for name in TelemetrySample.model_fields
        if name not in ("t", "replica", "gpu")
    })
    assert columnar.decode_telemetry(columnar.encode_telemetry([sample])) == [sample]


@pytest.mark.django_db
def test_a_stored_point_reads_back_its_telemetry_exactly():
    benchmark = make_benchmark(state="running")
    result = gpu_point()
    point = store_point(benchmark, result)
    assert point_to_result(point) == result
    point.refresh_from_db()
    # The cost rules read joules per output token off the row (judgement.cost_view).
    assert point.telemetry["joules_per_output_token"] == pytest.approx(0.5)
    assert joules_per_output_token(point) == pytest.approx(0.5)
    assert len(PointData.objects.get(point=point).telemetry) > 0


@pytest.mark.django_db
def test_a_point_stored_before_telemetry_reads_as_none_taken():
    benchmark = make_benchmark(state="running")
    point = store_point(benchmark, make_point_result())
    Point.objects.filter(pk=point.pk).update(telemetry={})
    PointData.objects.filter(point=point).update(telemetry=b"")
    point.refresh_from_db()
    result = point_to_result(point)
    assert result.telemetry == TelemetrySummary()
    assert result.telemetry_samples == []
    assert joules_per_output_token(point) is None


@pytest.fixture
def mixed_run():
    """A run with a GPU point, a CPU engine point and a point without telemetry."""
    benchmark = make_benchmark(state="running")
    store_point(benchmark, gpu_point(max_num_seqs=256))
    cpu = with_telemetry(make_point_result(max_num_seqs=512), CPU_READINGS, "psutil")
    store_point(benchmark, cpu)
    none = make_point_result(max_num_seqs=1024, launch_style="serve")
    none.telemetry = summarize_telemetry(
        [], WINDOW, 1350, source=None,
        note="no GPU telemetry was taken: NVML is not available here")
    store_point(benchmark, none)
    Benchmark.objects.filter(pk=benchmark.pk).update(state="succeeded")
    return benchmark


def points_by_seqs(benchmark) -> dict[int, Point]:
    return {p.engine_config["max_num_seqs"]: p for p in benchmark.points.all()}


@pytest.mark.django_db
def test_the_samples_view_adds_each_devices_readings(owner_client, mixed_run):
    points = points_by_seqs(mixed_run)
    base = f"/runs/{mixed_run.code}/points"
    gpu = owner_client.get(f"{base}/{points[256].pk}/samples.json").json()
    assert "replicas" in gpu  # the queue series are still there
    [device] = gpu["telemetry"]["devices"]
    assert (device["kind"], device["gpu"], device["replica"]) == ("gpu", 0, 0)
    assert device["t"] == [-0.5, 0.5, 1.5, 2.5]
    assert device["power_w"] == [100.0, 300.0, 500.0, 900.0]
    assert device["utilization_pct"] == [0.0, 80.0, 100.0, 20.0]
    cpu = owner_client.get(f"{base}/{points[512].pk}/samples.json").json()
    [device] = cpu["telemetry"]["devices"]
    # Cores busy between readings: 0.5/1.0, 1.5/1.0, 1.0/1.0, stamped at the later reading.
    assert device == {"kind": "cpu", "replica": 0, "t": [0.5, 1.5, 2.5],
                      "cores_busy": [0.5, 1.5, 1.0]}
    none = owner_client.get(f"{base}/{points[1024].pk}/samples.json").json()
    assert none["telemetry"] == {"devices": []}


@pytest.mark.django_db
def test_the_run_page_shows_each_points_telemetry_and_says_where_none_was_taken(
        owner_client, mixed_run):
    html = owner_client.get(f"/runs/{mixed_run.code}/").content.decode()
    points = points_by_seqs(mixed_run)
    rows = {seqs: html.split(f'id="point-{p.pk}-figures"')[1].split("</tr>")[0]
            for seqs, p in points.items()}
    # GPU: 80% busy, 412.5 W mean and 500 W peak, 675 J / 1350 tokens.
    assert "80% · 413/500 W" in rows[256]
    assert "0.500 J/output token" in rows[256]
    assert "energy counter" in rows[256]
    # The CPU engine: 2.25 CPU-s over 2 s, labelled CPU, never GPU.
    assert "CPU: 1.13 cores busy" in rows[512]
    cpu_cell = rows[512].split('class="num point-telemetry"')[1].split("</td>")[0]
    assert "W ·" not in cpu_cell and "J/output token" not in cpu_cell
    assert "no GPU telemetry taken" not in cpu_cell
    assert "no GPU telemetry taken" in rows[1024]
    assert "NVML is not available here" in rows[1024]
    # The chart's point list holds the points that have readings.
    chart = html.split('id="telemetry-point"')[1].split("</select>")[0]
    assert chart.count("<option") == 2 and "(CPU engine: CPU use)" in chart


@pytest.mark.django_db
def test_the_csv_download_has_the_telemetry_figures(owner_client, mixed_run):
    response = owner_client.get(f"/runs/{mixed_run.code}.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    by_source = {row["telemetry_source"]: row for row in rows}
    gpu, cpu, none = by_source["nvml"], by_source["psutil"], by_source[""]
    assert float(gpu["telemetry_joules_per_output_token"]) == pytest.approx(0.5)
    assert float(gpu["telemetry_energy_j"]) == pytest.approx(675.0)
    assert gpu["telemetry_energy_method"] == "counter"
    assert float(cpu["telemetry_mean_cores_busy"]) == pytest.approx(1.125)
    assert cpu["telemetry_energy_j"] == "" and none["telemetry_mean_power_w"] == ""


@pytest.mark.django_db
def test_the_json_download_has_the_summary_and_the_readings(owner_client, mixed_run):
    response = owner_client.get(f"/runs/{mixed_run.code}.json")
    data = json.loads(b"".join(response.streaming_content))
    gpu = next(p for p in data["points"] if p["telemetry"]["source"] == "nvml")
    assert gpu["telemetry"]["gpus"][0]["energy_method"] == "counter"
    assert len(gpu["telemetry_samples"]) == 4


@pytest.mark.django_db
def test_the_nodes_dcgm_exporter_joins_the_plan_and_the_worker_holds_it_to_that():
    node = make_node(dcgm_exporter_url="http://gpu-a.lab:9400/metrics")
    benchmark = make_benchmark(node=node)
    assert benchmark.plan["launch"]["dcgm_exporter_url"] == "http://gpu-a.lab:9400/metrics"
    plan = plans.launchable_plan(benchmark, launch_style="serve")
    assert plan.launch.dcgm_exporter_url == "http://gpu-a.lab:9400/metrics"
    # A stored plan pointing the worker at another address is refused.
    benchmark.plan["launch"]["dcgm_exporter_url"] = "http://10.6.6.6:9400/metrics"
    with pytest.raises(plans.PlanRefused, match="dcgm_exporter_url"):
        plans.launchable_plan(benchmark, launch_style="serve")


@pytest.mark.django_db
def test_a_node_without_an_exporter_gives_a_plan_without_one():
    benchmark = make_benchmark(node=make_node(dcgm_exporter_url=""))
    assert benchmark.plan["launch"]["dcgm_exporter_url"] is None
