"""The launch form: field errors, the row before the message, the node's own queue."""

from __future__ import annotations

import os
import uuid

import pytest
import redis
from django.conf import settings

from benchmarks.models import Benchmark, Checkpoint, Workload
from config.celery import app as celery_app
from dashboard.forms_launch import LaunchForm
from tests.config.test_settings import start_settings
from tests.rows import launch_form_data, make_checkpoint, make_node, make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def node():
    # A queue no worker consumes: the message stays in Redis for the test to find.
    return make_node(f"test-{uuid.uuid4().hex[:8]}", gpu_count=2)


@pytest.fixture
def broker(node):
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    yield client
    client.delete(node.queue)


# Three configs x two load levels x two repeats: twelve points.
SWEEP = {"max_num_seqs": "256, 512, 1024", "max_num_batched_tokens": "8192",
         "load_levels": "1000 2000", "repeats": "2"}


def form_data(target, **overrides):
    return launch_form_data(target, **{**SWEEP, **overrides})


def test_launching_creates_the_run_and_puts_only_its_id_on_the_node_queue(owner_client, node, broker):
    response = owner_client.post("/runs/new/", form_data(node))
    benchmark = Benchmark.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/runs/{benchmark.code}/"
    assert benchmark.state == "queued"
    assert benchmark.points_total == 3 * 2 * 2
    assert [c["max_num_seqs"] for c in benchmark.plan["engine_configs"]] == [256, 512, 1024]
    assert benchmark.plan["engine_configs"][0]["kv_cache_dtype"] == "fp8"  # from the checkpoint
    assert benchmark.celery_task_id
    assert broker.llen(node.queue) == 1
    message = broker.lindex(node.queue, 0).decode()
    assert benchmark.celery_task_id in message


def test_a_custom_workload_with_a_rate_shape_builds_rate_loads(owner_client, node, broker):
    data = form_data(node, workload_preset="custom", prompt_source="random", input_tokens_min=128,
                     input_tokens_max=128, output_tokens=64, request_count=500, temperature=0,
                     endpoint="completions", load_shape="rate", load_levels="2.5, 5",
                     stream="on", ignore_eos="on")
    assert owner_client.post("/runs/new/", data).status_code == 302
    plan = Benchmark.objects.get().plan
    assert [load["rate"] for load in plan["loads"]] == [2.5, 5.0]
    assert Workload.objects.get().load_shape == "rate"


def test_goodput_slos_from_the_form_go_into_the_plan(owner_client, node, broker):
    data = form_data(node, goodput="ttft:500  tpot:50 e2el:20000")
    assert owner_client.post("/runs/new/", data).status_code == 302
    assert Benchmark.objects.get().plan["goodput"] == {"ttft": 500, "tpot": 50, "e2el": 20000}


def test_a_noisy_hosts_settings_from_the_form_go_into_the_plan(owner_client, node, broker):
    data = form_data(node, redraw_disturbed="2", control_point="on", converge_pct="5",
                     max_repeats="4", end_control="on")
    assert owner_client.post("/runs/new/", data).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.plan["stability"] == {
        "redraw_disturbed": 2, "control_point": True, "end_control": True, "converge_pct": 5.0,
        "max_repeats": 4}
    # Three configs x two levels x two repeats, a control point each, and the end control.
    assert benchmark.points_total == 12 + 3 + 1


def test_a_form_without_the_noisy_host_fields_takes_no_control_point(owner_client, node, broker):
    # An unticked box is not sent: the control point is off, the redraws at their default; the
    # end control left to the engine is off on this GPU node.
    assert owner_client.post("/runs/new/", form_data(node)).status_code == 302
    assert Benchmark.objects.get().plan["stability"] == {
        "redraw_disturbed": 1, "control_point": False, "end_control": False,
        "converge_pct": None, "max_repeats": 5}


@pytest.mark.parametrize(("style", "chosen", "taken"), [
    ("cpu", "", True), ("serve", "", False), ("cpu", "off", False), ("serve", "on", True)])
