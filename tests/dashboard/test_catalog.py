"""The catalog (/catalog/): who may add, edit, approve and trust checkpoints and runtimes, and
describe nodes; what each form refuses; and the launch form's starting values.

Personas as in tests/dashboard/test_permissions.py: an Engineer, a Fleet manager and an
Administrator (benchmarks/migrations/0009). Which role reaches which URL is walked there.
"""

from __future__ import annotations

import types
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from benchmarks.models import AuditEvent, Checkpoint, Node, Runtime
from dashboard.forms_catalog import NodeForm
from dashboard.forms_launch import LaunchForm
from dashboard.launch_fields import vllm_batch_defaults
from runner.engine.vllm_defaults import BatchDefaults
from tests.personas import grant_role
from tests.rows import REVISION, make_checkpoint, make_node, make_runtime

pytestmark = pytest.mark.django_db

DIGEST = "sha256:" + "ab" * 32


def person(name: str, role: str | None) -> Any:
    user = get_user_model().objects.create_user(name, password=f"{name}-password")
    return grant_role(user, role) if role else user


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def manager() -> Any:
    return person("manager", "Fleet manager")


@pytest.fixture
def administrator() -> Any:
    return person("admin", "Administrator")


def checkpoint_form(**fields: str) -> dict[str, str]:
    return {"repo": "Qwen/Qwen3-0.6B", "revision": REVISION, "precision": "bf16",
            "kv_cache_dtype": "", **fields}


def runtime_form(**fields: str) -> dict[str, str]:
    return {"engine": "vllm", "other_engine": "", "version": "0.32.0",
            "image": "vllm/vllm-openai:v0.32.0", "digest": DIGEST, **fields}


def events() -> list[tuple[str, str, str]]:
    return [(e.action, e.actor_name, e.detail) for e in AuditEvent.objects.order_by("id")]


# ---------------------------------------------------------------------------------------------
# Checkpoints
# ---------------------------------------------------------------------------------------------


def test_a_fleet_manager_adds_an_approved_checkpoint_that_a_launch_then_offers(manager):
    response = client_for(manager).post("/catalog/checkpoints/new/",
                                        checkpoint_form(approved="on"))
    assert response.status_code == 302
    checkpoint = Checkpoint.objects.get()
    assert (checkpoint.approved, checkpoint.trusted) == (True, False)
    assert events() == [("approved", "manager", "")]
    assert checkpoint in LaunchForm().fields["checkpoint"].queryset


def test_the_approved_box_needs_the_permission_to_change_checkpoints():
    adder = person("adder", None)
    adder.user_permissions.add(Permission.objects.get(codename="add_checkpoint"))
    client = client_for(adder)
    assert 'name="approved"' not in client.get("/catalog/checkpoints/new/").content.decode()
    assert client.post("/catalog/checkpoints/new/",
                       checkpoint_form(approved="on")).status_code == 302
    assert not Checkpoint.objects.get().approved
    assert events() == []


def test_only_an_administrator_is_offered_and_may_tick_the_trusted_box(manager, administrator):
    assert 'name="trusted"' not in client_for(manager).get(
        "/catalog/checkpoints/new/").content.decode()
    client_for(manager).post("/catalog/checkpoints/new/",
                             checkpoint_form(approved="on", trusted="on"))
    assert not Checkpoint.objects.get().trusted
    checkpoint = Checkpoint.objects.get()
    url = f"/catalog/checkpoints/{checkpoint.pk}/edit/"
    assert 'name="trusted"' in client_for(administrator).get(url).content.decode()
    response = client_for(administrator).post(url, checkpoint_form(approved="on", trusted="on"))
    assert response.status_code == 302
    checkpoint.refresh_from_db()
    assert checkpoint.trusted
    assert events() == [("approved", "manager", ""), ("trusted", "admin", "")]


def test_a_trusted_checkpoint_is_edited_only_by_whoever_may_trust(manager, administrator):
    trusted = make_checkpoint(trusted=True)
    url = f"/catalog/checkpoints/{trusted.pk}/edit/"
    assert client_for(manager).post(url, checkpoint_form(repo="evil/weights")).status_code == 403
    trusted.refresh_from_db()
    assert trusted.repo != "evil/weights"
    assert url not in client_for(manager).get("/catalog/checkpoints/").content.decode()
    assert url in client_for(administrator).get("/catalog/checkpoints/").content.decode()


def test_pointing_an_approved_checkpoint_at_other_weights_records_the_approval_again(manager):
    checkpoint = make_checkpoint(repo="Qwen/Qwen3-0.6B", precision="bf16", kv_cache_dtype="")
    url = f"/catalog/checkpoints/{checkpoint.pk}/edit/"
    client = client_for(manager)
    assert client.post(url, checkpoint_form(approved="on")).status_code == 302  # unchanged
    assert events() == []
    other = "fedcba9876543210fedcba9876543210fedcba98"
    assert client.post(url, checkpoint_form(approved="on", revision=other)).status_code == 302
    assert events() == [("approved", "manager", "kept; revision changed")]


