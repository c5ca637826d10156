import pytest
from django.db import IntegrityError, transaction

from benchmarks.models import Benchmark, Caveat, Checkpoint, ExternalReference
from benchmarks.points import store_point
from tests.rows import make_benchmark, make_checkpoint, make_point_result, make_workload

pytestmark = pytest.mark.django_db


def test_a_checkpoint_revision_must_be_a_commit_not_a_branch():
    with pytest.raises(IntegrityError):
        Checkpoint.objects.create(repo="Qwen/Qwen3-30B-A3B", revision="main")


def test_a_local_checkpoint_may_have_no_revision():
    assert Checkpoint.objects.create(repo="/models/tiny").revision == ""


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
