"""GPU telemetry and energy per point (runner/measure/telemetry.py), on recorded readings.

The NVML readings go through NvmlSource on a stand-in for nvidia-ml-py that answers the
recorded values in NVML's own units (mW, mJ, bytes); the dcgm-exporter pages are the exporter's
text format, served over HTTP. Every expected figure is worked out by hand in the comments:
readings are joined by straight lines, the window's edges interpolated between the readings on
either side.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import psutil
import pydantic
import pytest

from runner.engine.process import RunningEngine
from runner.measure import telemetry as telemetry_module
from runner.measure.telemetry import (
    DcgmSource,
    NvmlSource,
    ProcessGroupCpu,
    TelemetryReadError,
    TelemetrySampler,
    open_telemetry,
    parse_dcgm,
)
from runner.measure.telemetry_summary import record_telemetry, summarize_telemetry
from runner.schema.engine_config import EngineConfig, EngineLaunch
from runner.schema.result import EngineInfo, PointResult, Window
from runner.schema.samples import TelemetrySample
from tests import factories
from tests.hostile_server import HostileServer, drip_body, drip_headers, endless

MIB = 1024 * 1024
WINDOW = Window(start=0.0, end=2.0)
T0 = 100.0  # the point's t0 on the monotonic clock; readings are rebased on it

# Recorded NVML readings of one GPU, in NVML's units, around a 2 s window (t rebased on t0).
NVML_READINGS = [
    # t,   util %, memory bytes,   power mW, SM MHz, energy mJ
    (-0.5, 0, 40960 * MIB, 100_000, 1980, 1_000_000_000),
    (0.5, 80, 41984 * MIB, 300_000, 1980, 1_000_200_000),
    (1.5, 100, 41984 * MIB, 500_000, 1980, 1_000_600_000),
    (2.5, 20, 40960 * MIB, 900_000, 1980, 1_000_950_000),
]


class NVMLError(Exception):
    pass


class RecordedNvml:
    """Answers NVML queries with recorded readings, one row per GPU per read() round."""

    NVML_CLOCK_SM = 1
    NVMLError = NVMLError

    def __init__(self, readings: dict[int, list[tuple]], *, energy: bool = True) -> None:
        self.readings = readings
        self.energy = energy
        self.round = 0
        self.started = 0

    def row(self, gpu: int) -> tuple:
        return self.readings[gpu][self.round]

    def nvmlInit(self) -> None:
        self.started += 1

    def nvmlShutdown(self) -> None:
        self.started -= 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if index not in self.readings:
            raise NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetUtilizationRates(self, gpu: int):
        return types.SimpleNamespace(gpu=self.row(gpu)[1], memory=0)

    def nvmlDeviceGetMemoryInfo(self, gpu: int):
        return types.SimpleNamespace(used=self.row(gpu)[2])

    def nvmlDeviceGetPowerUsage(self, gpu: int) -> int:
        return self.row(gpu)[3]

    def nvmlDeviceGetClockInfo(self, gpu: int, clock: int) -> int:
        assert clock == self.NVML_CLOCK_SM
        return self.row(gpu)[4]

    def nvmlDeviceGetTotalEnergyConsumption(self, gpu: int) -> int:
        if not self.energy:
            raise NVMLError("Not Supported")  # GPUs before Volta have no energy counter
        return self.row(gpu)[5]


def read_all(source, times: list[float]) -> list[TelemetrySample]:
    """Every round of `source`, stamped at t0 + times[i], rebased on t0 as the sweep does."""
    samples = []
    for i, t in enumerate(times):
        if isinstance(source, NvmlSource):
            source._nvml.round = i
        samples += source.read(lambda t=t: T0 + t)
    return [s.model_copy(update={"t": s.t - T0}) for s in samples]


def nvml_samples(*, energy: bool = True, gpus: dict[int, int] | None = None) -> list[TelemetrySample]:
    gpus = gpus or {0: 0}
    nvml = RecordedNvml({gpu: NVML_READINGS for gpu in gpus}, energy=energy)
    return read_all(NvmlSource(nvml, gpus), [row[0] for row in NVML_READINGS])


def test_nvml_readings_are_converted_to_watts_joules_and_mib():
    first = nvml_samples()[0]
    assert first == TelemetrySample(t=-0.5, gpu=0, utilization_pct=0.0, memory_used_mib=40960.0,
                                    power_w=100.0, sm_clock_mhz=1980.0, energy_j=1_000_000.0)


def test_energy_is_the_counter_increase_over_exactly_the_window():
    summary = summarize_telemetry(nvml_samples(), WINDOW, 1350, source="nvml")
    gpu = summary.gpus[0]
    # Counter at 0.0: halfway from 1,000,000 J to 1,000,200 J = 1,000,100; at 2.0: halfway from
    # 1,000,600 to 1,000,950 = 1,000,775. 775 - 100 = 675 J; 1350 tokens / 675 J = 2 tokens/J.
    assert gpu.energy_method == "counter"
    assert gpu.energy_j == pytest.approx(675.0)
    assert summary.energy_j == pytest.approx(675.0)
    assert summary.joules_per_output_token == pytest.approx(0.5)
    assert summary.output_tokens_per_joule == pytest.approx(2.0)


def test_gauges_are_time_weighted_over_the_window_and_peaks_come_from_inside_it():
    gpu = summarize_telemetry(nvml_samples(), WINDOW, 1350, source="nvml").gpus[0]
    # Utilization: 40 at 0.0 (between 0 and 80), 80, 100, 60 at 2.0 (between 100 and 20):
    # (40+80)/2*0.5 + (80+100)/2*1 + (100+60)/2*0.5 = 30 + 90 + 40 = 160 over 2 s = 80%.
    assert gpu.mean_utilization_pct == pytest.approx(80.0)
    # Power: 200 W at 0.0, 300, 500, 700 at 2.0: 125 + 400 + 300 = 825 J over 2 s = 412.5 W.
    assert gpu.mean_power_w == pytest.approx(412.5)
    # The 900 W reading at 2.5 s is after the window: the peak inside it is 500 W.
    assert gpu.peak_power_w == 500.0
    assert gpu.peak_memory_used_mib == 41984.0
    assert gpu.mean_sm_clock_mhz == pytest.approx(1980.0)
    assert gpu.samples == 2


def test_a_gpu_without_an_energy_counter_integrates_its_power_over_the_window():
    summary = summarize_telemetry(nvml_samples(energy=False), WINDOW, 1350, source="nvml")
    gpu = summary.gpus[0]
    # The trapezoid integral of the power above: 825 J (the counter said 675 J).
    assert gpu.energy_method == "power-integral"
    assert gpu.energy_j == pytest.approx(825.0)
    assert summary.energy_method == "power-integral"
    assert summary.joules_per_output_token == pytest.approx(825.0 / 1350)


def test_a_node_adds_its_gpus_energy_and_names_mixed_methods():
    counter = nvml_samples(gpus={0: 0})
    integral = [s.model_copy(update={"gpu": 1, "replica": 1})
                for s in nvml_samples(energy=False, gpus={1: 1})]
    summary = summarize_telemetry(counter + integral, WINDOW, 3000, source="nvml")
    assert [(g.gpu, g.replica, g.energy_method) for g in summary.gpus] == [
        (0, 0, "counter"), (1, 1, "power-integral")]
    assert summary.energy_j == pytest.approx(675.0 + 825.0)
    assert summary.energy_method == "mixed"
    assert summary.joules_per_output_token == pytest.approx(1500.0 / 3000)
    assert summary.mean_power_w == pytest.approx(2 * 412.5)  # the node's draw: summed
    assert summary.peak_power_w == 500.0  # the highest GPU's peak, not a sum of peaks
    assert summary.mean_utilization_pct == pytest.approx(80.0)


def test_a_counter_that_goes_backwards_is_refused_not_read_as_negative_energy():
    samples = nvml_samples()
    reset = [s.model_copy(update={"energy_j": 5.0}) if s.t == 1.5 else s for s in samples]
    summary = summarize_telemetry(reset, WINDOW, 1350, source="nvml")
    gpu = summary.gpus[0]
    assert gpu.energy_j is None and gpu.energy_method is None
    assert "went backwards" in gpu.energy_note and "reset or a wrap" in gpu.energy_note
    assert summary.energy_j is None and summary.joules_per_output_token is None
    assert gpu.energy_note in summary.notes
    # The gauges are still read.
    assert gpu.mean_utilization_pct == pytest.approx(80.0)
    # The reading after the reset is back above the one before it, but the reset reading is
    # below the one before that too: not two readings out of order, whichever edge it is read from.
    late = summarize_telemetry(reset, Window(start=0.5, end=2.0), 1350, source="nvml")
    assert late.gpus[0].energy_j is None


def test_two_counter_readings_stamped_out_of_order_are_read_in_order():
    # A scraper with two fetches in flight stamped the later reading first: 0.5 s read the
    # counter at 1.5 s's value and 1.5 s at 0.5 s's. Swapped back, the increase is as before.
    samples = nvml_samples()
    energy = {s.t: s.energy_j for s in samples}
    swapped = [s.model_copy(update={"energy_j": energy[{0.5: 1.5, 1.5: 0.5}[s.t]]})
               if s.t in (0.5, 1.5) else s for s in samples]
    assert swapped != samples
    gpu = summarize_telemetry(swapped, WINDOW, 1350, source="nvml").gpus[0]
    assert (gpu.energy_j, gpu.energy_note) == (pytest.approx(675.0), None)


def test_a_counter_reset_outside_the_window_does_not_matter():
    samples = nvml_samples() + [TelemetrySample(t=3.5, gpu=0, energy_j=1.0, power_w=100.0)]
    assert summarize_telemetry(samples, WINDOW, 1350, source="nvml").gpus[0].energy_j == \
        pytest.approx(675.0)


def test_readings_that_do_not_reach_the_window_edges_give_no_energy_figure():
    late_start = [s for s in nvml_samples() if s.t > 0]  # first reading at 0.5 s
    gpu = summarize_telemetry(late_start, WINDOW, 1350, source="nvml").gpus[0]
    assert gpu.energy_j is None
    assert "not the whole window" in gpu.energy_note
    # The mean is over the covered 0.5-2.0 s: (80+100)/2*1 + (100+60)/2*0.5 = 130 / 1.5 s.
    assert gpu.mean_utilization_pct == pytest.approx(130 / 1.5)


def test_an_energy_counter_that_did_not_move_is_no_figure():
    flat = [s.model_copy(update={"energy_j": 42.0}) for s in nvml_samples()]
    summary = summarize_telemetry(flat, WINDOW, 1350, source="nvml")
    assert summary.energy_j is None and summary.joules_per_output_token is None
    assert "no energy used" in summary.gpus[0].energy_note


def test_no_output_tokens_gives_energy_but_no_joules_per_token():
    summary = summarize_telemetry(nvml_samples(), WINDOW, 0, source="nvml")
    assert summary.energy_j == pytest.approx(675.0)
    assert summary.joules_per_output_token is None and summary.output_tokens_per_joule is None


def test_a_point_without_a_window_has_no_figures():
    summary = summarize_telemetry(nvml_samples(), None, 1350, source="nvml")
    assert summary.gpus == [] and summary.energy_j is None
    assert summary.samples == 4 and "no client window" in summary.notes[0]


# dcgm-exporter pages: GPU 0 and GPU 1; the point uses GPU 1 only.
DCGM_PAGE = """# HELP DCGM_FI_DEV_SM_CLOCK SM frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 1980
DCGM_FI_DEV_SM_CLOCK{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} 1755
# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).
# TYPE DCGM_FI_DEV_GPU_TEMP gauge
DCGM_FI_DEV_GPU_TEMP{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 41
DCGM_FI_DEV_GPU_TEMP{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} 57
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 75.123000
DCGM_FI_DEV_POWER_USAGE{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} {power}
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 31035686671
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} {energy}
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 0
DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} {util}
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H200",Hostname="gpu-a"}} 0
DCGM_FI_DEV_FB_USED{{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H200",Hostname="gpu-a"}} 130412
"""
# GPU 1 at t = -0.5, 1.0 and 2.5 s: 250, 350, 450 W; 5,000, 5,525, 6,050 J; 10, 90, 50 %.
DCGM_PAGES = [
    DCGM_PAGE.format(power="250.000000", energy="5000000", util="10"),
    DCGM_PAGE.format(power="350.000000", energy="5525000", util="90"),
    DCGM_PAGE.format(power="450.000000", energy="6050000", util="50"),
]
DCGM_TIMES = [-0.5, 1.0, 2.5]


class Pages:
    """An HTTP server answering GET /metrics with each page in turn (the last one then on)."""

    def __init__(self, pages: list[str], status: int = 200) -> None:
        self.pages, self.status, self.served = pages, status, 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                page = owner.pages[min(owner.served, len(owner.pages) - 1)]
                owner.served += 1
                body = page.encode()
                self.send_response(owner.status)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def dcgm() -> Iterator[Pages]:
    pages = Pages(DCGM_PAGES)
    yield pages
    pages.close()


def test_a_dcgm_exporter_page_is_read_per_gpu_in_watts_joules_and_mib():
    readings = parse_dcgm(DCGM_PAGES[0])
    assert readings[1] == {"sm_clock_mhz": 1755.0, "power_w": 250.0, "energy_j": 5000.0,
                           "utilization_pct": 10.0, "memory_used_mib": 130412.0}
    assert readings[0]["energy_j"] == pytest.approx(31035686.671)


def test_a_nan_on_a_dcgm_page_is_a_missing_reading_not_a_figure():
    page = DCGM_PAGE.format(power="NaN", energy="5000000", util="10")
    assert "power_w" not in parse_dcgm(page)[1]


def test_dcgm_energy_and_gauges_over_the_window_for_the_points_gpu_only(dcgm):
    source = DcgmSource(dcgm.url, {1: 0})
    samples = read_all(source, DCGM_TIMES)
    source.close()
    assert {s.gpu for s in samples} == {1}
    summary = summarize_telemetry(samples, WINDOW, 1400, source="dcgm-exporter")
    gpu = summary.gpus[0]
    # Counter at 0.0: 5,000 + 525 x (0.5/1.5) = 5,175 J; at 2.0: 5,525 + 525 x (1/1.5) =
    # 5,875 J. 700 J over 1400 tokens = 0.5 J/token.
    assert gpu.energy_method == "counter" and gpu.energy_j == pytest.approx(700.0)
    assert summary.joules_per_output_token == pytest.approx(0.5)
    # Utilization 36.67 at 0.0, 90 at 1.0, 63.33 at 2.0: 63.33 + 76.67 = 140 over 2 s.
    assert gpu.mean_utilization_pct == pytest.approx(70.0)
    # Power 283.33, 350, 416.67 W: 700 J over 2 s; the one reading inside the window is 350 W.
    assert gpu.mean_power_w == pytest.approx(350.0)
    assert gpu.peak_power_w == 350.0
    assert gpu.mean_memory_used_mib == pytest.approx(130412.0)


def test_a_dcgm_page_without_the_points_gpu_is_a_failed_reading(dcgm):
    source = DcgmSource(dcgm.url, {7: 0})
    with pytest.raises(TelemetryReadError, match="point's GPUs"):
        source.read(time.monotonic)
    source.close()


def test_the_sampler_thread_reads_until_stopped_and_ends_with_one_more_round(dcgm):
    sampler = TelemetrySampler(DcgmSource(dcgm.url, {1: 0}), interval_s=0.05)
    before = time.monotonic()
    sampler.start()
    time.sleep(0.3)
    samples = sampler.stop()
    assert len(samples) >= 2 and all(s.gpu == 1 for s in samples)  # the first and the last
    assert samples == sorted(samples, key=lambda s: s.t) and samples[0].t >= before
    assert sampler.note() is None and sampler.source_name == "dcgm-exporter"


def test_an_exporter_that_never_answers_says_no_gpu_telemetry_was_taken():
    pages = Pages(["oops"], status=503)
    try:
        sampler = TelemetrySampler(DcgmSource(pages.url, {0: 0}), interval_s=0.05)
        sampler.start()
        time.sleep(0.15)
        assert sampler.stop() == []
    finally:
        pages.close()
    assert sampler.note() == (
        "no GPU telemetry was taken: every dcgm-exporter reading failed (HTTP 503)")


@pytest.mark.parametrize("answer, failure", [
    (endless(b'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 87\n'),
     "the answer to GET /metrics is over 64 KB, the most read from one answer"),
    (drip_body(0.05, 10.0),
     "the answer to GET /metrics did not arrive in full within 0.5 s, the longest one answer "
     "may take"),
    (drip_headers(0.05, 10.0), "no answer within 0.5 s"),
], ids=["endless page", "body a byte at a time", "headers a byte at a time"])
def test_an_exporter_page_too_large_or_too_slow_is_a_failed_reading_naming_the_bound(
    monkeypatch, answer, failure
):
    monkeypatch.setattr(telemetry_module, "METRICS_MAX_BYTES", 64 * 1024)
    monkeypatch.setattr(telemetry_module, "SCRAPE_TIMEOUT_S", 0.5)
    with HostileServer({"/metrics": answer}) as server:
        source = DcgmSource(server.base_url + "/metrics", None)
        started = time.monotonic()
        with pytest.raises(TelemetryReadError) as raised:
            source.read(time.monotonic)
        took = time.monotonic() - started
        source.close()
    assert str(raised.value).startswith(failure)
    assert took < 1.5  # cut off at the bound, not at the 10 s drip's end


def engine(replica: int = 0, style: str = "serve") -> RunningEngine:
    return RunningEngine(replica=replica, base_url="http://127.0.0.1:1", served_model="m",
                         info=EngineInfo(launch_style=style))


@pytest.fixture
def no_nvml(monkeypatch):
    monkeypatch.setattr(telemetry_module, "NVML_MODULE", "headroom_test_no_such_module")


def test_without_nvml_or_an_exporter_the_point_says_no_gpu_telemetry_was_taken(no_nvml):
    sampler = open_telemetry(EngineLaunch(style="serve"), EngineConfig(), [engine()], 0.5)
    sampler.start()
    assert sampler.stop() == [] and sampler.source is None
    point = factories.point_result(window=WINDOW)
    record_telemetry(point, sampler, [], t0=T0)
    summary = point.telemetry
    assert summary.source is None and summary.gpus == [] and summary.cpu == []
    assert summary.energy_j is None and summary.joules_per_output_token is None
    assert summary.notes == [
        "no GPU telemetry was taken: NVML is not available here (nvidia-ml-py is not "
        "installed); the plan names no dcgm-exporter URL (launch.dcgm_exporter_url)"
    ]


def test_the_readings_are_rebased_on_the_points_t0_and_summarized_with_its_tokens():
    point = factories.point_result(window=WINDOW, metrics=factories.metrics(
        total_output_tokens=1350))
    raw = [s.model_copy(update={"t": s.t + T0}) for s in nvml_samples()]
    record_telemetry(point, TelemetrySampler(None, 0.5), raw, t0=T0)
    assert [s.t for s in point.telemetry_samples] == [-0.5, 0.5, 1.5, 2.5]
    assert point.telemetry.joules_per_output_token == pytest.approx(0.5)


def test_without_nvml_the_nodes_exporter_is_read(no_nvml):
    launch = EngineLaunch(style="docker", image="vllm/vllm-openai:v0.11.0", gpus=[4, 5],
                          dcgm_exporter_url="http://gpu-a:9400/metrics")
    sampler = open_telemetry(launch, EngineConfig(), [engine(0), engine(1)], 0.5)
    assert isinstance(sampler.source, DcgmSource)
    assert sampler.source._gpus == {4: 0, 5: 1}
    sampler.stop()


def test_nvml_reads_exactly_the_gpus_of_the_points_replicas(monkeypatch):
    nvml = RecordedNvml({gpu: NVML_READINGS for gpu in range(8)})
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    launch = EngineLaunch(style="serve", gpus=[2, 3, 4, 5, 6, 7],
                          dcgm_exporter_url="http://gpu-a:9400/metrics")
    sampler = open_telemetry(launch, EngineConfig(tensor_parallel_size=2),
                             [engine(0), engine(1)], 0.5)
    assert isinstance(sampler.source, NvmlSource)  # NVML first, the exporter only without it
    assert {gpu: replica for gpu, (replica, _) in sampler.source._handles.items()} == {
        2: 0, 3: 0, 4: 1, 5: 1}
    sampler.start()
    samples = sampler.stop()
    assert {s.gpu for s in samples} == {2, 3, 4, 5}
    assert nvml.started == 0  # NVML shut down again when the sampler stopped


def test_nvml_that_does_not_start_is_said_plainly(monkeypatch):
    class Broken(RecordedNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("Driver Not Loaded")

    monkeypatch.setitem(sys.modules, "pynvml", Broken({}))
    sampler = open_telemetry(EngineLaunch(style="serve"), EngineConfig(), [engine()], 0.5)
    assert sampler.source is None
    assert sampler.note().startswith("no GPU telemetry was taken: NVML did not start "
                                     "(Driver Not Loaded)")


def test_an_attached_server_is_never_read_through_this_hosts_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", RecordedNvml({0: NVML_READINGS}))
    launch = EngineLaunch(style="attach", base_url="http://10.0.0.5:8000")
    sampler = open_telemetry(launch, EngineConfig(), [engine(style="attach")], 0.5)
    assert sampler.source is None
    assert "attached server's GPUs are on a host this runner cannot read" in sampler.note()
    with_exporter = launch.model_copy(update={"dcgm_exporter_url": "http://10.0.0.5:9400/metrics"})
    exporter = open_telemetry(with_exporter, EngineConfig(), [engine(style="attach")], 0.5)
    assert isinstance(exporter.source, DcgmSource) and exporter.source._gpus is None
    exporter.stop()


def test_the_cpu_engine_is_read_as_cpu_and_never_as_a_gpu(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", RecordedNvml({0: NVML_READINGS}))
    cpu = engine(style="cpu")
    cpu._process = types.SimpleNamespace(pid=os.getpgid(0))
    sampler = open_telemetry(EngineLaunch(style="cpu"), EngineConfig(), [cpu], 0.5)
    assert isinstance(sampler.source, ProcessGroupCpu) and sampler.source_name == "psutil"
    sampler.stop()


def test_cpu_seconds_and_cores_busy_over_the_window():
    readings = [(-0.5, 10.0), (0.5, 10.5), (1.5, 12.0), (2.5, 13.0)]
    samples = [TelemetrySample(t=t, cpu_seconds=s) for t, s in readings]
    summary = summarize_telemetry(samples, WINDOW, 1350, source="psutil")
    # 10.25 CPU-s at 0.0, 12.5 at 2.0: 2.25 CPU-s over 2 s = 1.125 cores busy.
    assert summary.cpu[0].cpu_seconds == pytest.approx(2.25)
    assert summary.mean_cores_busy == pytest.approx(1.125)
    assert summary.gpus == [] and summary.energy_j is None
    assert summary.joules_per_output_token is None
    assert any(n.startswith("CPU engine:") and "no GPU telemetry was taken" in n
               for n in summary.notes)


def test_a_process_groups_cpu_time_keeps_what_an_exited_process_used():
    # A group leader that starts a child burning 0.3 CPU-s and idling a moment before it exits
    # (so a reading sees all of it while it lives), then sleeps.
    burner = ("import time\nend = time.process_time() + 0.3\n"
              "while time.process_time() < end: pass\ntime.sleep(0.5)\n")
    leader = subprocess.Popen(
        [sys.executable, "-c",
         f"import subprocess, sys, time\nsubprocess.run([sys.executable, '-c', {burner!r}])\n"
         "time.sleep(30)\n"],
        process_group=0,
    )
    try:
        source = ProcessGroupCpu(psutil, {0: leader.pid})
        totals, child_seen = [], False
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            totals.append(source.read(time.monotonic)[0].cpu_seconds)
            children = psutil.Process(leader.pid).children()
            if child_seen and not children:
                break
            child_seen = child_seen or bool(children)
            time.sleep(0.05)
        after_exit = source.read(time.monotonic)[0].cpu_seconds
    finally:
        leader.kill()
        leader.wait()
    assert child_seen and totals == sorted(totals)  # a running total never drops
    # The child's 0.3 CPU-s are kept after it exited (to a clock tick).
    assert after_exit >= 0.29


def test_a_group_with_no_process_left_is_a_failed_reading():
    source = ProcessGroupCpu(psutil, {0: 2**22 + 12345})  # no such process group
    with pytest.raises(TelemetryReadError, match="process group"):
        source.read(time.monotonic)


def test_a_file_written_before_telemetry_existed_reads_as_none_taken():
    point = factories.point_result()
    data = point.model_dump(mode="json")
    del data["telemetry"], data["telemetry_samples"]
    old = PointResult.model_validate(data)
    assert old.telemetry.source is None and old.telemetry_samples == []


@pytest.mark.parametrize("url", [
    "http://admin:secret@gpu-a:9400/metrics",
    "ftp://gpu-a/metrics",
    "gpu-a:9400/metrics",
    "http:///metrics",
])
def test_a_dcgm_address_must_be_plain_http_without_credentials(url):
    with pytest.raises(pydantic.ValidationError, match="dcgm_exporter_url") as caught:
        EngineLaunch(style="serve", dcgm_exporter_url=url)
    # What the dashboard shows of it (benchmarks.launch.plans.pydantic_message) never repeats the
    # URL.
    assert all("secret" not in error["msg"] for error in caught.value.errors())