@pytest.mark.parametrize("revision", [
    "main", "v1.0", REVISION.upper(), REVISION[:39], REVISION + "0",
])
def test_a_checkpoint_revision_is_a_40_hex_commit(manager, revision):
    response = client_for(manager).post("/catalog/checkpoints/new/",
                                        checkpoint_form(revision=revision))
    assert response.status_code == 400
    assert "40-hex commit" in " ".join(response.context["form"].errors["revision"])
    assert not Checkpoint.objects.exists()


def test_a_hub_checkpoint_needs_its_commit_and_a_local_folder_does_not(manager, tiny_model_dir):
    response = client_for(manager).post("/catalog/checkpoints/new/", checkpoint_form(revision=""))
    assert response.status_code == 400
    assert response.context["form"].errors["revision"] == [
        "A hub checkpoint needs its 40-hex commit."]
    # The tiny model's folder is inside HEADROOM_MODEL_DIRS (config/test_settings.py).
    local = checkpoint_form(repo=str(tiny_model_dir), revision="", approved="on")
    assert client_for(manager).post("/catalog/checkpoints/new/", local).status_code == 302
    assert Checkpoint.objects.get().repo == str(tiny_model_dir)


def test_an_approved_repo_is_a_hub_id_or_inside_the_allowed_model_folders(manager, tmp_path):
    client = client_for(manager)
    outside = checkpoint_form(repo=str(tmp_path), revision="", approved="on")
    response = client.post("/catalog/checkpoints/new/", outside)
    assert response.status_code == 400
    assert "model directories allowed here" in response.context["form"].errors["repo"][0]
    # Not approved, it is a record of what ran elsewhere (as an import makes).
    assert client.post("/catalog/checkpoints/new/", {**outside, "approved": ""}).status_code == 302


def test_a_repo_vllm_would_read_as_a_flag_is_refused_even_unapproved(manager):
    response = client_for(manager).post("/catalog/checkpoints/new/",
                                        checkpoint_form(repo="--trust-remote-code"))
    assert response.status_code == 400
    assert "starts with '-'" in response.context["form"].errors["repo"][0]


def test_a_kv_dtype_is_spelled_as_vllm_spells_it_and_auto_is_blank(manager):
    client = client_for(manager)
    response = client.post("/catalog/checkpoints/new/", checkpoint_form(kv_cache_dtype="FP8 "))
    assert "vLLM has no KV-cache dtype 'FP8'" in response.context["form"].errors["kv_cache_dtype"][0]
    response = client.post("/catalog/checkpoints/new/", checkpoint_form(kv_cache_dtype="fp9"))
    assert "kv_cache_dtype" in response.context["form"].errors
    assert client.post("/catalog/checkpoints/new/",
                       checkpoint_form(kv_cache_dtype="fp8_e5m2")).status_code == 302
    Checkpoint.objects.all().delete()
    assert client.post("/catalog/checkpoints/new/",
                       checkpoint_form(kv_cache_dtype="auto")).status_code == 302
    assert Checkpoint.objects.get().kv_cache_dtype == ""


def test_the_same_checkpoint_twice_is_refused_on_the_form(manager):
    make_checkpoint(repo="Qwen/Qwen3-0.6B", precision="bf16", kv_cache_dtype="")
    response = client_for(manager).post("/catalog/checkpoints/new/", checkpoint_form())
    assert response.status_code == 400
    assert Checkpoint.objects.count() == 1


# ---------------------------------------------------------------------------------------------
# Runtimes
# ---------------------------------------------------------------------------------------------


def test_a_fleet_manager_adds_an_approved_vllm_runtime_pinned_to_its_digest(manager):
    response = client_for(manager).post("/catalog/runtimes/new/", runtime_form(approved="on"))
    assert response.status_code == 302
    runtime = Runtime.objects.get()
    assert (runtime.engine, runtime.digest, runtime.approved) == ("vllm", DIGEST, True)
    assert events() == [("approved", "manager", "")]
    assert runtime in LaunchForm().fields["runtime"].queryset