def test_the_end_control_left_to_the_engine_is_on_for_a_cpu_engine_only(
    owner_client, broker, style, chosen, taken
):
    node = make_node(f"test-{uuid.uuid4().hex[:8]}", launch_style=style,
                     gpu_count=0 if style == "cpu" else 2)
    data = form_data(node, end_control=chosen)
    response = owner_client.post("/runs/new/", data)
    assert response.status_code == 302, response.context["form"].errors
    assert Benchmark.objects.get().plan["stability"]["end_control"] is taken
    broker.delete(node.queue)


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"max_num_seqs": "256, lots"}, "max_num_seqs", "not a whole number"),
        ({"max_num_seqs": "0"}, "max_num_seqs", "0: Input should be greater than 0"),
        ({"max_num_seqs": "8 8"}, "max_num_seqs", "Each value once"),
        ({"max_num_seqs": "1024", "max_num_batched_tokens": "512"}, "__all__",
         "vLLM would refuse every combination: seqs=1024,tokens=512: not run, "
         "max_num_batched_tokens (512) must be >= max_num_seqs (1024)"),
        ({"kv_cache_dtype": "fp8 fp9"}, "kv_cache_dtype", "unknown KV-cache dtype 'fp9'"),
        ({"max_num_seqs": "", "engine_config_list": "--max-num-seqs"}, "engine_config_list",
         "Line 1: --max-num-seqs needs a value"),
        ({"extra_args": "--max-num-seqs 5"}, "extra_args", "has its own field"),
        ({"extra_args": "--turbo"}, "extra_args", "unknown engine flag"),
        ({"extra_args": "-tp 8 -pp 4"}, "extra_args", "-tp: short flags are not accepted"),
        ({"extra_args": "--enforce-eager other/model"}, "extra_args",
         "'other/model' is neither an engine flag"),
        ({"load_levels": ""}, "load_levels", "required"),
        ({"load_levels": "1000, 1000"}, "load_levels", "Each value once"),
        ({"repeats": "0"}, "repeats", "greater than or equal to 1"),
        ({"replicas": "3"}, "replicas", "at most that many"),
        ({"node": "999999"}, "node", "Unknown node"),
        ({"gpu_memory_utilization": "1.5"}, "gpu_memory_utilization", "less than or equal"),
        ({"goodput": "ttft=500"}, "goodput", "expected KEY:MS"),
        ({"goodput": "ttfb:500"}, "goodput", "unknown goodput metric 'ttfb'"),
        ({"goodput": "ttft:-1"}, "goodput", "must be a finite number >= 0"),
        ({"goodput": "e2el:nan"}, "goodput", "must be a finite number >= 0"),
    ],
)
def test_a_bad_value_gets_an_error_on_its_field_and_creates_nothing(
    owner_client, node, overrides, field, message
):
    response = owner_client.post("/runs/new/", form_data(node, **overrides))
    assert response.status_code == 400
    errors = " ".join(response.context["form"].errors.get(field, []))
    assert message in errors
    assert not Benchmark.objects.exists()


def test_a_custom_workload_reports_each_inconsistent_field(owner_client, node):
    data = form_data(node, workload_preset="custom", prompt_source="dataset", input_tokens_min=100,
                     input_tokens_max=50, output_tokens=16, request_count=10, temperature=0,
                     endpoint="completions", load_shape="burst", thinking="on")
    form = owner_client.post("/runs/new/", data).context["form"]
    assert "at least the minimum" in form.errors["input_tokens_max"][0]
    assert "chat endpoint" in form.errors["thinking"][0]
    assert "JSONL file from the data directory" in form.errors["dataset_path"][0]
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# Datasets: only regular files in HEADROOM_DATA_DIR
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def data_dir(settings, tmp_path):
    """The web host's data directory: two datasets, and what must not be offered or taken."""
    root = tmp_path / "datasets"
    (root / "chat").mkdir(parents=True)
    (root / "prompts.jsonl").write_text('{"prompt": "alpha"}\n')
    (root / "chat" / "turns.jsonl").write_text('{"prompt": "beta"}\n')
    (tmp_path / "private.jsonl").write_text('{"prompt": "not a dataset"}\n')
    (root / "escape.jsonl").symlink_to(tmp_path / "private.jsonl")
    (root / "zero.jsonl").symlink_to("/dev/zero")
    settings.HEADROOM_DATA_DIR = root
    return root


