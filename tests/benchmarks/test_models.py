import pytest
from django.db import IntegrityError, transaction

from benchmarks.models import Benchmark, Caveat, Checkpoint, ExternalReference
from benchmarks.storage.points import store_point
from tests.rows import make_benchmark, make_checkpoint, make_point_result, make_workload

pytestmark = pytest.mark.django_db


def test_a_checkpoint_revision_must_be_a_commit_not_a_branch():
    with pytest.raises(IntegrityError):
        Checkpoint.objects.create(repo="Qwen/Qwen3-30B-A3B", revision="main")


def test_a_local_checkpoint_may_have_no_revision():
    assert Checkpoint.objects.create(repo="/models/tiny").revision == ""


@pytest.mark.parametrize(("repo", "name"), [
    ("nvidia/Qwen3-30B-A3B-FP4", "nvidia/Qwen3-30B-A3B-FP4"),
    ("/srv/people/alice/var/tiny-model", "tiny-model"),
    ("./models/qwen3/", "qwen3"),
    ("~alice/weights", "weights"),
])
def test_a_checkpoint_is_named_by_its_hub_id_or_its_folder_never_its_path(repo, name):
    checkpoint = Checkpoint(repo=repo, revision="22b68337" + "0" * 32, precision="bf16")
    assert checkpoint.display_name == name
    assert checkpoint.display_label == f"{name}@22b68337 bf16"
    assert str(checkpoint) == f"{repo}@22b68337 bf16"  # the admin and the run page keep it


def test_a_launched_benchmark_needs_a_node():
    with pytest.raises(IntegrityError):
        Benchmark.objects.create(name="x", workload=make_workload(), plan={},
                                 checkpoint=make_checkpoint())


def test_an_imported_benchmark_may_lack_node_runtime_and_checkpoint():
    b = Benchmark.objects.create(name="x", source="imported", workload=make_workload(), plan={},
                                 state="succeeded")
    assert b.node is None


def test_an_unfinished_benchmark_cannot_have_a_finish_time():
    from django.utils import timezone

    benchmark = make_benchmark()
    with pytest.raises(IntegrityError):
        Benchmark.objects.filter(pk=benchmark.pk).update(finished_at=timezone.now())


def test_a_caveat_is_attached_to_exactly_one_of_benchmark_and_point():
    benchmark = make_benchmark(state="running")
    point = store_point(benchmark, make_point_result())
    with pytest.raises(IntegrityError), transaction.atomic():
        Caveat.objects.create(benchmark=benchmark, point=point, kind="scope", code="x", text="x")
    with pytest.raises(IntegrityError):
        Caveat.objects.create(kind="scope", code="y", text="y")


def test_a_point_key_is_unique_within_its_benchmark():
    benchmark = make_benchmark(state="running")
    store_point(benchmark, make_point_result())
    with pytest.raises(IntegrityError):
        store_point(benchmark, make_point_result())


def test_a_reference_cannot_be_unlisted_before_it_was_recorded():
    with pytest.raises(IntegrityError):
        ExternalReference.objects.create(
            source="vendor", url="https://example.com", recorded_on="2026-05-01", value=10,
            gpu_name="RTX PRO 6000", workload_spec="1000 in / 1000 out",
            no_longer_listed_on="2026-04-01",
        )
