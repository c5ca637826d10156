"""The worker task, with the runner's run_plan replaced by a generator of factory points."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import DatabaseError
from django.utils import timezone

from benchmarks.models import Benchmark, EngineStart, Node
from benchmarks.worker import beats, lifecycle, tasks
from runner.schema.search_record import SearchCell, SearchRecord, SearchSpec
from runner.sweep import Cancelled, EndControlMissed, Progress
from tests.rows import make_benchmark, make_checkpoint, make_node, make_point_result

pytestmark = pytest.mark.django_db


class FakeRunPlan:
    """Records its calls, reports the engine starts it is given, yields the points it is given,
    then does what `then` says."""

    def __init__(self, points, then=None, starts=(), searches=()):
        self.points = points
        self.then = then
        self.starts = starts
        self.searches = searches  # one search record after each point
        self.calls = []

    def __call__(self, plan, workdir, *, skip_keys, cancel, on_progress, on_engine_started,
                 data_dir, credentials=None, on_search=None, known=None, start_prior_s=None):
        self.calls.append({"plan": plan, "skip_keys": skip_keys, "data_dir": data_dir,
                           "known": known, "start_prior_s": start_prior_s})
        for seconds in self.starts:
            on_engine_started(seconds)
        for i, point in enumerate(self.points):
            on_progress(Progress(i, len(self.points), 5, 10, f"measuring {point.key}"))
            yield point
            if i < len(self.searches):
                on_search(self.searches[i])
        if self.then is not None:
            self.then(cancel)


@pytest.fixture(autouse=True)
def work_dir(settings, tmp_path):
    settings.HEADROOM_WORK_DIR = tmp_path


@pytest.fixture(autouse=True)
def worker_of_gpu_a(settings):
    """These tests run as the worker of make_node()'s node: gpu-a, engines by `vllm serve`."""
    settings.HEADROOM_NODE_QUEUE = "gpu-a"
    settings.HEADROOM_LAUNCH_STYLE = "serve"


def install(monkeypatch, fake):
    monkeypatch.setattr(tasks, "run_plan", fake)
    return fake


def test_a_claimed_run_stores_each_point_and_succeeds(monkeypatch, settings):
    benchmark = make_benchmark()
    fake = install(monkeypatch, FakeRunPlan(
        [make_point_result(max_num_seqs=256), make_point_result(max_num_seqs=512)]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert benchmark.state == "succeeded"
    assert benchmark.points.count() == 2
    assert benchmark.progress == 1.0
    assert benchmark.started_at and benchmark.finished_at
    assert fake.calls[0]["plan"].name == "test sweep"
    assert fake.calls[0]["data_dir"] == settings.HEADROOM_DATA_DIR  # datasets only from there


def test_each_engine_start_the_runner_reports_is_kept_for_the_runs_node_and_checkpoint(
    monkeypatch,
):
    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result()], starts=[52.5, 61.0]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    starts = EngineStart.objects.of(benchmark.node, benchmark.checkpoint)
    assert sorted(starts.values_list("seconds", flat=True)) == [52.5, 61.0]
    # Dated when its engine was launched, its seconds before the runner reported it.
    assert all(s.started_at <= timezone.now() - timedelta(seconds=s.seconds) for s in starts)


def test_a_start_that_cannot_be_stored_does_not_fail_the_run(monkeypatch):
    def refuse(*args, **kwargs):
        raise DatabaseError("connection lost")

    monkeypatch.setattr(EngineStart.objects, "record", refuse)
    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result()], starts=[52.5]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert benchmark.state == "succeeded" and benchmark.points.count() == 1


def test_a_node_keeps_only_the_last_five_starts_of_a_checkpoint():
    node, checkpoint, other = make_node(), make_checkpoint(), make_checkpoint(repo="/models/x")
    EngineStart.objects.record(node, other, 90.0)
    for seconds in (60.0, 59.0, 58.0, 57.0, 56.0, 55.0, 54.0):  # each started a second later
        EngineStart.objects.record(node, checkpoint, seconds)
    kept = EngineStart.objects.of(node, checkpoint).values_list("seconds", flat=True)
    assert list(kept) == [54.0, 55.0, 56.0, 57.0, 58.0]  # newest first
    assert list(EngineStart.objects.of(node, other).values_list("seconds", flat=True)) == [90.0]


def test_a_task_delivered_twice_runs_the_sweep_once(monkeypatch):
    benchmark = make_benchmark()
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    tasks.run_benchmark.apply(args=[benchmark.pk])
    assert len(fake.calls) == 1
    assert Benchmark.objects.get(pk=benchmark.pk).points.count() == 1