def dataset_form(target, name):
    return form_data(target, workload_preset="custom", prompt_source="dataset",
                     input_tokens_min=1, input_tokens_max=50, output_tokens=16,
                     request_count=10, temperature=0, endpoint="completions",
                     load_shape="burst", dataset_path=name)


def test_the_form_offers_the_regular_files_of_the_data_directory_only(owner_client, data_dir):
    choices = [value for value, _label in LaunchForm().fields["dataset_path"].choices]
    assert choices == ["", "chat/turns.jsonl", "prompts.jsonl"]
    page = owner_client.get("/runs/new/").content.decode()
    assert '<option value="chat/turns.jsonl">' in page and "escape.jsonl" not in page


def test_a_dataset_from_the_data_directory_goes_into_the_plan_by_its_relative_name(
        owner_client, node, broker, data_dir):
    response = owner_client.post("/runs/new/", dataset_form(node, "chat/turns.jsonl"))
    assert response.status_code == 302
    assert Benchmark.objects.get().plan["workload"]["dataset_path"] == "chat/turns.jsonl"


@pytest.mark.parametrize(
    "name", ["/dev/zero", "../private.jsonl", "escape.jsonl", "zero.jsonl", "chat", "gone.jsonl"])
def test_a_dataset_outside_the_data_directory_or_not_a_regular_file_is_refused(
        owner_client, node, data_dir, name):
    response = owner_client.post("/runs/new/", dataset_form(node, name))
    assert response.status_code == 400
    errors = response.context["form"].errors["dataset_path"]
    assert f"{name} is not a file in the data directory." in errors
    assert not Benchmark.objects.exists()


def test_a_listed_dataset_swapped_for_a_fifo_before_the_post_is_refused(node, data_dir):
    form = LaunchForm(dataset_form(node, "prompts.jsonl"))  # listed while it was a file
    (data_dir / "prompts.jsonl").unlink()
    os.mkfifo(data_dir / "prompts.jsonl")
    assert not form.is_valid()
    assert "not a regular file" in form.errors["dataset_path"][0]


def test_the_data_directory_is_var_datasets_unless_set_and_only_an_absolute_one_is_taken():
    assert settings.HEADROOM_DATA_DIR == settings.BASE_DIR / "var" / "datasets"
    started = start_settings({"DEBUG": "1", "HEADROOM_DATA_DIR": "var/datasets"}, "DEBUG")
    assert started.returncode != 0
    assert "HEADROOM_DATA_DIR must be absolute" in started.stderr


@pytest.fixture
def broker_down(monkeypatch):
    """Point the Celery app at a port where nothing listens, as when Redis is down."""
    dead = "redis://127.0.0.1:1/0"
    # Celery reads CELERY_BROKER_URL from the environment before its own configuration.
    monkeypatch.setenv("CELERY_BROKER_URL", dead)
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = dead
    yield
    celery_app.conf.broker_url = original


def test_a_broker_that_is_down_gets_a_clear_message_and_leaves_nothing_behind(
    owner_client, node, broker_down
):
    response = owner_client.post("/runs/new/", form_data(node))
    assert response.status_code == 400
    assert "broker" in " ".join(response.context["form"].non_field_errors())
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# Engine settings come from runner.schema.engine_config.EngineConfig; only vLLM is launchable
# ---------------------------------------------------------------------------------------------


def test_every_engine_setting_has_a_cli_flag_and_a_form_field():
    from dashboard.forms_launch import LaunchForm
    from runner.cli.parser import build_parser
    from runner.schema.engine_config import EngineConfig

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]
    flags = {flag for action in bench._actions for flag in action.option_strings}
    settings = EngineConfig.settings()
    assert {s.name for s in settings} == set(EngineConfig.model_fields) - {"extra_args"}
    for setting in settings:
        assert setting.flag in flags, setting.flag
        assert setting.name in LaunchForm().fields, setting.name
    assert [field.name for field in LaunchForm().engine_fields()] == [
        *(s.name for s in settings), "extra_args", "engine_config_list"
    ]


