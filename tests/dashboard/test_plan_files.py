"""Plans stay portable: a run's plan downloads as the file `python -m runner sweep` runs, and a
plan file uploaded on the launch page fills the form for review, naming what it cannot carry.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils.html import escape

from benchmarks.launch import plans
from benchmarks.models import Benchmark, Workload
from dashboard import plan_files
from dashboard.forms_launch import LaunchForm
from dashboard.launch_fields import WORKLOAD_PRESETS
from runner.cli.commands import load_plan
from runner.plan_text import MAX_PLAN_DEPTH
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan
from tests.rows import (
    REVISION,
    make_benchmark,
    make_checkpoint,
    make_node,
    make_runtime,
)

pytestmark = pytest.mark.django_db


def download(client: Client, benchmark: Benchmark, tmp_path: Path) -> Path:
    response = client.get(f"/runs/{benchmark.code}/plan.yaml")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/yaml; charset=utf-8"
    assert response["Content-Disposition"] == (
        f'attachment; filename="headroom-{benchmark.code}.yaml"')
    path = tmp_path / "plan.yaml"
    path.write_bytes(response.content)
    return path


def upload(client: Client, content: bytes, name: str = "plan.yaml") -> Any:
    return client.post("/runs/new/plan/", {"plan_file": SimpleUploadedFile(name, content)})


def form_post(form: LaunchForm) -> dict[str, str]:
    """What a browser sends for the form as it is shown: a checked box as "on", a blank as ""."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if isinstance(value, bool):
            if value:
                data[name] = "on"
        else:
            data[name] = "" if value is None else str(value)
    return data


def plan_dict(**fields: Any) -> dict[str, Any]:
    plan = {
        "name": "from the command line",
        "checkpoint": {"model": "nvidia/Qwen3-30B-A3B-FP4", "revision": REVISION,
                       "precision": "NVFP4"},
        "engine_configs": [{"max_num_seqs": 256, "kv_cache_dtype": "fp8"},
                           {"max_num_seqs": 1024, "kv_cache_dtype": "fp8"}],
        "loads": [{"shape": "burst", "num_requests": 1000}],
        **fields,
    }
    return plan


# ---------------------------------------------------------------------------------------------
# Download
# ---------------------------------------------------------------------------------------------


def test_the_downloaded_plan_is_the_file_the_cli_runs_and_equals_the_stored_plan(
    engineer, tmp_path
):
    benchmark = make_benchmark()
    # A rate load with evenly spaced arrivals: JSON and YAML have no infinity, the schema's "inf".
    stored = SweepPlan.model_validate(benchmark.plan).model_copy(update={"loads": [
        LoadSpec(shape="rate", rate=2.5, num_requests=100, burstiness=float("inf"))]})
    benchmark.plan = stored.model_dump(mode="json")
    benchmark.save()
    assert load_plan(download(engineer, benchmark, tmp_path)) == stored


def test_the_run_page_links_the_plan_of_a_launched_run_only(engineer):
    node = make_node("gpu-a")
    launched = make_benchmark(node)
    page = engineer.get(f"/runs/{launched.code}/").content.decode()
    assert f'href="/runs/{launched.code}/plan.yaml"' in page
    imported = make_benchmark(node, source="imported",
                              plan={"name": "x", "imported_from": "a.json"})
    page = engineer.get(f"/runs/{imported.code}/").content.decode()
    assert "plan.yaml" not in page
    assert engineer.get(f"/runs/{imported.code}/plan.yaml").status_code == 404


# ---------------------------------------------------------------------------------------------
# Upload
# ---------------------------------------------------------------------------------------------