def test_a_run_cancelled_while_queued_never_starts(monkeypatch):
    benchmark = make_benchmark()
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    assert lifecycle.request_cancel(benchmark) == "cancelled"
    tasks.run_benchmark.apply(args=[benchmark.pk])
    assert fake.calls == []
    assert Benchmark.objects.get(pk=benchmark.pk).state == "cancelled"


def test_a_task_for_a_deleted_run_exits_cleanly(monkeypatch):
    fake = install(monkeypatch, FakeRunPlan([]))
    result = tasks.run_benchmark.apply(args=[987654])
    assert result.successful() and fake.calls == []


def test_a_runner_error_fails_the_run_and_keeps_the_finished_points(monkeypatch):
    class EngineDied(RuntimeError):
        log_tail = "torch.OutOfMemoryError: CUDA out of memory"

    def explode(cancel):
        raise EngineDied("engine exited with code 1")

    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result()], then=explode))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert benchmark.state == "failed"
    assert benchmark.error_type == "EngineDied"
    assert benchmark.error_message == "engine exited with code 1"
    assert "CUDA out of memory" in benchmark.error_detail
    assert benchmark.points.count() == 1


def test_a_missed_end_control_keeps_the_points_and_the_run_succeeds_saying_so(monkeypatch):
    def missed(cancel):
        raise EndControlMissed("end control (seqs=256 started again after the last config): "
                               "engine exited with code 1")

    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result(), make_point_result(repeat=1)],
                                     then=missed))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert benchmark.state == "succeeded" and benchmark.error_message == ""
    assert benchmark.progress_note == (
        "all points measured but the end control (seqs=256 started again after the last "
        "config): engine exited with code 1")
    assert benchmark.points.count() == 2


def test_a_soft_time_limit_fails_the_run_with_the_reason(monkeypatch):
    def time_out(cancel):
        raise SoftTimeLimitExceeded()

    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result()], then=time_out))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert (benchmark.state, benchmark.error_type) == ("failed", "TimeLimitExceeded")
    assert benchmark.points.count() == 1