def test_each_engine_setting_from_the_form_reaches_every_config_of_the_plan(
    owner_client, node, broker
):
    data = form_data(node, max_num_seqs="8, 16", kv_cache_dtype="fp8_e5m2", max_model_len="4096",
                     block_size="32", enable_prefix_caching="false", stream_interval="4",
                     num_gpu_blocks_override="500", tensor_parallel_size="2",
                     gpu_memory_utilization="0.85")
    assert owner_client.post("/runs/new/", data).status_code == 302
    configs = Benchmark.objects.get().plan["engine_configs"]
    assert [c["max_num_seqs"] for c in configs] == [8, 16]
    for config in configs:
        assert {k: config[k] for k in data if k in config and k != "max_num_seqs"} == {
            "max_num_batched_tokens": 8192, "kv_cache_dtype": "fp8_e5m2", "max_model_len": 4096,
            "block_size": 32, "enable_prefix_caching": False, "stream_interval": 4,
            "num_gpu_blocks_override": 500, "tensor_parallel_size": 2,
            "gpu_memory_utilization": 0.85,
        }


def test_a_setting_left_blank_keeps_the_engines_default(owner_client, node, broker):
    data = form_data(node, enable_prefix_caching="", tensor_parallel_size="", kv_cache_dtype="")
    assert owner_client.post("/runs/new/", data).status_code == 302
    config = Benchmark.objects.get().plan["engine_configs"][0]
    # Unset prefix caching is the engine's choice, not "off"; the checkpoint's KV dtype applies.
    assert (config["enable_prefix_caching"], config["tensor_parallel_size"]) == (None, 1)
    assert config["kv_cache_dtype"] == "fp8"


@pytest.mark.parametrize(
    "overrides, field, message",
    [
        ({"gpu_memory_utilization": "0"}, "gpu_memory_utilization", "greater than 0"),
        ({"block_size": "0"}, "block_size", "0: Input should be greater than 0"),
        ({"tensor_parallel_size": "2", "replicas": "2"}, "tensor_parallel_size",
         "2 replica(s) x 2 GPUs each need 4 GPUs"),
    ],
)
def test_a_bad_engine_setting_gets_an_error_on_its_field(
    owner_client, node, overrides, field, message
):
    response = owner_client.post("/runs/new/", form_data(node, **overrides))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors.get(field, []))
    assert not Benchmark.objects.exists()


def test_only_vllm_runtimes_are_offered_and_another_engine_is_refused(owner_client, node):
    from dashboard.forms_launch import LaunchForm

    trtllm = make_runtime(engine="tensorrt-llm", version="0.18.0")
    vllm = make_runtime()
    assert list(LaunchForm().fields["runtime"].queryset) == [vllm]
    response = owner_client.post("/runs/new/", form_data(node, runtime=trtllm.pk))
    assert response.status_code == 400
    assert response.context["form"].errors["runtime"] == [
        "tensorrt-llm 0.18.0 cannot be launched: Headroom launches only vLLM runtimes (import "
        "the results of other engines instead)."
    ]
    assert not Benchmark.objects.exists()


def test_a_runtime_that_does_not_exist_is_still_an_invalid_choice(owner_client, node):
    response = owner_client.post("/runs/new/", form_data(node, runtime="999999"))
    assert "Select a valid choice" in response.context["form"].errors["runtime"][0]


# ---------------------------------------------------------------------------------------------
# Only approved rows are launchable; code-loading flags need a trusted checkpoint
# ---------------------------------------------------------------------------------------------

# The attack of issue 11: an imported checkpoint with flags that load code and read files.
CODE_LOADING_ARGS = (
    "--tokenizer attacker-org/evil-tok --trust-remote-code --chat-template /etc/shadow"
)


def test_only_approved_checkpoints_and_runtimes_are_offered():
    from dashboard.forms_launch import LaunchForm

    approved = make_checkpoint()
    make_checkpoint(repo="attacker-org/evil-remote-code-model", approved=False)
    vllm = make_runtime()
    make_runtime(version="0.32.0", image="attacker/evil:latest", approved=False)
    form = LaunchForm()
    assert list(form.fields["checkpoint"].queryset) == [approved]
    assert list(form.fields["runtime"].queryset) == [vllm]


