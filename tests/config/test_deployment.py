"""docker-compose.yml cannot run here (no Docker engine), so its promises are checked as data;
the production environment it documents (.env.example) goes through `check --deploy` for real."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys

import pytest
import yaml

from tests.repository import ROOT

# The secrets .env.example leaves empty for the operator, and compose refuses to start without.
REQUIRED_SECRETS = ("SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD")
# Compose's interpolation forms that this file uses: ${NAME}, ${NAME:-default}, ${NAME:?error}.
VARIABLE = re.compile(r"\$\{(\w+)(?::([-?])([^}]*))?\}")


def compose_text() -> str:
    return (ROOT / "docker-compose.yml").read_text()


def compose() -> dict:
    return yaml.safe_load(compose_text())


def env_example() -> dict[str, str]:
    """.env.example as compose reads it: NAME=value lines, comments and blanks skipped."""
    lines = (ROOT / ".env.example").read_text().splitlines()
    pairs = (line.split("=", 1) for line in lines if line.strip() and not line.startswith("#"))
    return {name.strip(): value.strip() for name, value in pairs}


def interpolate(value: str, env: dict[str, str]) -> str:
    """What `docker compose` puts in a container for `value`, given the .env file `env`."""

    def one(match: re.Match) -> str:
        name, form, rest = match.groups()
        if env.get(name):
            return env[name]
        if form == "?":
            raise LookupError(f"compose refuses to start: {name} ({rest})")
        return rest if form == "-" else ""

    return VARIABLE.sub(one, value)


def production_env() -> dict[str, str]:
    """The web container's environment from .env.example, its empty secrets filled in."""
    dotenv = env_example()
    dotenv.update({name: secrets.token_hex(32) for name in REQUIRED_SECRETS})
    web = compose()["services"]["web"]["environment"]
    return {name: interpolate(str(value), dotenv) for name, value in web.items()}


def gpu_workers(services: dict) -> dict:
    return {name: s for name, s in services.items() if name.startswith("worker-gpu")}


def test_compose_has_the_database_broker_and_web():
    services = compose()["services"]
    assert {"postgres", "redis", "web"} <= set(services)
    env = production_env()
    assert re.fullmatch(r"redis://:[0-9a-f]{64}@redis:6379/0", env["CELERY_BROKER_URL"])
    assert re.fullmatch(r"postgres://headroom:[0-9a-f]{64}@postgres:5432/headroom",
                        env["DATABASE_URL"])


@pytest.mark.parametrize("service", ["postgres", "redis"])
def test_the_database_and_the_broker_publish_no_port_and_sit_on_an_internal_network(service):
    spec = compose()["services"][service]
    assert "ports" not in spec and "expose" not in spec
    networks = compose()["networks"]
    assert spec["networks"] and all(networks[name]["internal"] is True for name in spec["networks"])


def test_the_web_port_is_published_on_loopback_only_for_the_tls_proxy():
    assert compose()["services"]["web"]["ports"] == ["127.0.0.1:8000:8000"]


@pytest.mark.parametrize("name", REQUIRED_SECRETS)
def test_every_secret_is_required_from_the_environment_with_no_default(name):
    uses = [m for m in VARIABLE.finditer(compose_text()) if m.group(1) == name]
    assert uses and all(m.group(2) == "?" for m in uses), name


def test_compose_refuses_to_start_while_a_secret_is_missing():
    for name in REQUIRED_SECRETS:
        dotenv = {**env_example(), **{n: "x" for n in REQUIRED_SECRETS}, name: ""}
        with pytest.raises(LookupError, match=name):
            interpolate(compose_text(), dotenv)


def environments(data: dict) -> list[dict]:
    return [data["x-headroom-env"]] + [s.get("environment", {}) for s in data["services"].values()]


def test_no_password_is_written_in_the_compose_file():
    # A password or secret is only ever a ${VARIABLE}, never a literal, and its default (for the
    # optional mail password) can only be empty.
    for env in environments(compose()):
        for name, value in env.items():
            if any(word in name for word in ("PASSWORD", "SECRET", "AUTH")):
                match = VARIABLE.fullmatch(str(value))
                assert match and not (match.group(2) == "-" and match.group(3)), name
    # No literal password inside a URL either: user:password@ only as user:${...}@.
    assert not re.search(r"://[^:/@\s]*:[^$@\s][^@\s]*@", compose_text())


def test_redis_asks_for_the_password_the_broker_url_carries():
    redis = compose()["services"]["redis"]
    command = redis["command"]
    assert command[command.index("--requirepass") + 1] == "${REDIS_PASSWORD:?set REDIS_PASSWORD in .env}"
    password = "p" * 64
    dotenv = {**env_example(), **{n: "x" for n in REQUIRED_SECRETS}, "REDIS_PASSWORD": password}
    broker = interpolate(compose()["services"]["web"]["environment"]["CELERY_BROKER_URL"], dotenv)
    assert broker.startswith(f"redis://:{password}@redis:")
    # Its health check authenticates too (redis-cli reads REDISCLI_AUTH), or it would never pass.
    assert redis["environment"]["REDISCLI_AUTH"] == "${REDIS_PASSWORD:?set REDIS_PASSWORD in .env}"


def test_every_setting_in_env_example_reaches_the_containers():
    passed_on = {m.group(1) for m in VARIABLE.finditer(compose_text())}
    assert set(env_example()) <= passed_on


def run_deploy_check(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        check=False, cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={"PATH": os.environ["PATH"], "DJANGO_SETTINGS_MODULE": "config.settings", **env},
    )  # fmt: skip


def test_the_documented_production_environment_passes_the_deploy_checks():
    checked = run_deploy_check(production_env())
    assert checked.returncode == 0, checked.stderr
    assert "System check identified no issues" in checked.stdout


def test_the_deploy_checks_catch_a_deployment_without_https():
    # The check above could pass by checking nothing; over plain HTTP it must complain.
    checked = run_deploy_check({**production_env(), "HEADROOM_HTTPS": "0"})
    assert checked.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in checked.stderr


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