@pytest.mark.parametrize("fields, field, message", [
    ({"digest": "sha256:abc"}, "digest", "64 hex digits"),
    ({"digest": "md5:" + "ab" * 32}, "digest", "64 hex digits"),
    ({"digest": "sha256:" + "AB" * 32}, "digest", "64 hex digits"),
    ({"image": ""}, "digest", "give the image too"),
    ({"image": f"vllm/vllm-openai@{DIGEST}", "digest": ""}, "image", "its own field"),
    ({"image": "--privileged"}, "image", "starts with '-'"),
    ({"image": "vllm/vllm-openai:v0.32.0 --privileged"}, "image", "no spaces"),
    ({"engine": "other"}, "other_engine", "Name the engine"),
    ({"other_engine": "tgi"}, "other_engine", "Only for another engine"),
    ({"engine": "sglang", "approved": "on"}, "approved", "only a vLLM runtime"),
    ({"version": ""}, "version", "required"),
])
def test_a_runtime_form_refuses(manager, fields, field, message):
    response = client_for(manager).post("/catalog/runtimes/new/", runtime_form(**fields))
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not Runtime.objects.exists()


def test_another_engine_is_kept_as_a_record_that_is_never_launchable(manager):
    form = runtime_form(engine="other", other_engine="tgi", image="", digest="")
    assert client_for(manager).post("/catalog/runtimes/new/", form).status_code == 302
    runtime = Runtime.objects.get()
    assert (runtime.engine_name, runtime.approved) == ("tgi", False)


def test_approving_an_imported_runtime_in_the_catalog_is_recorded_once(manager):
    runtime = make_runtime(approved=False, image="vllm/vllm-openai:v0.32.0", version="0.32.0")
    url = f"/catalog/runtimes/{runtime.pk}/edit/"
    form = runtime_form(digest="", approved="on")
    assert client_for(manager).post(url, form).status_code == 302
    assert client_for(manager).post(url, form).status_code == 302  # saved again, unchanged
    runtime.refresh_from_db()
    assert runtime.approved
    assert events() == [("approved", "manager", "")]


# ---------------------------------------------------------------------------------------------
# Nodes
# ---------------------------------------------------------------------------------------------


def test_an_administrator_describes_a_node_and_the_workers_facts_stay(administrator,
                                                                      monkeypatch):
    node = make_node("gpu-a", gpu_memory_mib=143771)
    beat = timezone.now()

    def worker_beats_meanwhile(form: NodeForm) -> dict[str, Any]:
        Node.objects.filter(pk=node.pk).update(last_heartbeat_at=beat)
        return form.cleaned_data

    monkeypatch.setattr(NodeForm, "clean", worker_beats_meanwhile)
    response = client_for(administrator).post(
        f"/catalog/nodes/{node.pk}/edit/",
        {"description": "Rack 4, owned by the serving team", "gpu_name": "NVIDIA B300"})
    assert response.status_code == 302
    node.refresh_from_db()
    assert node.description == "Rack 4, owned by the serving team"
    assert (node.gpu_name, node.last_heartbeat_at) == ("NVIDIA H200", beat)
    page = client_for(administrator).get("/catalog/nodes/").content.decode()
    assert "Rack 4, owned by the serving team" in page and "140 GiB each" in page


def test_a_fleet_manager_reads_the_nodes_but_may_not_describe_them(manager):
    node = make_node("gpu-a")
    page = client_for(manager).get("/catalog/nodes/").content.decode()
    assert "gpu-a" in page and f"/catalog/nodes/{node.pk}/edit/" not in page
    assert client_for(manager).post(f"/catalog/nodes/{node.pk}/edit/",
                                    {"description": "mine"}).status_code == 403


# ---------------------------------------------------------------------------------------------
# The nav
# ---------------------------------------------------------------------------------------------


def test_the_catalog_is_in_the_nav_of_those_who_manage_it_only(manager):
    engineer = person("engineer", "Engineer")
    assert 'href="/catalog/checkpoints/"' not in client_for(engineer).get(
        "/runs/").content.decode()
    assert 'href="/catalog/checkpoints/"' in client_for(manager).get("/runs/").content.decode()
    # An engineer reads the lists and is offered nothing to change there.
    make_checkpoint()
    page = client_for(engineer).get("/catalog/checkpoints/").content.decode()
    assert "nvidia/Qwen3-30B-A3B-FP4" in page
    assert "/catalog/checkpoints/new/" not in page and "/edit/" not in page


# ---------------------------------------------------------------------------------------------
# The launch form's starting values
# ---------------------------------------------------------------------------------------------


def selected(page: str, field: str) -> list[str]:
    """The values of the options of a select that start selected."""
    start = page.index(f'name="{field}"')
    select = page[start:page.index("</select>", start)]
    return [part.split('"')[1] for part in select.split("<option value=")[1:]
            if "selected" in part.split(">")[0]]


