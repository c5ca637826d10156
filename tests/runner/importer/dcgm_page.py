"""A dcgm-exporter page served on 127.0.0.1, for AIPerf's --gpu-telemetry where no GPU exists.

The page is hand-written, not recorded from a GPU: the metric names, HELP and TYPE lines and
labels are the ones dcgm-exporter writes with its default counters (as in the page
tests/runner/measure/test_telemetry.py parses), for two H200s. Each scrape is the exporter's
next refresh: the gauges step through READINGS, and each GPU's energy counter
(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since boot) rises by its power times the seconds since
the last scrape, as a GPU's counter does. AIPerf skips a page identical to the last one, so a
page that never changed would give it a single reading.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

# Per GPU: (power W, GPU busy %) at successive refreshes, then round again.
READINGS = {
    0: [(412.5, 87.0), (455.25, 93.0), (498.0, 99.0), (430.75, 90.0)],
    1: [(398.0, 84.0), (441.5, 91.0), (487.25, 97.0), (420.0, 88.0)],
}
FB_USED_MIB = {0: 130412, 1: 130396}  # vLLM holds its KV cache: constant while serving
FB_FREE_MIB = {0: 12659, 1: 12675}
SM_CLOCK_MHZ = 1980
GPU_TEMP_C = {0: 61, 1: 58}
ENERGY_AT_BOOT_MJ = {0: 31035686671, 1: 29871204533}  # mJ, the counters at the first scrape
UUIDS = {
    0: "GPU-3f1a2b4c-5d6e-7f80-91a2-b3c4d5e6f708",
    1: "GPU-8e7d6c5b-4a39-2817-0f6e-5d4c3b2a1908",
}
PCI_BUS_IDS = {0: "00000000:18:00.0", 1: "00000000:2A:00.0"}
MODEL_NAME = "NVIDIA H200"
HOSTNAME = "gpu-node-7"

FAMILIES = [
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM frequency (in MHz)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter",
        "Total energy consumption since boot (in mJ).",
    ),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
]  # fmt: skip


class DcgmPage:
    """The page's state: which refresh comes next, and each GPU's energy counter."""

    def __init__(self) -> None:
        self.scrapes = 0
        self.energy_mj = {gpu: float(mj) for gpu, mj in ENERGY_AT_BOOT_MJ.items()}
        self._last: float | None = None
        self._lock = threading.Lock()

    def next_page(self) -> str:
        with self._lock:
            now = time.monotonic()
            step = self.scrapes % len(READINGS[0])
            if self._last is not None:
                for gpu, readings in READINGS.items():
                    self.energy_mj[gpu] += readings[step][0] * (now - self._last) * 1000.0
            self._last = now
            self.scrapes += 1
            return self._render(step)

    def _render(self, step: int) -> str:
        values: dict[str, Mapping[int, object]] = {
            "DCGM_FI_DEV_SM_CLOCK": dict.fromkeys(READINGS, SM_CLOCK_MHZ),
            "DCGM_FI_DEV_GPU_TEMP": GPU_TEMP_C,
            "DCGM_FI_DEV_POWER_USAGE": {g: f"{r[step][0]:.6f}" for g, r in READINGS.items()},
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": {
                g: int(mj) for g, mj in self.energy_mj.items()
            },
            "DCGM_FI_DEV_GPU_UTIL": {g: int(r[step][1]) for g, r in READINGS.items()},
            "DCGM_FI_DEV_XID_ERRORS": dict.fromkeys(READINGS, 0),
            "DCGM_FI_DEV_FB_FREE": FB_FREE_MIB,
            "DCGM_FI_DEV_FB_USED": FB_USED_MIB,
        }
        lines = []
        for name, kind, help_text in FAMILIES:
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            for gpu, value in values[name].items():
                labels = (
                    f'gpu="{gpu}",UUID="{UUIDS[gpu]}",pci_bus_id="{PCI_BUS_IDS[gpu]}",'
                    f'device="nvidia{gpu}",modelName="{MODEL_NAME}",Hostname="{HOSTNAME}"'
                )
                lines.append(f"{name}{{{labels}}} {value}")
        return "\n".join(lines) + "\n"


class DcgmExporter:
    """`with DcgmExporter() as url:` serves the page at url (http://127.0.0.1:PORT/metrics)."""

    def __init__(self) -> None:
        self.page = DcgmPage()
        page = self.page

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = page.next_page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/metrics"

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
