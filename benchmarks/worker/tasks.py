"""The Celery side: the task that runs a benchmark, the one that imports an upload, and the
worker's node registration.

The benchmark task takes an id, claims the row with a conditional UPDATE and hands the work to
one plain function, execute_benchmark(), which calls the runner through its one seam (run_plan)
and stores each point as soon as it arrives: a worker killed mid-sweep keeps every finished
point.

Each task's name is written out and never changes: queued messages, beat schedules and
CELERY_TASK_ROUTES name a task by it, so it is the name the task was first registered under, not
its module's path.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import traceback
from typing import Any

from celery import shared_task
from celery.exceptions import SoftTimeLimitExceeded
from celery.signals import worker_ready
from django.conf import settings
from django.db import DatabaseError, connection

from benchmarks.launch import estimates, plans
from benchmarks.models import Benchmark, Endpoint, EngineStart, ResultImport
from benchmarks.security import vault
from benchmarks.storage import columnar, regression_record
from benchmarks.storage.points import store_point, stored_observations
from benchmarks.worker import import_jobs, lifecycle
from benchmarks.worker.beats import NodeHeartbeat, RunMonitor
from runner.engine.endpoint import NO_CREDENTIALS, Credentials, redact
from runner.engine.provenance import collect_hardware
from runner.schema.plan import SweepPlan
from runner.schema.search_record import SearchRecord
from runner.sweep import Cancelled, EndControlMissed, run_plan

log = logging.getLogger(__name__)
State = Benchmark.State

def enqueue_benchmark(benchmark: Benchmark) -> None:
    """Send the id (never the row) to its node's queue; raises if the broker is unreachable.

    Called after the row is committed, so the worker always finds it.
    """
    limits = {
        "soft_time_limit": settings.CELERY_TASK_SOFT_TIME_LIMIT,
        "time_limit": settings.CELERY_TASK_TIME_LIMIT,
    }
    # A fresh connection per launch rather than the app's pool: launches are rare, and a pool
    # can hold a connection that went stale while the broker was restarted.
    if benchmark.node is None:
        raise ValueError(f"benchmark {benchmark.pk} has no node to run on")
    with run_benchmark.app.connection_for_write() as connection:
        result = run_benchmark.apply_async(
            args=[benchmark.pk], queue=benchmark.node.queue, connection=connection, **limits
        )
    Benchmark.objects.filter(pk=benchmark.pk).update(celery_task_id=result.id)


@shared_task(bind=True, name="benchmarks.tasks.run_benchmark")
def run_benchmark(self, benchmark_id: int) -> None:
    queue = settings.HEADROOM_NODE_QUEUE
    if not lifecycle.claim(benchmark_id, self.request.id or "", queue):
        # Delivered twice, cancelled while queued, deleted, or another node's: nothing to do
        # here. Another node's run stays queued for its own worker (or the user's cancel).
        log.info("benchmark %s not claimable by node %s: another delivery has it, it is "
                 "final, or it runs on another node", benchmark_id, queue)
        return
    allow_child_processes()
    execute_benchmark(benchmark_id)


def allow_child_processes() -> None:
    """Let the runner start its client worker processes from a Celery prefork child.

    The runner's client runs in worker processes (one per replica, and one even for a single
    engine, so it never shares this process's GIL with the sampler and the monitor). Celery's
    pool (billiard) marks its children daemonic, and multiprocessing refuses to start children
    from a daemonic process; the rule guards against orphans, and these cannot be orphaned:
    they die with the thread that started them (PR_SET_PDEATHSIG, runner/client/workers.py) and the
    engines' guard watches this process. billiard also leaves its own AuthenticationString
    class here, which multiprocessing's spawn refuses to pickle; the authkey setter would wrap a
    new key in billiard's class again, so the stdlib's class is set directly.
    """
    process = multiprocessing.current_process()
    process.daemon = False
    # Private names typeshed does not declare: this reaches into multiprocessing on purpose.
    stdlib_class = multiprocessing.process.AuthenticationString  # type: ignore[attr-defined]
    process._config["authkey"] = stdlib_class(os.urandom(32))  # type: ignore[attr-defined]


def execute_benchmark(benchmark_id: int) -> str:
    """Run a claimed (running) benchmark to a final state; returns that state.

    The stored plan is checked again first (plans.launchable_plan); a refused plan fails the
    run with the reason and starts nothing. A run against a registered endpoint gets the
    endpoint's API key and headers, decrypted here and held only in this process's memory:
    every message this run stores or logs has them replaced by [secret] first.
    """
    benchmark = Benchmark.objects.select_related(
        "checkpoint", "runtime", "node", "endpoint", "endpoint__node"
    ).get(pk=benchmark_id)
    try:
        plan = plans.launchable_plan(benchmark, launch_style=settings.HEADROOM_LAUNCH_STYLE)
        credentials = endpoint_credentials(benchmark.endpoint)
    except (plans.PlanRefused, vault.SecretUnreadable, ValueError) as exc:
        log.warning("benchmark %s refused: %s", benchmark_id, exc)
        lifecycle.finish(
            benchmark_id,
            State.FAILED,
            error_type=type(exc).__name__,
            error_message=f"Not started: {exc}.",
            note="refused before any engine started",
        )
        return State.FAILED
    workdir = settings.HEADROOM_WORK_DIR / str(benchmark.code)
    workdir.mkdir(parents=True, exist_ok=True)
    # Points already stored (a resumed run) are not measured again; a search reads them.
    skip_keys = frozenset(benchmark.points.values_list("key", flat=True))
    known = stored_observations(benchmark) if plan.search is not None and skip_keys else {}
    cancel = threading.Event()
    note = "all points measured" if plan.search is None else "search finished"
    with RunMonitor(benchmark_id, cancel) as monitor:
        try:
            for result in run_plan(
                plan, workdir, skip_keys=skip_keys, cancel=cancel, on_progress=monitor.report,
                on_engine_started=lambda seconds: record_engine_start(benchmark, seconds),
                data_dir=settings.HEADROOM_DATA_DIR,  # a plan's dataset is named inside it
                credentials=credentials,
                on_search=lambda record: record_search(benchmark_id, record),
                known=known,
                start_prior_s=search_start_prior_s(benchmark, plan),
            ):
                # The records are the point's largest part (docs/performance.md, "Memory of
                # large points"): given up to the encoder, they are freed a block at a time as
                # they are spilled, never held beside their blob.
                with columnar.RequestEncoder() as requests:
                    requests.take(result.requests)
                    store_point(benchmark, result, requests=requests)
        except EndControlMissed as exc:
            # Every planned point is stored: the run succeeded, and its note says what is missing.
            log.warning("benchmark %s: %s", benchmark_id, exc)
            note = redact(f"all points measured but the {exc}", credentials)
        except Cancelled:
            lifecycle.finish(benchmark_id, State.CANCELLED, note="cancelled; engine stopped")
            return State.CANCELLED
        except SoftTimeLimitExceeded:
            lifecycle.finish(
                benchmark_id,
                State.FAILED,
                error_type="TimeLimitExceeded",
                error_message=f"The run passed its soft time limit "
                f"({settings.CELERY_TASK_SOFT_TIME_LIMIT} s). Finished points are kept.",
            )
            return State.FAILED
        except Exception as exc:  # noqa: BLE001 - recorded on the row and logged with its traceback
            detail = traceback.format_exc()
            log_tail = getattr(exc, "log_tail", None)
            if log_tail:
                detail += f"\n--- engine log tail ---\n{log_tail}"
            detail = redact(detail, credentials)
            log.error("benchmark %s failed:\n%s", benchmark_id, detail)
            lifecycle.finish(
                benchmark_id,
                State.FAILED,
                error_type=type(exc).__name__,
                error_message=redact(str(exc) or type(exc).__name__, credentials),
                error_detail=detail,
            )
            return State.FAILED
    if lifecycle.finish(benchmark_id, State.SUCCEEDED, note=note):
        _judge_against_baseline(benchmark_id)
    return State.SUCCEEDED


def _judge_against_baseline(benchmark_id: int) -> None:
    """The finished run's verdict against its plan's baseline; a point that no longer reads
    costs the run its verdict (the run page says why), never its success."""
    try:
        regression_record.judge_run(benchmark_id)
    except (DatabaseError, ValueError):
        log.exception("benchmark %s: no regression verdict", benchmark_id)


def record_search(benchmark_id: int, record: SearchRecord) -> None:
    """Keep the search's record on the run as it goes: the page shows it while it runs."""
    Benchmark.objects.filter(pk=benchmark_id).update(search=record.model_dump(mode="json"))