@pytest.mark.parametrize(
    "field, factory, fields",
    [("checkpoint", make_checkpoint, {"repo": "attacker-org/evil-remote-code-model"}),
     ("runtime", make_runtime, {"version": "0.32.0", "image": "attacker/evil:latest"})],
)
def test_an_unapproved_checkpoint_or_runtime_is_refused_with_the_reason(
    owner_client, node, field, factory, fields
):
    row = factory(approved=False, **fields)
    response = owner_client.post("/runs/new/", form_data(node, **{field: row.pk}))
    assert response.status_code == 400
    assert "is not approved for launching yet" in response.context["form"].errors[field][0]
    assert not Benchmark.objects.exists()


def test_code_loading_flags_with_an_untrusted_checkpoint_get_an_error_naming_them(
    owner_client, node
):
    response = owner_client.post("/runs/new/", form_data(node, extra_args=CODE_LOADING_ARGS))
    assert response.status_code == 400
    assert response.context["form"].errors["extra_args"] == [(
        "--tokenizer, --trust-remote-code, --chat-template can load code or read files on the "
        "node: allowed only with a checkpoint an administrator marked trusted."
    )]
    assert not Benchmark.objects.exists()


def test_a_trusted_checkpoint_may_use_code_loading_flags(owner_client, node, broker):
    trusted = make_checkpoint(trusted=True)
    data = form_data(node, checkpoint=trusted.pk, extra_args=CODE_LOADING_ARGS)
    assert owner_client.post("/runs/new/", data).status_code == 302
    plan = Benchmark.objects.get().plan
    assert plan["checkpoint"]["trusted"] is True
    assert "--trust-remote-code" in plan["engine_configs"][0]["extra_args"]


def test_a_lora_adapter_outside_the_model_directories_is_refused(owner_client, node, broker,
                                                                 settings):
    outside = form_data(node, extra_args="--enable-lora --lora-modules alpha=/etc")
    response = owner_client.post("/runs/new/", outside)
    assert response.status_code == 400, response.content
    assert response.context["form"].errors["extra_args"] == [(
        f"LoRA adapter 'alpha': '/etc' is neither a hub repo id (org/name) nor a path inside "
        f"the model directories allowed here ({settings.HEADROOM_MODEL_DIRS[0]})."
    )]
    inside = f"--enable-lora --lora-modules alpha={settings.HEADROOM_MODEL_DIRS[0]}/loras/alpha"
    assert owner_client.post("/runs/new/", form_data(node, extra_args=inside)).status_code == 302
    (launched,) = Benchmark.objects.all()  # the refused launch made no row
    assert f"alpha={settings.HEADROOM_MODEL_DIRS[0]}/loras/alpha" in (
        launched.plan["engine_configs"][0]["extra_args"])


@pytest.mark.parametrize(
    "repo, message",
    [("--trust-remote-code", "starts with '-': vLLM would read it as a flag"),
     ("/etc", "neither a hub repo id (org/name) nor a path inside the model directories"),
     ("/tmp/tiny-model", "neither a hub repo id")],
)
def test_a_checkpoint_whose_model_is_not_loadable_here_is_refused(owner_client, node, repo, message):
    # Rows written around the model's clean() (a migration, the shell) are checked at launch too.
    checkpoint = Checkpoint.objects.create(repo=repo, approved=True)
    response = owner_client.post("/runs/new/", form_data(node, checkpoint=checkpoint.pk))
    assert response.status_code == 400
    assert message in response.context["form"].errors["checkpoint"][0]
    assert not Benchmark.objects.exists()


def test_a_local_model_inside_the_allowed_directories_is_launchable(owner_client, node, broker):
    repo = str(settings.HEADROOM_MODEL_DIRS[0] / "tiny-model")
    checkpoint = make_checkpoint(repo=repo, revision="")
    response = owner_client.post("/runs/new/", form_data(node, checkpoint=checkpoint.pk))
    assert response.status_code == 302
    assert Benchmark.objects.get().plan["checkpoint"]["model"] == repo