def test_a_select_with_a_single_choice_starts_on_it():
    owner = person("owner", "Engineer")
    node, checkpoint, runtime = make_node("gpu-a"), make_checkpoint(), make_runtime()
    make_checkpoint(repo="other/unapproved", approved=False)  # not a choice
    page = client_for(owner).get("/runs/new/").content.decode()
    assert selected(page, "node") == [str(node.pk)]
    assert selected(page, "checkpoint") == [str(checkpoint.pk)]
    assert selected(page, "runtime") == [str(runtime.pk)]
    make_node("gpu-b")
    page = client_for(owner).get("/runs/new/").content.decode()
    assert selected(page, "node") == [""]


def test_the_single_nodes_gpu_memory_starts_the_grid_at_vllms_own_defaults():
    make_node("gpu-a", gpu_memory_mib=143771)  # an H200: 140 GiB
    form = LaunchForm()
    assert form["max_num_seqs"].value() == "1024"
    assert form["max_num_batched_tokens"].value() == "8192"
    assert form.batch_defaults_notes() == [
        "gpu-a: vLLM's own defaults there are --max-num-seqs 1024, "
        "--max-num-batched-tokens 8192."]
    make_node("gpu-b", gpu_memory_mib=49140, gpu_name="NVIDIA L40S")
    form = LaunchForm()  # two nodes: the engine's own choice, named for each
    assert (form["max_num_seqs"].value(), form["max_num_batched_tokens"].value()) == (None, None)
    assert "gpu-b: vLLM's own defaults there are --max-num-seqs 256" in form.batch_defaults_notes()[1]


# One GPU's memory as nvidia-smi reports it, in MiB.
GPUS = [
    ("NVIDIA H200", 143771, BatchDefaults(1024, 8192)),
    ("NVIDIA H100 80GB HBM3", 81559, BatchDefaults(1024, 8192)),
    ("NVIDIA A100-SXM4-80GB", 81920, BatchDefaults(256, 2048)),
    ("NVIDIA B200", 183359, BatchDefaults(1024, 16384)),
    ("NVIDIA L40S", 46068, BatchDefaults(256, 2048)),
    ("NVIDIA GH200 69GB", 70 * 1024 - 1, BatchDefaults(256, 2048)),
    ("NVIDIA X", 70 * 1024, BatchDefaults(1024, 8192)),
    ("NVIDIA Y", 160 * 1024 - 1, BatchDefaults(1024, 8192)),
    ("NVIDIA A100 Y", 160 * 1024, BatchDefaults(1024, 16384)),  # no A100 rule at 160 GiB
]


@pytest.mark.parametrize("gpu_name, memory_mib, defaults", GPUS)
def test_vllms_defaults_follow_one_gpus_memory(gpu_name, memory_mib, defaults):
    node = Node(queue="n", launch_style="serve", gpu_name=gpu_name, gpu_memory_mib=memory_mib)
    assert vllm_batch_defaults(node) == defaults


def test_a_cpu_node_gets_vllms_cpu_defaults_and_an_unreported_gpu_none():
    assert vllm_batch_defaults(Node(queue="c", launch_style="cpu")) == BatchDefaults(128, 2048)
    assert vllm_batch_defaults(Node(queue="g", launch_style="serve", gpu_count=8)) is None


def test_the_defaults_are_those_vllm_itself_picks_for_vllm_serve(monkeypatch):
    """Against the installed vLLM's own EngineArgs.get_batch_defaults, on stand-in platforms."""
    arg_utils = pytest.importorskip("vllm.engine.arg_utils")
    from vllm.usage.usage_lib import UsageContext

    for gpu_name, memory_mib, _ in GPUS:
        platform = types.SimpleNamespace(
            get_device_total_memory=lambda m=memory_mib: m * 1024 * 1024,
            get_device_name=lambda n=gpu_name: n,
            is_tpu=lambda: False,
            is_cpu=lambda: False,
        )
        monkeypatch.setattr(arg_utils, "current_platform", platform)
        tokens, seqs = arg_utils.EngineArgs.get_batch_defaults(world_size=1)
        node = Node(queue="n", launch_style="serve", gpu_name=gpu_name, gpu_memory_mib=memory_mib)
        theirs = BatchDefaults(seqs[UsageContext.OPENAI_API_SERVER],
                               tokens[UsageContext.OPENAI_API_SERVER])
        assert vllm_batch_defaults(node) == theirs, gpu_name
    cpu = types.SimpleNamespace(get_device_total_memory=lambda: 0, get_device_name=lambda: "cpu",
                                is_tpu=lambda: False, is_cpu=lambda: True)
    monkeypatch.setattr(arg_utils, "current_platform", cpu)
    tokens, seqs = arg_utils.EngineArgs.get_batch_defaults(world_size=1)
    assert vllm_batch_defaults(Node(queue="c", launch_style="cpu")) == BatchDefaults(
        seqs[UsageContext.OPENAI_API_SERVER], tokens[UsageContext.OPENAI_API_SERVER])