def search_start_prior_s(benchmark: Benchmark, plan: SweepPlan) -> float | None:
    """What an engine start should take for an adaptive sweep's cost model: this node's last
    starts of the checkpoint. None for a grid, or a run on an endpoint (it starts no engine)."""
    if plan.search is None or benchmark.endpoint_id is not None:
        return None
    if benchmark.node is None or benchmark.checkpoint is None:  # a launched run has both
        return None
    return estimates.start_prior_s(benchmark.node, benchmark.checkpoint)


def record_engine_start(benchmark: Benchmark, seconds: float) -> None:
    """Keep a start the runner measured, for the next launch's estimate on this node. A
    database error is logged, not raised: the run goes on without the record."""
    if benchmark.node is None or benchmark.checkpoint is None:  # a launched run has both
        return
    try:
        EngineStart.objects.record(benchmark.node, benchmark.checkpoint, seconds)
    except DatabaseError:
        log.exception("benchmark %s: engine start of %.0f s not recorded", benchmark.pk, seconds)


def endpoint_credentials(endpoint: Endpoint | None) -> Credentials:
    """The endpoint's API key and headers for the runner; none for a run that starts engines.
    SecretUnreadable when SECRET_KEY changed since they were stored; ValueError (naming the
    header, never a value) for a stored header that could not be sent."""
    if endpoint is None:
        return NO_CREDENTIALS
    return Credentials.of(
        vault.decrypt(endpoint.api_key_encrypted),
        vault.decrypt_headers(endpoint.extra_headers_encrypted),
    )