def test_a_plan_made_on_the_form_comes_back_onto_it_and_launches_the_same_plan(
    engineer, launches, tmp_path
):
    node = make_node("gpu-a", gpu_count=8, gpu_memory_mib=143771)
    checkpoint, runtime = make_checkpoint(), make_runtime()
    form = {
        "name": "tuning", "node": node.pk, "checkpoint": checkpoint.pk, "runtime": runtime.pk,
        "workload_preset": "custom", "prompt_source": "random", "input_tokens_min": "100",
        "input_tokens_max": "120", "output_tokens": "64", "request_count": "500",
        "temperature": "0.7", "thinking": "on", "endpoint": "chat", "stream": "on",
        "load_shape": "concurrency", "load_levels": "8, 32, 128", "max_num_seqs": "64, 256",
        # Blank: the plan's "vLLM decides" must win over the node's suggested 8192 on the way back.
        "max_num_batched_tokens": "", "gpu_memory_utilization": "0.85",
        "enable_prefix_caching": "false", "extra_args": "--enforce-eager --seed 7",
        "repeats": "2", "replicas": "2", "goodput": "ttft:500 e2el:20000.5", "confirm": "1",
    }
    assert engineer.post("/runs/new/", form).status_code == 302
    first = Benchmark.objects.get()

    path = download(engineer, first, tmp_path)
    response = upload(engineer, path.read_bytes())
    assert response.status_code == 200
    assert response.context["plan_left_out"] == []
    assert "Every part of the file is on the form." in response.content.decode()
    assert Benchmark.objects.count() == 1 and launches == [first]  # it only filled the form

    again = {**form_post(response.context["form"]), "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    second = Benchmark.objects.exclude(pk=first.pk).get()
    assert second.plan == first.plan


@pytest.mark.parametrize(
    "engine_fields",
    [
        # A grid of three axes and two extra-flag lines: 2 x 2 x 2 x 2 = 16 configs.
        {"max_num_seqs": "64, 256", "max_num_batched_tokens": "4096 8192",
         "enable_prefix_caching": "both", "extra_args": "--enforce-eager\n(none)"},
        # A grid one of whose combinations vLLM refuses (512 sequences on 256 tokens).
        {"max_num_seqs": "4, 512", "max_num_batched_tokens": "256, 2048"},
        # A setting given in one config only is no axis: the explicit list.
        {"max_num_seqs": "", "max_num_batched_tokens": "",
         "engine_config_list": "--max-num-seqs 8\n--enforce-eager"},
        # An explicit list.
        {"max_num_seqs": "", "max_num_batched_tokens": "",
         "engine_config_list": "--max-num-seqs 8 --kv-cache-dtype fp8_e5m2\n"
                               "--max-num-seqs 32 --no-enable-prefix-caching --enforce-eager"},
    ],
)
def test_a_grid_or_list_made_on_the_form_comes_back_onto_it_as_the_same_configs(
    engineer, launches, tmp_path, engine_fields
):
    node = make_node("gpu-a", gpu_count=8)
    form = {
        "node": node.pk, "checkpoint": make_checkpoint().pk, "runtime": make_runtime().pk,
        "workload_preset": "case-study", "load_levels": "100", "repeats": "1",
        "replicas": "1", "confirm": "1", **engine_fields,
    }
    assert engineer.post("/runs/new/", form).status_code == 302
    first = Benchmark.objects.get()
    response = upload(engineer, download(engineer, first, tmp_path).read_bytes())
    assert response.context["plan_left_out"] == []
    again = {**form_post(response.context["form"]), "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    second = Benchmark.objects.exclude(pk=first.pk).get()
    assert second.plan["engine_configs"] == first.plan["engine_configs"]


def test_a_preset_workload_comes_back_as_its_preset(engineer):
    preset = Workload(name="case-study", **WORKLOAD_PRESETS["case-study"])
    plan = plans.build_plan(plans.LaunchRequest(
        name="preset", node=make_node(), runtime=make_runtime(), checkpoint=make_checkpoint(),
        workload=preset, engine_configs=[EngineConfig(max_num_seqs=s) for s in (256, 512)],
        load_levels=[1000, 2000], repeats=1, replicas=1))
    response = upload(engineer, plan_files.plan_yaml(plan.model_dump(mode="json")).encode())
    initial = response.context["form"].initial
    assert initial["workload_preset"] == "case-study"
    assert (initial["max_num_seqs"], initial["load_levels"]) == ("256, 512", "1000, 2000")
    assert response.context["plan_left_out"] == []


def test_what_the_form_cannot_express_is_named_and_the_rest_is_filled(engineer, launches):
    make_checkpoint()
    plan = plan_dict(
        engine_configs=[{"max_num_seqs": 256, "gpu_memory_utilization": 0.8},
                        {"max_num_seqs": 512, "gpu_memory_utilization": 0.9}],
        loads=[{"shape": "burst", "num_requests": 1000},
               {"shape": "rate", "rate": 4, "num_requests": 100}],
        workload={"seed": 7}, warmup_requests=5, client={"processes": 2},
        launch={"style": "serve", "env": {"VLLM_LOGGING_LEVEL": "DEBUG"}},
    )
    response = upload(engineer, yaml.safe_dump(plan).encode())
    assert response.status_code == 200
    left_out = response.context["plan_left_out"]
    assert left_out == [
        "workload.seed 7: the form sends 0",
        "loads the form cannot send with these fields: rate 4.0/s x 100 (one shape, one request "
        "count, Poisson arrivals, no in-flight cap, at most 20)",
        "engine configs without a KV-cache dtype run with the checkpoint's fp8",
        'client: not on the form; a launch uses the default {"processes": 1, '
        '"request_timeout_s": 600.0, "stall_timeout_s": 60.0, "cpus": [], "idle_nap_us": 0.0}',
        "warmup_requests: not on the form; a launch uses the default 0",
        "launch.env: not on the form; a launch uses the default {}",
    ]
    page = response.content.decode()
    assert all(escape(item) in page for item in left_out)
    initial = response.context["form"].initial
    # Two configs that are no cross product go to the explicit list, the grid left blank.
    assert initial["engine_config_list"] == (
        "--max-num-seqs 256 --gpu-memory-utilization 0.8\n"
        "--max-num-seqs 512 --gpu-memory-utilization 0.9"
    )
    assert (initial["max_num_seqs"], initial["gpu_memory_utilization"]) == ("", "")
    assert initial["load_levels"] == "1000"
    assert not launches and not Benchmark.objects.exists()


@pytest.mark.parametrize(("stability", "shown"), [
    ({"end_control": True}, "on"), ({"end_control": False}, "off"),
    ({}, "off"),  # unset in a file of a GPU engine's plan: its default, off
])
def test_the_end_control_comes_back_onto_the_form_and_launches_as_the_plan_set_it(
    engineer, launches, stability, shown
):
    node = make_node("gpu-a", gpu_count=8)
    checkpoint, runtime = make_checkpoint(), make_runtime()
    plan = plan_dict(launch={"style": "serve"}, stability=stability)
    response = upload(engineer, yaml.safe_dump(plan).encode())
    assert response.status_code == 200
    form = response.context["form"]
    assert form.initial["end_control"] == shown
    again = {**form_post(form), "node": node.pk, "checkpoint": checkpoint.pk,
             "runtime": runtime.pk, "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    assert Benchmark.objects.get().plan["stability"]["end_control"] is (shown == "on")


def test_a_checkpoint_is_filled_in_only_when_one_approved_row_is_the_plans(engineer):
    make_checkpoint(approved=False)
    response = upload(engineer, yaml.safe_dump(plan_dict()).encode())
    assert "checkpoint" not in response.context["form"].initial
    assert response.context["plan_left_out"] == [
        "checkpoint: no approved checkpoint is nvidia/Qwen3-30B-A3B-FP4@" + REVISION
        + "; choose one (the catalog lists them, a fleet manager approves new ones)"]


def test_of_two_checkpoints_that_differ_in_kv_dtype_the_one_the_plan_ran_with_is_filled_in(
    engineer
):
    make_checkpoint(kv_cache_dtype="")
    fp8 = make_checkpoint(kv_cache_dtype="fp8")
    response = upload(engineer, yaml.safe_dump(plan_dict()).encode())  # its configs ran fp8
    assert response.context["form"].initial["checkpoint"] == fp8.pk
    assert response.context["plan_left_out"] == []


def test_a_runtime_is_filled_in_from_the_launch_image_and_its_digest(engineer):
    digest = "sha256:" + "cd" * 32
    runtime = make_runtime(image="vllm/vllm-openai:v0.32.0", digest=digest)
    make_runtime(image="vllm/vllm-openai:v0.32.0", digest="")
    plan = plan_dict(launch={"style": "docker", "image": f"vllm/vllm-openai:v0.32.0@{digest}"})
    response = upload(engineer, yaml.safe_dump(plan).encode())
    assert response.context["form"].initial["runtime"] == runtime.pk


def test_a_json_plan_file_is_read_as_json(engineer):
    make_checkpoint()
    response = upload(engineer, json.dumps(plan_dict()).encode(), name="plan.json")
    assert response.status_code == 200
    assert response.context["form"].initial["name"] == "from the command line"


@pytest.mark.parametrize("content, name, message", [
    (b"name: [unclosed", "plan.yaml", "plan.yaml: not valid YAML"),
    (b"{\"name\": ", "plan.json", "plan.json: not valid JSON"),
    (b"- a\n- b\n", "plan.yaml", "a plan is a mapping"),
    (b"\xff\xfe", "plan.yaml", "UTF-8 text"),
    (b"[" * 50_000, "plan.json", "nested too deeply"),
    (yaml.safe_dump(plan_dict(engine="vllm")).encode(), "plan.yaml",
     "engine: Extra inputs are not permitted"),
    (yaml.safe_dump(plan_dict(checkpoint={"model": "a/b", "revision": "main"})).encode(),
     "plan.yaml", "revision must be a 40-hex commit id"),
    (b"a: &x [1, 2]\nb: [*x, *x]\n", "plan.yaml", "may not use YAML aliases"),
])
def test_a_file_that_is_not_a_plan_is_refused_with_the_reason(engineer, content, name, message):
    response = upload(engineer, content, name)
    assert response.status_code == 400
    assert message in " ".join(response.context["plan_form"].errors["plan_file"])
    assert response.context["plan_left_out"] is None


TOWER = "[" * (MAX_PLAN_DEPTH - 1) + "]" * (MAX_PLAN_DEPTH - 1)


@pytest.mark.parametrize("content, message", [
    pytest.param("[" * plan_files.PLAN_FILE_MAX_BYTES, "nested too deeply to be a plan",
                 id="nested brackets"),
    pytest.param("{" * plan_files.PLAN_FILE_MAX_BYTES, "nested too deeply to be a plan",
                 id="nested braces"),
    pytest.param("[" + ",".join([TOWER] * (plan_files.PLAN_FILE_MAX_BYTES // 63 - 1)) + "]",
                 "more than 20000 values", id="towers just under the depth limit"),
    pytest.param("[" + "a," * (plan_files.PLAN_FILE_MAX_BYTES // 2 - 1) + "]",
                 "more than 20000 values", id="a long flow sequence"),
])
def test_a_plan_file_built_to_be_slow_is_refused_within_the_budget(engineer, content, message):
    # Three seconds for a loaded host: the first two took over a minute when the alias check
    # read every event of the file with PyYAML's pure-Python parser.
    assert len(content) <= plan_files.PLAN_FILE_MAX_BYTES
    started = time.process_time()
    response = upload(engineer, content.encode())
    assert time.process_time() - started < 3
    assert response.status_code == 400
    assert message in " ".join(response.context["plan_form"].errors["plan_file"])


def test_a_plan_file_over_the_limit_is_refused_before_it_is_read(engineer):
    big = yaml.safe_dump(plan_dict(name="x" * plan_files.PLAN_FILE_MAX_BYTES)).encode()
    response = upload(engineer, big)
    assert response.status_code == 400
    assert "larger than the upload limit of 64" in " ".join(
        response.context["plan_form"].errors["plan_file"])


def test_uploading_a_plan_needs_the_launch_permission(django_user_model):
    reader = Client()
    reader.force_login(django_user_model.objects.create_user("reader"))
    assert upload(reader, yaml.safe_dump(plan_dict()).encode()).status_code == 403


def test_output_parity_and_a_quality_set_come_back_onto_the_form(
    engineer, launches, tmp_path, settings
):
    settings.HEADROOM_DATA_DIR = tmp_path / "data"
    settings.HEADROOM_DATA_DIR.mkdir()
    (settings.HEADROOM_DATA_DIR / "evals.jsonl").write_text(
        '{"prompt": "2 + 2 =", "expected": "4"}\n')
    node = make_node("gpu-a", gpu_count=8, gpu_memory_mib=143771)
    form = {
        "name": "parity", "node": node.pk, "checkpoint": make_checkpoint().pk,
        "runtime": make_runtime().pk, "workload_preset": "case-study", "keep_outputs": "on",
        "quality_path": "evals.jsonl", "max_num_seqs": "64, 256", "load_levels": "1000",
        "repeats": "1", "replicas": "1", "confirm": "1",
    }
    assert engineer.post("/runs/new/", form).status_code == 302
    first = Benchmark.objects.get()
    assert first.plan["workload"]["keep_outputs"] is True
    assert first.plan["quality"]["path"] == "evals.jsonl"

    response = upload(engineer, download(engineer, first, tmp_path).read_bytes())
    assert response.context["plan_left_out"] == []
    again = {**form_post(response.context["form"]), "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    assert Benchmark.objects.exclude(pk=first.pk).get().plan == first.plan


def test_a_quality_set_the_form_cannot_carry_is_named(engineer, tmp_path, settings):
    settings.HEADROOM_DATA_DIR = tmp_path
    (tmp_path / "evals.jsonl").write_text('{"prompt": "2 + 2 =", "expected": "4"}\n')
    plan = plan_dict(quality={"path": "gone.jsonl"})
    left_out = upload(engineer, yaml.safe_dump(plan).encode()).context["plan_left_out"]
    assert any(line.startswith("quality.path gone.jsonl: not a file in the data directory")
               for line in left_out)
    plan = plan_dict(quality={"path": "evals.jsonl", "max_tokens": 8})
    response = upload(engineer, yaml.safe_dump(plan).encode())
    assert response.context["form"].initial["quality_path"] == "evals.jsonl"
    assert "quality.max_tokens 8: not on the form; a launch uses the default 64" in \
        response.context["plan_left_out"]


LORA_FLAGS = "--enable-lora --lora-modules sql-lora=acme/sql-lora chat-lora=acme/chat-lora"


def test_a_lora_split_made_on_the_form_comes_back_onto_it_and_launches_the_same_plan(
    engineer, launches, tmp_path
):
    form = {
        "name": "adapters", "node": make_node("gpu-a", gpu_count=8).pk,
        "checkpoint": make_checkpoint().pk, "runtime": make_runtime().pk,
        "workload_preset": "case-study", "lora_split": "sql-lora:3 chat-lora:0.5",
        "extra_args": LORA_FLAGS, "load_levels": "1000", "repeats": "1", "replicas": "1",
        "confirm": "1",
    }
    assert engineer.post("/runs/new/", form).status_code == 302
    first = Benchmark.objects.get()
    assert first.plan["workload"]["lora_split"] == [
        {"name": "sql-lora", "weight": 3.0}, {"name": "chat-lora", "weight": 0.5}]
    assert first.workload.lora_split == first.plan["workload"]["lora_split"]

    response = upload(engineer, download(engineer, first, tmp_path).read_bytes())
    assert response.context["plan_left_out"] == []
    assert response.context["form"].initial["lora_split"] == "sql-lora:3 chat-lora:0.5"
    again = {**form_post(response.context["form"]), "confirm": "1"}
    assert engineer.post("/runs/new/", again).status_code == 302
    second = Benchmark.objects.exclude(pk=first.pk).get()
    assert second.plan == first.plan
    # Same workload, same row; a different split is a different workload.
    assert second.workload == first.workload


def test_a_hand_written_plan_with_a_lora_split_fills_the_form_with_nothing_left_out(engineer):
    make_checkpoint(repo="nvidia/Qwen3-30B-A3B-FP4", precision="NVFP4")
    configs = [{"max_num_seqs": 256, "extra_args": LORA_FLAGS.split()}]
    plan = plan_dict(engine_configs=configs, workload={
        "kind": "random", "input_tokens_min": 100, "input_tokens_max": 100,
        "output_tokens": 64, "endpoint": "completions",
        "lora_split": [{"name": "sql-lora", "weight": 1}, {"name": "chat-lora", "weight": 2}]})
    response = upload(engineer, yaml.safe_dump(plan).encode())
    assert response.status_code == 200
    assert response.context["form"].initial["lora_split"] == "sql-lora:1 chat-lora:2"
    assert not [part for part in response.context["plan_left_out"] if "lora" in part]


@pytest.mark.parametrize(
    ("split", "extra_args", "message"),
    [
        ("sql-lora", LORA_FLAGS, "'sql-lora' is not NAME:WEIGHT, e.g. sql-lora:3."),
        ("sql-lora:0", LORA_FLAGS, "'sql-lora:0': Input should be greater than 0."),
        ("sql-lora:lots", LORA_FLAGS, "'sql-lora:lots': the weight 'lots' is not a number."),
        ("sql-lora:inf", LORA_FLAGS, "must be a finite number > 0"),
        # Each weight finite, their sum not: the run's split would overflow after the engine
        # started.
        ("sql-lora:1e308 chat-lora:1e308", LORA_FLAGS,
         "the LoRA weights must add up to a finite number: give them as ratios"),
        ("acme/sql:1", LORA_FLAGS, "LoRA adapter name 'acme/sql': use letters, digits"),
        ("sql-lora:1 sql-lora:2", LORA_FLAGS, "an adapter is named twice: sql-lora sql-lora."),
        ("sql-lora:1 math-lora:1", LORA_FLAGS,
         "The LoRA split names math-lora, which engine config"),
        ("sql-lora:1", "", "The LoRA split names sql-lora, which engine config"),
    ],
)
def test_a_lora_split_the_engines_cannot_serve_is_an_error_on_its_field(
    engineer, launches, split, extra_args, message
):
    form = {
        "node": make_node("gpu-a", gpu_count=8).pk, "checkpoint": make_checkpoint().pk,
        "runtime": make_runtime().pk, "workload_preset": "case-study", "lora_split": split,
        "extra_args": extra_args, "load_levels": "1000", "repeats": "1", "replicas": "1",
        "confirm": "1",
    }
    response = engineer.post("/runs/new/", form)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == ["lora_split"], errors
    assert message in errors["lora_split"][0]
    assert launches == [] and not Benchmark.objects.exists()
