"""What the hardware did during a point: GPU telemetry and energy, or the CPU engine's CPU use."""

from __future__ import annotations

import importlib
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import httpx
from prometheus_client.parser import text_string_to_metric_families

from runner.engine.bounded_read import (
    METRICS_MAX_BYTES,
    AnswerOverBound,
    DeadlineTransport,
    read_bounded,
)
from runner.engine.command import replica_gpus
from runner.engine.process import RunningEngine
from runner.measure.sampler import usable
from runner.schema.engine_config import EngineConfig, EngineLaunch
from runner.schema.samples import (
    TelemetrySample,
    TelemetrySource,
)

NVML_MODULE = "pynvml"  # nvidia-ml-py, NVIDIA's own binding
PSUTIL_MODULE = "psutil"
SCRAPE_TIMEOUT_S = 2.0  # the most one reading of the page may take, its whole answer included
MILLI = 1000.0  # NVML reports mW and mJ; NVML and DCGM both count energy in mJ
MIB = 1024 * 1024

# dcgm-exporter's field -> TelemetrySample field, in the units dcgm-exporter documents.
DCGM_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "utilization_pct",  # %
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",  # MiB
    "DCGM_FI_DEV_POWER_USAGE": "power_w",  # W
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",  # MHz
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_j",  # mJ, converted below
}

NO_GPU_TELEMETRY = "no GPU telemetry was taken"


class TelemetryReadError(Exception):
    """One round of readings got nothing; the message says why in a few words."""


class Source(Protocol):
    name: TelemetrySource

    def read(self, clock: Callable[[], float]) -> list[TelemetrySample]:
        """One reading per device, each stamped by `clock` when it was taken."""
        ...

    def close(self) -> None: ...


# ---------------------------------------------------------------------------------------------
# Sources
# ---------------------------------------------------------------------------------------------


class NvmlSource:
    """The point's GPUs through NVML. A query a GPU does not support (no energy counter before
    Volta, no power reading on some boards) is None for that field."""

    name: TelemetrySource = "nvml"

    def __init__(self, nvml: Any, gpus: Mapping[int, int]) -> None:
        self._nvml = nvml
        # NVML's indices are the ones CUDA_VISIBLE_DEVICES and docker's --gpus name when CUDA
        # orders devices by PCI bus (CUDA_DEVICE_ORDER=PCI_BUS_ID), and on a node of one GPU
        # model, which is how serving nodes are built.
        self._handles = {
            gpu: (replica, nvml.nvmlDeviceGetHandleByIndex(gpu)) for gpu, replica in gpus.items()
        }
        self._queries = self._all_queries()

    def read(self, clock: Callable[[], float]) -> list[TelemetrySample]:
        samples = []
        for gpu, (replica, handle) in self._handles.items():
            values = {field: self._query(query, handle) for field, query in self._queries}
            # Stamped when the readings came back, as the queue sampler stamps a scrape.
            t = clock()
            if any(value is not None for value in values.values()):
                samples.append(TelemetrySample(t=t, replica=replica, gpu=gpu, **values))
        if not samples:
            raise TelemetryReadError("every NVML query failed")
        return samples

    def _all_queries(self) -> list[tuple[str, Callable[[Any], float]]]:
        """Each field's query, in NVML's units converted: power mW -> W (the board's draw,
        averaged over about a second on recent GPUs), energy mJ -> J, memory bytes -> MiB."""
        nvml = self._nvml
        return [
            ("utilization_pct", lambda h: float(nvml.nvmlDeviceGetUtilizationRates(h).gpu)),
            ("memory_used_mib", lambda h: nvml.nvmlDeviceGetMemoryInfo(h).used / MIB),
            ("power_w", lambda h: nvml.nvmlDeviceGetPowerUsage(h) / MILLI),
            ("sm_clock_mhz", lambda h: float(nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))),
            ("energy_j", lambda h: nvml.nvmlDeviceGetTotalEnergyConsumption(h) / MILLI),
        ]

    def _query(self, query: Callable[[Any], float], handle: Any) -> float | None:
        try:
            return query(handle)
        except self._nvml.NVMLError:
            return None

    def close(self) -> None:
        self._nvml.nvmlShutdown()


