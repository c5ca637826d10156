"""docker-compose.yml cannot run here (no Docker engine), so its promises are checked as data."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def gpu_workers(services: dict) -> dict:
    return {name: s for name, s in services.items() if name.startswith("worker-gpu")}


def test_compose_has_the_database_broker_and_web():
    services = compose()["services"]
    assert {"postgres", "redis", "web"} <= set(services)
    assert "redis://redis:6379" in services["web"]["environment"]["CELERY_BROKER_URL"]
    assert services["web"]["environment"]["DATABASE_URL"].startswith("postgres://")


def test_each_gpu_worker_serves_its_own_queue_on_the_vllm_image_with_gpus():
    workers = gpu_workers(compose()["services"])
    assert workers
    queues = []
    for name, worker in workers.items():
        queue = worker["environment"]["HEADROOM_NODE_QUEUE"]
        queues.append(queue)
        command = " ".join(worker["command"].split())
        assert f"--queues {queue}" in command, name
        assert "--concurrency 1" in command and "--prefetch-multiplier 1" in command
        assert worker["build"]["args"]["BASE_IMAGE"].startswith("vllm/vllm-openai:")
        assert worker["ipc"] == "host"  # vLLM needs more shared memory than Docker's default
        devices = worker["deploy"]["resources"]["reservations"]["devices"]
        assert any("gpu" in device["capabilities"] for device in devices)
        assert worker["environment"]["HEADROOM_LAUNCH_STYLE"] in ("serve", "docker")
    assert len(queues) == len(set(queues)), "two workers on one queue would share GPUs"


def test_the_image_takes_its_base_from_a_build_argument():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE" in dockerfile and "FROM ${BASE_IMAGE}" in dockerfile