def test_local_models_are_refused_when_no_model_directory_is_configured(owner_client, node, settings):
    repo = str(settings.HEADROOM_MODEL_DIRS[0] / "tiny-model")
    settings.HEADROOM_MODEL_DIRS = []
    checkpoint = make_checkpoint(repo=repo, revision="")
    response = owner_client.post("/runs/new/", form_data(node, checkpoint=checkpoint.pk))
    assert "none are configured" in response.context["form"].errors["checkpoint"][0]


@pytest.mark.parametrize(
    "repo, approved, message",
    [("--trust-remote-code", False, "starts with '-'"),
     ("/etc", True, "neither a hub repo id"),
     ("/etc", False, None),  # a record of what ran elsewhere, not launchable
     ("Qwen/Qwen3-30B-A3B", True, None)],
)
def test_the_checkpoint_model_validates_its_repo(repo, approved, message):
    from django.core.exceptions import ValidationError

    checkpoint = Checkpoint(repo=repo, approved=approved)
    if message is None:
        checkpoint.full_clean()
        return
    with pytest.raises(ValidationError) as refused:
        checkpoint.full_clean()
    assert message in refused.value.message_dict["repo"][0]


def test_the_model_directories_setting_fails_closed_and_takes_only_absolute_paths(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from config.settings import envdirs

    monkeypatch.delenv("HEADROOM_MODEL_DIRS", raising=False)
    assert envdirs("HEADROOM_MODEL_DIRS") == []
    monkeypatch.setenv("HEADROOM_MODEL_DIRS", "/models:/scratch/models")
    assert [str(d) for d in envdirs("HEADROOM_MODEL_DIRS")] == ["/models", "/scratch/models"]
    monkeypatch.setenv("HEADROOM_MODEL_DIRS", "/models:var")
    with pytest.raises(ImproperlyConfigured, match="absolute directories, got \\['var'\\]"):
        envdirs("HEADROOM_MODEL_DIRS")


# ---------------------------------------------------------------------------------------------
# Engine-config grids
# ---------------------------------------------------------------------------------------------


def launched_configs(owner_client, data) -> list[dict]:
    response = owner_client.post("/runs/new/", data)
    assert response.status_code == 302, response.context["form"].errors
    return Benchmark.objects.get().plan["engine_configs"]


def config_labels(configs: list[dict]) -> list[str]:
    from runner.schema.engine_config import EngineConfig

    return [EngineConfig.model_validate(c).label() for c in configs]


def test_two_axes_launch_their_cross_product(owner_client, node, broker):
    data = form_data(node, max_num_seqs="4, 16", max_num_batched_tokens="256, 2048")
    configs = launched_configs(owner_client, data)
    assert config_labels(configs) == [
        "seqs=4,tokens=256,kv=fp8", "seqs=4,tokens=2048,kv=fp8",
        "seqs=16,tokens=256,kv=fp8", "seqs=16,tokens=2048,kv=fp8",
    ]
    benchmark = Benchmark.objects.get()
    assert benchmark.points_total == 4 * 2 * 2
    assert benchmark.plan_notes == []


def test_combinations_vllm_refuses_are_left_out_with_a_note(owner_client, node, broker):
    data = form_data(node, max_num_seqs="4, 512", max_num_batched_tokens="256, 2048")
    configs = launched_configs(owner_client, data)
    assert [(c["max_num_seqs"], c["max_num_batched_tokens"]) for c in configs] == [
        (4, 256), (4, 2048), (512, 2048)
    ]
    benchmark = Benchmark.objects.get()
    assert benchmark.points_total == 3 * 2 * 2
    assert benchmark.plan_notes == [
        "seqs=512,tokens=256: not run, max_num_batched_tokens (256) must be >= max_num_seqs "
        "(512); vLLM refuses to start otherwise"
    ]


def test_a_grid_over_the_cap_is_refused_with_its_size(owner_client, node):
    # 5 x 5 = 25 combinations, none refused: past the 20 configs a launch may start.
    data = form_data(node, max_num_seqs="1 2 3 4 5", max_num_batched_tokens="256 512 1024 2048 4096")
    response = owner_client.post("/runs/new/", data)
    assert response.status_code == 400
    errors = " ".join(response.context["form"].non_field_errors())
    assert "5 --max-num-seqs x 5 --max-num-batched-tokens = 25 combinations (25 to run)" in errors
    assert "at most 20 engine configs" in errors
    assert not Benchmark.objects.exists()


def test_a_grid_at_the_cap_launches(owner_client, node, broker):
    data = form_data(node, max_num_seqs="1 2 3 4", max_num_batched_tokens="256 512 1024 2048 4096")
    assert len(launched_configs(owner_client, data)) == 20


def test_the_cap_counts_the_configs_left_after_pruning(owner_client, node, broker):
    # 7 x 3 = 21 combinations; 600 and 700 sequences cannot run with 512 tokens: 19 to run.
    data = form_data(node, max_num_seqs="1 2 3 4 5 600 700", max_num_batched_tokens="512 1024 2048")
    assert len(launched_configs(owner_client, data)) == 19
    assert len(Benchmark.objects.get().plan_notes) == 2


def test_a_switch_on_and_off_is_two_configs(owner_client, node, broker):
    data = form_data(node, max_num_seqs="8", enable_prefix_caching="both")
    configs = launched_configs(owner_client, data)
    assert [c["enable_prefix_caching"] for c in configs] == [True, False]


def test_extra_flag_lines_are_an_axis(owner_client, node, broker):
    data = form_data(node, max_num_seqs="8", extra_args="--enforce-eager\n(none)\n")
    configs = launched_configs(owner_client, data)
    assert [c["extra_args"] for c in configs] == [["--enforce-eager"], []]


def test_an_explicit_list_runs_exactly_its_configs(owner_client, node, broker):
    data = form_data(
        node, max_num_seqs="", max_num_batched_tokens="",
        engine_config_list="--max-num-seqs 4 --max-num-batched-tokens 256\n\n"
        "--max-num-seqs 16 --enable-prefix-caching --enforce-eager",
    )
    configs = launched_configs(owner_client, data)
    assert config_labels(configs) == [
        "seqs=4,tokens=256,kv=fp8", "seqs=16,kv=fp8,prefix=True,--enforce-eager"
    ]


def test_a_list_beside_a_grid_is_refused(owner_client, node):
    data = form_data(node, engine_config_list="--max-num-seqs 4")
    response = owner_client.post("/runs/new/", data)
    errors = " ".join(response.context["form"].errors["engine_config_list"])
    assert "either as the grid above or as this list" in errors
    assert "--max-num-seqs, --max-num-batched-tokens" in errors
    assert not Benchmark.objects.exists()


def test_the_widest_tensor_parallel_config_must_fit_the_node(owner_client, node):
    data = form_data(node, tensor_parallel_size="1, 2", replicas="2")
    response = owner_client.post("/runs/new/", data)
    errors = " ".join(response.context["form"].errors["tensor_parallel_size"])
    assert "2 replica(s) x 2 GPUs each need 4 GPUs" in errors


def test_a_budget_below_the_nodes_default_sequences_is_refused_when_seqs_is_blank(owner_client):
    # A CPU node: vLLM's CPU default is 128 sequences, so 64 batched tokens cannot start.
    cpu_node = make_node(f"cpu-{uuid.uuid4().hex[:8]}", gpu_count=0, gpu_name="", launch_style="cpu")
    data = form_data(cpu_node, max_num_seqs="", max_num_batched_tokens="64, 256")
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        configs = launched_configs(owner_client, data)
    finally:
        client.delete(cpu_node.queue)
    assert [c["max_num_batched_tokens"] for c in configs] == [256]
    assert "below the 128 sequences vLLM runs by default" in Benchmark.objects.get().plan_notes[0]


def test_extra_flags_beside_a_list_are_refused_too(owner_client, node):
    data = form_data(node, max_num_seqs="", max_num_batched_tokens="",
                     extra_args="--enforce-eager", engine_config_list="--max-num-seqs 4")
    errors = " ".join(owner_client.post("/runs/new/", data).context["form"].errors[
        "engine_config_list"])
    assert "(the grid sets extra engine flags)" in errors
