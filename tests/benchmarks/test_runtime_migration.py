"""Runs imported before runtimes named their engine stop claiming vLLM after the upgrade."""

from __future__ import annotations

import pytest

from tests.migrations import migrate

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("benchmarks", "0006_reference_provenance")]
AFTER = [("benchmarks", "0007_runtime_engine")]


@pytest.fixture
def old_schema(newest_schema_after):
    """The apps at BEFORE; afterwards the schema is migrated back to the newest state."""
    return migrate(BEFORE)


def old_import(apps, name: str, backend: str, runtime):
    """A run imported by the old importer: runtime "vllm" from the file's version alone."""
    Workload, Benchmark, Point = (
        apps.get_model("benchmarks", model) for model in ("Workload", "Benchmark", "Point")
    )
    benchmark = Benchmark.objects.create(
        name=name, plan={}, workload=Workload.objects.create(name=name), source="imported",
        runtime=runtime,
    )
    provenance = {
        "hardware": {"host": "unknown (not recorded by vllm bench)"},
        "engine": {"launch_style": "attach", "version": runtime.version},
        "checkpoint": {"model": "m"},
        "client_version": f"vllm bench serve ({backend})",
        "started_at": "unknown",
    }
    Point.objects.create(
        benchmark=benchmark, key=name, source="vllm-bench-import", engine_label="defaults",
        engine_config={}, load_label="burst 1", load={}, offered_concurrency=1, workload={},
        duration=1, completed=1, failed=0, short_responses=0, valid=True, total_input_tokens=1,
        total_output_tokens=1, request_throughput=1, output_throughput=1,
        total_token_throughput=2, provenance=provenance,
    )
    return benchmark


def test_old_imports_name_the_engine_their_backend_named_or_none(old_schema):
    Runtime = old_schema.get_model("benchmarks", "Runtime")
    shared = Runtime.objects.create(engine="vllm", version="0.18.0")
    openai = old_import(old_schema, "openai", "openai-chat", shared)
    trtllm = old_import(old_schema, "trtllm", "tensorrt-llm", shared)
    vllm = old_import(old_schema, "vllm", "vllm", shared)
    Runtime.objects.create(engine="TGI", version="2.0")

    apps = migrate(AFTER)
    Runtime, Benchmark, Point = (
        apps.get_model("benchmarks", model) for model in ("Runtime", "Benchmark", "Point")
    )
    assert Benchmark.objects.get(pk=openai.pk).runtime is None
    assert Point.objects.get(benchmark=openai.pk).provenance["engine"]["name"] is None
    moved = Benchmark.objects.get(pk=trtllm.pk).runtime
    assert (moved.engine, moved.version) == ("tensorrt-llm", "0.18.0")
    assert Benchmark.objects.get(pk=vllm.pk).runtime_id == shared.pk
    assert Point.objects.get(benchmark=vllm.pk).provenance["engine"]["name"] == "vllm"
    # A row outside the list keeps its name as another engine's.
    tgi = Runtime.objects.get(version="2.0")
    assert (tgi.engine, tgi.other_engine) == ("other", "tgi")