def parse_dcgm(text: str) -> dict[int, dict[str, float]]:
    """GPU index -> the fields of DCGM_FIELDS from one dcgm-exporter page (energy in J).

    prometheus_client's parser is the one the queue sampler uses; it names a counter's samples
    `..._total` whether the page did or not, so the suffix is dropped before matching. A GPU
    listed twice (dcgm-exporter's per-pod labels) keeps its first reading; a value that is no
    figure (NaN, an infinity, beyond runner.measure.sampler.VALUE_MAX) is left out. ValueError
    when the page is not Prometheus text.
    """
    readings: dict[int, dict[str, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            field = DCGM_FIELDS.get(sample.name.removesuffix("_total"))
            gpu = sample.labels.get("gpu", "")
            # NaN is valid Prometheus text ("no value"): a missing reading, not a figure.
            if field is None or not gpu.isdigit() or not usable(sample.value):
                continue
            value = sample.value / MILLI if field == "energy_j" else float(sample.value)
            readings.setdefault(int(gpu), {}).setdefault(field, value)
    return readings


class DcgmSource:
    """The node's dcgm-exporter page. gpus None: every GPU it lists (an attached server's GPUs,
    which this runner cannot name), all counted as replica 0."""

    name: TelemetrySource = "dcgm-exporter"

    def __init__(self, url: str, gpus: Mapping[int, int] | None) -> None:
        self._url = url
        self._gpus = gpus
        self._client = httpx.Client(timeout=SCRAPE_TIMEOUT_S, transport=DeadlineTransport())

    def read(self, clock: Callable[[], float]) -> list[TelemetrySample]:
        try:
            answer = read_bounded(self._client, self._url, max_bytes=METRICS_MAX_BYTES,
                                  total_s=SCRAPE_TIMEOUT_S)  # fmt: skip
        except AnswerOverBound as exc:
            raise TelemetryReadError(str(exc)) from None
        except httpx.TimeoutException:
            raise TelemetryReadError(f"no answer within {SCRAPE_TIMEOUT_S:g} s") from None
        except httpx.HTTPError as exc:
            raise TelemetryReadError(f"the request failed ({type(exc).__name__})") from None
        t = clock()
        if answer.status_code != 200:
            raise TelemetryReadError(f"HTTP {answer.status_code}")
        try:
            readings = parse_dcgm(answer.text)
        except ValueError:
            raise TelemetryReadError("not a Prometheus text page") from None
        samples = [
            TelemetrySample(t=t, replica=self._replica(gpu), gpu=gpu, **fields)
            for gpu, fields in sorted(readings.items())
            if self._gpus is None or gpu in self._gpus
        ]
        if not samples:
            raise TelemetryReadError("the page has no DCGM_FI_DEV_* readings of the point's GPUs")
        return samples

    def _replica(self, gpu: int) -> int:
        return 0 if self._gpus is None else self._gpus[gpu]

    def close(self) -> None:
        self._client.close()


class ProcessGroupCpu:
    """CPU seconds of each CPU engine's process group (the guard, vLLM's API server, its engine
    core and workers), as a running total.

    A process's user + system time is read while it lives and kept once it is gone, so the total
    never drops when a worker exits (what it used after its last reading, under one interval, is
    missed). Processes are keyed by pid and start time: a reused pid is another process. Reaped
    children's times (psutil's children_*) are left out: those children were counted directly.
    """

    name: TelemetrySource = "psutil"

    def __init__(self, psutil: Any, groups: Mapping[int, int]) -> None:
        self._psutil = psutil
        self._groups = dict(groups)  # replica -> process group id
        self._seconds: dict[int, dict[tuple[int, float], float]] = {r: {} for r in groups}
        self._processes: dict[int, Any] = {}

    def read(self, clock: Callable[[], float]) -> list[TelemetrySample]:
        pids = self._psutil.pids()
        samples = []
        for replica, group in self._groups.items():
            members = [pid for pid in pids if _process_group(pid) == group]
            for pid in members:
                self._read_process(replica, pid)
            t = clock()
            if members and self._seconds[replica]:
                total = sum(self._seconds[replica].values())
                samples.append(TelemetrySample(t=t, replica=replica, cpu_seconds=total))
        if not samples:
            raise TelemetryReadError("no process of the engine's process group could be read")
        return samples

    def _read_process(self, replica: int, pid: int) -> None:
        psutil = self._psutil
        try:
            process = self._processes.get(pid)
            if process is None or not process.is_running():  # new, or its pid was reused
                process = self._processes[pid] = psutil.Process(pid)
            times = process.cpu_times()
            key = (pid, process.create_time())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return
        self._seconds[replica][key] = times.user + times.system

    def close(self) -> None:
        self._processes.clear()


def _process_group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:  # gone since the pid list was read
        return None


# ---------------------------------------------------------------------------------------------
# The sampler
# ---------------------------------------------------------------------------------------------


class TelemetrySampler:
    """Reads `source` every interval_s in a background thread; absolute monotonic times.

    A failed round is skipped, as a failed scrape is: the point is measured either way. No
    source: nothing runs and `note` says why no telemetry was taken.
    """

    def __init__(
        self, source: Source | None, interval_s: float, unavailable: str | None = None
    ) -> None:
        self.source = source
        self.interval_s = interval_s
        self.unavailable = unavailable
        self.samples: list[TelemetrySample] = []
        self.failures = 0
        self.last_failure: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="telemetry-sampler", daemon=True)

    @property
    def source_name(self) -> TelemetrySource | None:
        return self.source.name if self.source is not None else None

    def start(self) -> None:
        if self.source is not None:
            self._thread.start()

    def stop(self) -> list[TelemetrySample]:
        """Stop after one last round (so the window's end is covered); readings by time."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        elif self.source is not None and self._thread.ident is None:
            self.source.close()  # never started: the thread did not close it
        return sorted(self.samples, key=lambda s: (s.t, s.replica, s.gpu or 0))

    def note(self) -> str | None:
        """A sentence for the point when nothing was read; None when anything was."""
        if self.source is None:
            return self.unavailable
        if self.samples:
            return None
        what = "CPU use" if self.source.name == "psutil" else "GPU telemetry"
        return (
            f"no {what} was taken: every {_SOURCE_WORDS[self.source.name]} reading failed "
            f"({self.last_failure or 'the sampler never ran'})"
        )

    def _run(self) -> None:
        assert self.source is not None
        try:
            while True:
                started = time.monotonic()
                self._read_once()
                if self._stop.is_set():
                    return
                self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))
        finally:
            self.source.close()

    def _read_once(self) -> None:
        assert self.source is not None
        try:
            self.samples.extend(self.source.read(time.monotonic))
        except TelemetryReadError as exc:
            self.failures += 1
            self.last_failure = str(exc)


_SOURCE_WORDS: dict[TelemetrySource, str] = {
    "nvml": "NVML",
    "dcgm-exporter": "dcgm-exporter",
    "psutil": "psutil CPU",
    "aiperf-dcgm": "AIPerf's dcgm-exporter scrape",
}


def open_telemetry(
    launch: EngineLaunch, config: EngineConfig, running: Sequence[RunningEngine],
    interval_s: float,
) -> TelemetrySampler:
    """The sampler for a point of `config` on `running`, with the first source that applies."""
    if launch.style == "cpu":
        return _cpu_sampler(running, interval_s)
    gpus = None
    reasons: list[str] = []
    if launch.style != "attach":
        # GPU index -> the replica using it, as the engines were started.
        gpus = {
            gpu: engine.replica
            for engine in running
            for gpu in replica_gpus(launch, config, engine.replica, None)
        }
        source, reason = _open_nvml(gpus)
        if source is not None:
            return TelemetrySampler(source, interval_s)
        reasons.append(reason)
    else:
        reasons.append(
            "the attached server's GPUs are on a host this runner cannot read with NVML"
        )
    if launch.dcgm_exporter_url:
        return TelemetrySampler(DcgmSource(launch.dcgm_exporter_url, gpus), interval_s)
    reasons.append("the plan names no dcgm-exporter URL (launch.dcgm_exporter_url)")
    return TelemetrySampler(None, interval_s, f"{NO_GPU_TELEMETRY}: {'; '.join(reasons)}")


def _open_nvml(gpus: Mapping[int, int]) -> tuple[NvmlSource | None, str]:
    try:
        nvml = importlib.import_module(NVML_MODULE)
    except ImportError:
        return None, "NVML is not available here (nvidia-ml-py is not installed)"
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        return None, f"NVML did not start ({exc})"
    try:
        return NvmlSource(nvml, gpus), ""
    except nvml.NVMLError as exc:
        nvml.nvmlShutdown()
        return None, f"NVML cannot read GPU(s) {sorted(gpus)} ({exc})"


def _cpu_sampler(running: Sequence[RunningEngine], interval_s: float) -> TelemetrySampler:
    groups = {e.replica: e.process_group for e in running if e.process_group is not None}
    absent = f"no CPU use was taken and {NO_GPU_TELEMETRY} (the CPU engine uses no GPU)"
    try:
        psutil = importlib.import_module(PSUTIL_MODULE)
    except ImportError:
        return TelemetrySampler(None, interval_s, f"{absent}: psutil is not installed")
    if not groups:
        return TelemetrySampler(None, interval_s, f"{absent}: no engine process of ours")
    return TelemetrySampler(ProcessGroupCpu(psutil, groups), interval_s)