def test_resuming_skips_the_points_already_stored(monkeypatch):
    from benchmarks.storage.points import store_point

    benchmark = make_benchmark()
    stored = store_point(benchmark, make_point_result(max_num_seqs=256))
    fake = install(monkeypatch, FakeRunPlan([]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    assert fake.calls[0]["skip_keys"] == frozenset({stored.key})


def with_search(benchmark):
    spec = SearchSpec()
    Benchmark.objects.filter(pk=benchmark.pk).update(
        plan={**benchmark.plan, "search": spec.model_dump(mode="json")})
    return spec


def test_a_search_keeps_its_record_on_the_run_as_it_goes(monkeypatch):
    benchmark = make_benchmark()
    spec = with_search(benchmark)
    record = SearchRecord(spec=spec, cells=[SearchCell(label="seqs=256", status="searched",
                                                        reason="corner", points=1)],
                          points_measured=1, finished=True)
    install(monkeypatch, FakeRunPlan([make_point_result(max_num_seqs=256)], searches=[record]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert benchmark.state == "succeeded"
    assert SearchRecord.model_validate(benchmark.search) == record
    assert benchmark.progress_note == "search finished"


def test_a_resumed_search_reads_its_stored_points_instead_of_skipping_them_blind(monkeypatch):
    from benchmarks.storage.points import store_point

    benchmark = make_benchmark()
    with_search(benchmark)
    stored = store_point(benchmark, make_point_result(max_num_seqs=256, output_throughput=1234.0))
    fake = install(monkeypatch, FakeRunPlan([]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    known = fake.calls[0]["known"]
    assert list(known) == [stored.key]
    assert known[stored.key].output_throughput == pytest.approx(1234.0)
    assert known[stored.key].valid


def test_a_search_is_given_the_median_start_of_its_own_node_and_checkpoint_only(monkeypatch):
    benchmark = make_benchmark()
    with_search(benchmark)
    elsewhere = make_node("gpu-b", hostname="gpu-b.lab")
    other_model = make_checkpoint(repo="/models/other")
    for seconds in (40.0, 200.0, 50.0):
        EngineStart.objects.record(benchmark.node, benchmark.checkpoint, seconds)
    EngineStart.objects.record(elsewhere, benchmark.checkpoint, 10.0)  # another node's disk
    EngineStart.objects.record(benchmark.node, other_model, 900.0)  # another model
    fake = install(monkeypatch, FakeRunPlan([]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    assert fake.calls[0]["start_prior_s"] == 50.0


def test_a_search_with_no_start_measured_here_gets_no_prior_and_a_grid_none(monkeypatch):
    searched = make_benchmark()
    with_search(searched)
    EngineStart.objects.record(make_node("gpu-b", hostname="gpu-b.lab"), searched.checkpoint,
                               60.0)
    fake = install(monkeypatch, FakeRunPlan([]))
    tasks.run_benchmark.apply(args=[searched.pk])
    grid = make_benchmark(searched.node)
    EngineStart.objects.record(grid.node, grid.checkpoint, 60.0)
    tasks.run_benchmark.apply(args=[grid.pk])
    assert [call["start_prior_s"] for call in fake.calls] == [None, None]


def test_progress_reported_by_the_runner_is_written_with_the_next_heartbeat():
    benchmark = make_benchmark(state="running")
    monitor = beats.RunMonitor(benchmark.pk, threading.Event())
    monitor.report(Progress(1, 4, 50, 100, "measuring burst 2000"))
    benchmark.refresh_from_db()
    assert benchmark.progress == 0.0  # report() itself never touches the database
    monitor.beat_once()
    benchmark.refresh_from_db()
    assert benchmark.progress == pytest.approx((1 + 0.5) / 4)
    assert benchmark.progress_note == "measuring burst 2000"
    assert benchmark.heartbeat_at is not None


def test_report_is_safe_to_call_inside_the_runners_event_loop():
    import asyncio

    benchmark = make_benchmark(state="running")
    monitor = beats.RunMonitor(benchmark.pk, threading.Event())

    async def client_loop():
        monitor.report(Progress(0, 1, 1, 2, "request done"))

    asyncio.run(client_loop())
    assert monitor.latest.note == "request done"


@pytest.mark.django_db(transaction=True)
def test_a_cancel_request_reaches_the_runner_and_the_run_ends_cancelled(monkeypatch, settings):
    settings.HEADROOM_HEARTBEAT_S = 0.05
    seen = threading.Event()

    def wait_for_cancel(cancel):
        lifecycle.request_cancel(Benchmark.objects.get(pk=benchmark.pk))  # the user clicks
        if cancel.wait(timeout=10):
            seen.set()
            raise Cancelled()

    benchmark = make_benchmark()
    install(monkeypatch, FakeRunPlan([make_point_result()], then=wait_for_cancel))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert seen.is_set()
    assert benchmark.state == "cancelled"
    assert benchmark.points.count() == 1


def test_the_reaper_fails_only_runs_with_a_stale_heartbeat(settings):
    settings.HEADROOM_STALE_AFTER_S = 300
    node = make_node()
    now = timezone.now()
    stale = make_benchmark(node=node, state="running", heartbeat_at=now - timedelta(seconds=301))
    fresh = make_benchmark(node=node, state="running", heartbeat_at=now - timedelta(seconds=10))
    assert lifecycle.reap_stale(now) == 1
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert (stale.state, stale.error_type) == ("failed", "WorkerLost")
    assert "Finished points are kept" in stale.error_message
    assert fresh.state == "running"


def test_a_reaped_run_is_not_turned_back_into_a_success_by_its_late_worker():
    benchmark = make_benchmark(state="running", heartbeat_at=timezone.now() - timedelta(days=1))
    lifecycle.reap_stale()
    assert lifecycle.finish(benchmark.pk, "succeeded") is False
    assert Benchmark.objects.get(pk=benchmark.pk).state == "failed"


def test_a_worker_registers_its_node_and_refreshes_it_on_restart():
    node = lifecycle.register_node("gpu-b", "serve", {"host": "b.lab", "gpu_name": "NVIDIA H200",
                                                      "gpu_count": 8, "gpu_memory_mib": 143771})
    assert (node.gpu_count, node.hostname, node.launch_style) == (8, "b.lab", "serve")
    again = lifecycle.register_node("gpu-b", "serve", {"host": "b.lab", "gpu_name": "NVIDIA H200",
                                                       "gpu_count": 7})
    assert again.pk == node.pk and again.gpu_count == 7
    assert Node.objects.count() == 1


def test_a_restarted_worker_fails_the_run_its_predecessor_left_running():
    node = make_node("gpu-c")
    orphan = make_benchmark(node=node, state="running", heartbeat_at=timezone.now())
    other = make_benchmark(node=make_node("gpu-d"), state="running", heartbeat_at=timezone.now())
    assert lifecycle.fail_orphans(node) == 1
    assert Benchmark.objects.get(pk=orphan.pk).state == "failed"
    assert Benchmark.objects.get(pk=other.pk).state == "running"


# ---------------------------------------------------------------------------------------------
# The worker checks the stored plan before it starts anything
# ---------------------------------------------------------------------------------------------


def test_a_worker_does_not_claim_another_nodes_run(monkeypatch):
    benchmark = make_benchmark(node=make_node("gpu-b"))
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert fake.calls == []
    assert (benchmark.state, benchmark.started_at) == ("queued", None)  # for gpu-b's worker


def edit_plan(benchmark, change):
    plan = benchmark.plan
    change(plan)
    Benchmark.objects.filter(pk=benchmark.pk).update(plan=plan)


def add_extra_args(*args):
    def change(plan):
        plan["engine_configs"][0]["extra_args"] = list(args)
    return change


def set_in(group, name, value):
    def change(plan):
        plan[group][name] = value
    return change


def claim_trust_for(*args):
    """The plan asks for code-loading flags and says its checkpoint is trusted."""
    def change(plan):
        add_extra_args(*args)(plan)
        set_in("checkpoint", "trusted", True)(plan)
    return change


@pytest.mark.parametrize(
    "change, message",
    [
        # The row decides whether the checkpoint is trusted, not what the stored plan says.
        (claim_trust_for("--trust-remote-code"), "--trust-remote-code can load code"),
        (set_in("launch", "image", "attacker/evil:latest"), "launch image 'attacker/evil:latest'"),
        (set_in("launch", "env", {"LD_PRELOAD": "/tmp/evil.so"}), "may not set LD_PRELOAD"),
        (set_in("launch", "style", "cpu"), "launch style 'cpu' is not this node's 'serve'"),
        (set_in("checkpoint", "model", "--trust-remote-code"), "starts with '-'"),
        (set_in("checkpoint", "model", "attacker-org/evil-model"),
         "checkpoint model 'attacker-org/evil-model' is not the approved checkpoint's"),
        (set_in("checkpoint", "model", "/etc"), "neither a hub repo id"),
        (add_extra_args("-tp", "8"), "short flags are not accepted"),
    ],
)
def test_a_stored_plan_the_form_would_refuse_fails_the_run_before_any_engine(
    monkeypatch, change, message
):
    benchmark = make_benchmark()
    edit_plan(benchmark, change)
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert fake.calls == []
    assert (benchmark.state, benchmark.error_type) == ("failed", "PlanRefused")
    assert benchmark.error_message.startswith("Not started: ")
    assert message in benchmark.error_message


@pytest.mark.parametrize(
    "row, message",
    [("checkpoint", "is not approved for launching"),
     ("runtime", "is not an approved vLLM runtime")],
)
def test_a_run_whose_checkpoint_or_runtime_lost_its_approval_never_starts(
    monkeypatch, row, message
):
    benchmark = make_benchmark()
    revoked = getattr(benchmark, row)
    type(revoked).objects.filter(pk=revoked.pk).update(approved=False)
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    benchmark.refresh_from_db()
    assert fake.calls == []
    assert benchmark.state == "failed" and message in benchmark.error_message


def test_a_trusted_checkpoints_run_may_use_code_loading_flags(monkeypatch):
    benchmark = make_benchmark(checkpoint=make_checkpoint(trusted=True))
    edit_plan(benchmark, claim_trust_for("--trust-remote-code", "--tokenizer", "org/tok"))
    fake = install(monkeypatch, FakeRunPlan([make_point_result()]))
    tasks.run_benchmark.apply(args=[benchmark.pk])
    assert Benchmark.objects.get(pk=benchmark.pk).state == "succeeded"
    extra_args = fake.calls[0]["plan"].engine_configs[0].extra_args
    assert extra_args == ["--trust-remote-code", "--tokenizer", "org/tok"]


class _Consumer:
    """What register_worker_node reads off the Celery worker: the queues it consumes."""

    def __init__(self, *names: str) -> None:
        self.task_consumer = type("C", (), {"queues": [type("Q", (), {"name": n}) for n in names]})


def test_a_worker_that_only_parses_uploads_registers_no_node(settings, monkeypatch):
    started = []
    monkeypatch.setattr(beats.NodeHeartbeat, "start", lambda self: started.append(self))
    # A real worker drops its connection before forking; inside a test transaction it stays.
    monkeypatch.setattr(tasks.connection, "close", lambda: None)
    tasks.register_worker_node(_Consumer(settings.HEADROOM_IMPORT_QUEUE))
    assert not Node.objects.exists() and started == []
    # A worker started with the wrong -Q is not registered either: nobody would listen.
    tasks.register_worker_node(_Consumer("some-other-queue"))
    assert not Node.objects.exists()
    tasks.register_worker_node(_Consumer(settings.HEADROOM_NODE_QUEUE, "imports"))
    assert Node.objects.filter(queue=settings.HEADROOM_NODE_QUEUE).exists() and started