def collect_hardware_facts() -> dict[str, Any]:
    """This host's GPU facts (runner.engine.provenance), as the node row stores them."""
    return collect_hardware().model_dump()


@worker_ready.connect
def register_worker_node(sender: object = None, **_: object) -> None:
    queue = settings.HEADROOM_NODE_QUEUE
    consumed = {q.name for q in getattr(getattr(sender, "task_consumer", None), "queues", [])}
    if consumed and queue not in consumed:
        # Registering would offer the node in the form while nobody listens on its queue; a
        # worker beside the web server that only parses uploads is no node at all.
        if consumed != {settings.HEADROOM_IMPORT_QUEUE}:
            log.error("HEADROOM_NODE_QUEUE=%s but this worker consumes %s: start it with -Q %s",
                      queue, sorted(consumed), queue)
        return
    node = lifecycle.register_node(queue, settings.HEADROOM_LAUNCH_STYLE, collect_hardware_facts())
    orphans = lifecycle.fail_orphans(node)
    lifecycle.reap_stale()
    log.info("node %s registered (%s); %d orphaned run(s) failed", queue, node, orphans)
    # Pool children may be forked later from this process: they must not share its socket.
    connection.close()
    NodeHeartbeat(queue).start()


def enqueue_import(result_import: ResultImport) -> None:
    """Send an upload's import id to the import queue (CELERY_TASK_ROUTES); raises if the
    broker is unreachable. Called after its row and file are committed, as a launch is."""
    with import_result_file.app.connection_for_write() as connection:
        import_result_file.apply_async(args=[result_import.pk], connection=connection)


@shared_task(name="benchmarks.tasks.import_result_file")
def import_result_file(import_id: int) -> None:
    """Parse and store an uploaded result file, on a worker that reads the web's import folder."""
    import_jobs.run_result_import(import_id)
