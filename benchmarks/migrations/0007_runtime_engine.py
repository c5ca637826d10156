# Runtimes name their engine from a choice list (vllm, tensorrt-llm, sglang, other + its name),
# and runs imported before this stop claiming vLLM when their file did not say so.

from django.db import migrations, models

KNOWN_ENGINES = ("vllm", "tensorrt-llm", "sglang")
# runner.importer.vllm_document.BACKEND_ENGINES as of this migration (copied: a migration must not change
# when the importer does). Backends not listed ("openai", "openai-chat") name no engine.
BACKEND_ENGINES = {
    "vllm": "vllm",
    "vllm-pooling": "vllm",
    "vllm-rerank": "vllm",
    "tensorrt-llm": "tensorrt-llm",
    "sglang": "sglang",
    "tgi": "tgi",
    "lmdeploy": "lmdeploy",
    "deepspeed-mii": "deepspeed-mii",
    "scalellm": "scalellm",
    "llama.cpp": "llama.cpp",
}
IMPORT_CLIENT_PREFIX = "vllm bench serve ("


def _engine_fields(name):
    if name in KNOWN_ENGINES:
        return {"engine": name, "other_engine": ""}
    return {"engine": "other", "other_engine": name}


def _imported_engine(provenance):
    """The engine an old import's file named through its backend; None when it named none."""
    client = provenance.get("client_version") or ""
    backend = client.removeprefix(IMPORT_CLIENT_PREFIX).removesuffix(")")
    return BACKEND_ENGINES.get(backend) if client.startswith(IMPORT_CLIENT_PREFIX) else None


def engines_from_the_list(apps, schema_editor):
    Runtime = apps.get_model("benchmarks", "Runtime")
    for runtime in Runtime.objects.exclude(engine__in=KNOWN_ENGINES):
        fields = _engine_fields(runtime.engine.strip().lower() or "unknown")
        Runtime.objects.filter(pk=runtime.pk).update(**fields)


def imports_name_their_engine(apps, schema_editor):
    """Runs last: rows changed here must not hold up a later ALTER TABLE in this migration."""
    Runtime = apps.get_model("benchmarks", "Runtime")
    Point = apps.get_model("benchmarks", "Point")
    Benchmark = apps.get_model("benchmarks", "Benchmark")
    # An old import's provenance has no engine name, which reads back as the runner's "vllm".
    engines = {}
    imported = Point.objects.filter(source="vllm-bench-import").exclude(provenance=None)
    for point in imported.only("pk", "benchmark_id", "provenance"):
        engine = point.provenance.get("engine") or {}
        if "name" in engine:
            continue
        name = _imported_engine(point.provenance)
        point.provenance = {**point.provenance, "engine": {**engine, "name": name}}
        point.save(update_fields=["provenance"])
        engines.setdefault(point.benchmark_id, name)
    # The run's runtime row was made as "vllm" from the file's version alone.
    for benchmark in Benchmark.objects.filter(pk__in=engines, runtime__engine="vllm"):
        name = engines[benchmark.pk]
        if name == "vllm":
            continue
        runtime = None
        if name is not None:
            old = benchmark.runtime
            runtime, _ = Runtime.objects.get_or_create(
                version=old.version, image=old.image, digest=old.digest, **_engine_fields(name)
            )
        Benchmark.objects.filter(pk=benchmark.pk).update(runtime=runtime)


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks", "0006_reference_provenance"),
    ]

    operations = [
        migrations.RemoveConstraint(
            model_name="runtime",
            name="runtime_unique",
        ),
        migrations.AddField(
            model_name="runtime",
            name="other_engine",
            field=models.CharField(
                blank=True,
                help_text="the engine's name when engine is other, e.g. tgi",
                max_length=50,
            ),
        ),
        migrations.AlterField(
            model_name="runtime",
            name="engine",
            field=models.CharField(
                choices=[
                    ("vllm", "vLLM"),
                    ("tensorrt-llm", "TensorRT-LLM"),
                    ("sglang", "SGLang"),
                    ("other", "Another engine (named)"),
                ],
                default="vllm",
                max_length=50,
            ),
        ),
        migrations.RunPython(engines_from_the_list, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="runtime",
            constraint=models.UniqueConstraint(
                fields=("engine", "other_engine", "version", "image", "digest"),
                name="runtime_unique",
            ),
        ),
        migrations.AddConstraint(
            model_name="runtime",
            constraint=models.CheckConstraint(
                condition=models.Q(("engine__in", ["vllm", "tensorrt-llm", "sglang", "other"])),
                name="runtime_engine_known",
            ),
        ),
        migrations.AddConstraint(
            model_name="runtime",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("engine", "other"), models.Q(("other_engine", ""), _negated=True)),
                    models.Q(models.Q(("engine", "other"), _negated=True), ("other_engine", "")),
                    _connector="OR",
                ),
                name="runtime_other_engine_named",
            ),
        ),
        migrations.RunPython(imports_name_their_engine, migrations.RunPython.noop),
    ]
