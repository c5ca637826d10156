"""Before a launch, its size and estimated cost; after it, the estimate beside what it took; and
"Run again", the launch form filled in from a run.

The estimate's figures here are worked out by hand from the rows each test stores."""

from __future__ import annotations

from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from benchmarks.launch import estimates
from benchmarks.models import (
    AuditEvent,
    Benchmark,
    Checkpoint,
    Endpoint,
    EngineStart,
    Node,
    Workload,
)
from benchmarks.storage.points import store_point
from runner.schema.engine_config import Checkpoint as CheckpointSpec
from runner.schema.engine_config import EngineConfig, EngineLaunch
from runner.schema.plan import LoadSpec, SweepPlan
from runner.schema.search_record import SearchSpec
from tests.rows import (
    launch_form_data,
    make_benchmark,
    make_checkpoint,
    make_node,
    make_point_result,
    make_runtime,
)

from .test_launch import SWEEP
from .test_plan_files import form_post

pytestmark = pytest.mark.django_db

HOUR = 3600.0


@pytest.fixture
def launches(monkeypatch) -> list[Benchmark]:
    """The runs handed to the broker, in order (none reaches Redis)."""
    sent: list[Benchmark] = []
    monkeypatch.setattr("benchmarks.worker.tasks.enqueue_benchmark", sent.append)
    return sent


def launch_data(node: Node, **overrides: Any) -> dict[str, Any]:
    """The launch form as a browser posts it, before the confirmation page."""
    return launch_form_data(node, confirmed=False, **{**SWEEP, **overrides})


def sweep_plan(configs: list[EngineConfig], levels: list[int], *, style: str = "serve",
               replicas: int = 1) -> SweepPlan:
    """256 output tokens a request (WorkloadSpec's default), bursts of the levels."""
    return SweepPlan(
        checkpoint=CheckpointSpec(model="nvidia/Qwen3-30B-A3B-FP4"),
        launch=EngineLaunch(style=style),
        engine_configs=configs,
        loads=[LoadSpec(shape="burst", num_requests=n) for n in levels],
        replicas=replicas,
    )


def earlier_run(node: Node, checkpoint: Checkpoint, wall_s: float,
                points: list[tuple[int, int, float, float]], **fields: Any) -> Benchmark:
    """A succeeded launch of wall_s seconds with points (max_num_seqs, burst size, measured
    duration s, output tokens/s)."""
    started = timezone.now() - timedelta(days=1)
    fields = {"state": "succeeded", "started_at": started,
              "finished_at": started + timedelta(seconds=wall_s), **fields}
    run = make_benchmark(node=node, checkpoint=checkpoint, **fields)
    for seqs, burst, duration, tokens_per_s in points:
        store_point(run, make_point_result(max_num_seqs=seqs, num_requests=burst,
                                           duration=duration, output_throughput=tokens_per_s))
    return run


class FormFields(HTMLParser):
    """The inputs of one form of a page, as a browser would submit them."""

    def __init__(self, page: str, form_id: str) -> None:
        super().__init__()
        self.form_id, self.inside = form_id, False
        self.fields: dict[str, list[str]] = {}
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "form":
            self.inside = attributes.get("id") == self.form_id
        elif self.inside and tag == "input" and attributes.get("name"):
            self.fields.setdefault(attributes["name"] or "", []).append(
                attributes.get("value") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False


# ---------------------------------------------------------------------------------------------
# The estimate
# ---------------------------------------------------------------------------------------------


def test_the_estimate_is_the_earlier_runs_start_time_and_their_rate_at_the_nearest_load():
    node, checkpoint = make_node("gpu-a"), make_checkpoint()
    # 500 s, 300 of them in points: 200 s for its one engine start.
    earlier_run(node, checkpoint, 500, [(256, 1000, 100, 1000.0), (256, 2000, 200, 4096.0)])
    # 500 s, 100 in points: 400 s for two engine starts. Together 600 s / 3 starts = 200 s.
    earlier_run(node, checkpoint, 500, [(256, 1000, 50, 3000.0), (512, 1000, 50, 8000.0)])
    plan = sweep_plan([EngineConfig(max_num_seqs=256),
                       EngineConfig(max_num_seqs=1024)], [1000, 4000])

    got = estimates.estimate_launch(plan, node=node, checkpoint=checkpoint)

    # seqs=256 ran before: burst 1000 at the mean of its two 1000s (2,000 tok/s): 256,000
    # tokens in 128 s; burst 4000 at its nearest level, 2000 (4,096 tok/s): 1,024,000 in 250 s.
    # seqs=1024 never ran: every earlier point counts; at 1000 the mean of 1,000, 3,000 and
    # 8,000 is 4,000 tok/s (64 s), at 4000 the 2000 level again (250 s). Each config ends
    # with its control point, burst 1000 once more (128 s and 64 s).
    assert got.wall_s == pytest.approx(2 * 200 + 128 + 250 + 128 + 64 + 250 + 64)
    assert got.gpu_hours == pytest.approx(1284 / HOUR * 1)
    assert got.basis.startswith(f"From 2 earlier runs of {checkpoint} on gpu-a: 3 min per "
                                "engine start")


def test_an_earlier_runs_end_control_counts_as_one_engine_start_more():
    node, checkpoint = make_node("gpu-a"), make_checkpoint()
    # 700 s, 100 in points: seqs=256, seqs=512, then seqs=256 started again for its end control.
    run = earlier_run(node, checkpoint, 700, [(256, 1000, 40, 1000.0), (512, 1000, 40, 1000.0)])
    end = make_point_result(max_num_seqs=256, num_requests=1000, repeat=2, duration=20,
                            output_throughput=1000.0)
    end.end_control = True
    store_point(run, end)
    (past,) = estimates.past_runs(node, checkpoint)
    # Three starts, not the two distinct configs: (700 - 100) / 3 = 200 s each.
    assert past.engine_starts == 3
    assert estimates.engine_start_s([past]) == pytest.approx(200.0)


def test_with_no_earlier_run_a_stated_conservative_default_stands_in():
    node, checkpoint = make_node("gpu-a"), make_checkpoint()
    plan = sweep_plan([EngineConfig(max_num_seqs=8),
                       EngineConfig(max_num_seqs=16)], [100])
    got = estimates.estimate_launch(plan, node=node, checkpoint=checkpoint)
    # Two starts of 600 s, then 100 x 256 tokens at 50 tok/s (512 s) for each config.
    assert got.wall_s == pytest.approx(2 * 600 + 2 * 512)
    assert got.basis == (f"No earlier run of {checkpoint} on gpu-a: no engine start measured "
                         "on this node: default 10 min; a conservative default of 50 output "
                         "tokens/s per replica. No end control (one engine start more; on by "
                         "default only for a CPU engine, off where a start loads a GPU-sized "
                         "checkpoint).")


def test_before_any_run_has_finished_the_starts_measured_on_the_node_set_the_start_time():
    plan = sweep_plan([EngineConfig(max_num_seqs=8),
                       EngineConfig(max_num_seqs=16)], [100])
    got = estimates.estimate(plan, [], where="m on cpu-a", measured_starts=[50.0, 200.0, 70.0])
    # The median of 50, 70 and 200 s for each of the two starts, then 512 s a config as above.
    assert got.wall_s == pytest.approx(2 * 70 + 2 * 512)
    assert got.basis.startswith("No earlier run of m on cpu-a: measured engine starts on this "
                                "node: 3, median 70 s; a conservative default of 50 output "
                                "tokens/s per replica. No end control")


def test_an_adaptive_sweep_is_estimated_at_its_time_budget_when_that_is_less_than_the_grid():
    grid = sweep_plan([EngineConfig(max_num_seqs=8), EngineConfig(max_num_seqs=16)], [100])
    # Two starts of 70 s and 512 s a config, as above: 1164 s for the full grid.
    for budget, wall_s in ((600.0, 600.0), (5000.0, 2 * 70 + 2 * 512)):
        plan = grid.model_copy(update={"search": SearchSpec(time_budget_s=budget)})
        got = estimates.estimate(plan, [], where="m on gpu-a", measured_starts=[70.0])
        assert got.wall_s == pytest.approx(wall_s)
        assert got.gpu_hours == pytest.approx(wall_s / HOUR)
    assert got.basis.startswith("An adaptive sweep: at most the full grid's cost")
    plan = grid.model_copy(update={"search": SearchSpec(time_budget_s=600.0)})
    got = estimates.estimate(plan, [], where="m on gpu-a", measured_starts=[70.0])
    assert got.basis.startswith("An adaptive sweep with a time budget: about its 10 min, less "
                                "than the full grid's 19 min.")


def test_measured_starts_come_before_the_earlier_runs_time_outside_their_points():
    plan = sweep_plan([EngineConfig(max_num_seqs=8)], [100])
    label = EngineConfig(max_num_seqs=8).label()
    # 500 s, 300 of them in its one point: 200 s for its start, were nothing measured.
    run = estimates.PastRun(500.0, 1, (estimates.PastPoint(label, "burst", 100, 300.0, 1000.0, 1),))
    measured = estimates.estimate(plan, [run], where="m on gpu-a", measured_starts=[40.0, 60.0])
    # The median of 40 and 60 s, then 100 x 256 tokens at the run's 1,000 tok/s: 25.6 s.
    assert measured.wall_s == pytest.approx(50 + 25.6)
    assert measured.basis.startswith("From 1 earlier run of m on gpu-a: measured engine starts "
                                     "on this node: 2, median 50 s; the output tokens/s")
    derived = estimates.estimate(plan, [run], where="m on gpu-a")
    assert derived.wall_s == pytest.approx(200 + 25.6)
    assert derived.basis.startswith("From 1 earlier run of m on gpu-a: 3 min per engine start "
                                    "(wall time less the points)")


def test_only_the_starts_of_this_checkpoint_on_this_node_are_read():
    node, checkpoint = make_node("gpu-a"), make_checkpoint()
    other_checkpoint = make_checkpoint(repo="Qwen/Qwen3-8B")
    for seconds in (45.0, 65.0, 55.0):
        EngineStart.objects.record(node, checkpoint, seconds)
    EngineStart.objects.record(make_node("gpu-b"), checkpoint, 1.0)
    EngineStart.objects.record(node, other_checkpoint, 1.0)
    plan = sweep_plan([EngineConfig(max_num_seqs=8)], [100])

    got = estimates.estimate_launch(plan, node=node, checkpoint=checkpoint)
    assert got.wall_s == pytest.approx(55 + 512)  # the median of 45, 55 and 65 s
    assert "measured engine starts on this node: 3, median 55 s" in got.basis
    fresh = estimates.estimate_launch(plan, node=make_node("gpu-c"), checkpoint=checkpoint)
    assert fresh.wall_s == pytest.approx(600 + 512)
    assert "no engine start measured on this node: default 10 min" in fresh.basis


def test_a_cpu_node_that_measured_no_start_counts_a_cpu_engines_start_not_a_gpus():
    # The first demo sweep's shape: 3 configs on the CPU node, before any engine started there.
    plan = sweep_plan([EngineConfig(max_num_seqs=s) for s in (4, 16, 64)], [100], style="cpu")
    got = estimates.estimate(plan, [], where="tiny-model on cpu-local")
    # Three starts of 90 s (not 600), then 100 x 256 tokens at 50 tok/s (512 s) a config; and
    # the end control a CPU engine takes by default: seqs=4 started once more, one point more.
    assert plan.stability.end_control
    assert got.wall_s == pytest.approx(4 * 90 + 4 * 512)
    assert got.basis.endswith("The end control adds one engine start (seqs=4 again after the "
                              "last config) and one point.")
    assert estimates.plan_size(plan).engine_starts == 4
    assert estimates.plan_size(plan).points == 4
    assert got.basis.startswith("No earlier run of tiny-model on cpu-local: no engine start "
                                "measured on this CPU node: a CPU engine's start as measured "
                                "on two cores, 90 s; ")
    gpu = estimates.estimate(sweep_plan(plan.engine_configs, [100]), [], where="m on gpu-a")
    assert gpu.wall_s == pytest.approx(3 * 600 + 3 * 512)  # a GPU node keeps its default


def test_a_cpu_node_counts_its_starts_of_other_checkpoints_before_any_of_this_one():
    node = make_node("cpu-local", gpu_name="", gpu_count=0, launch_style="cpu")
    checkpoint, other = make_checkpoint(), make_checkpoint(repo="Qwen/Qwen3-8B")
    for seconds in (40.0, 70.0, 50.0):
        EngineStart.objects.record(node, other, seconds)
    EngineStart.objects.record(make_node("cpu-b", launch_style="cpu"), checkpoint, 1.0)
    plan = sweep_plan([EngineConfig(max_num_seqs=8)], [100], style="cpu")
    got = estimates.estimate_launch(plan, node=node, checkpoint=checkpoint)
    assert got.wall_s == pytest.approx(50 + 512)  # the median of 40, 50 and 70 s
    assert ("measured CPU engine starts on this node, of other checkpoints: 3, median 50 s"
            in got.basis)
    EngineStart.objects.record(node, checkpoint, 30.0)  # its own start comes first
    assert estimates.estimate_launch(plan, node=node, checkpoint=checkpoint).wall_s == (
        pytest.approx(30 + 512))


def test_runs_of_another_checkpoint_or_node_and_unfinished_runs_are_not_used():
    node, checkpoint = make_node("gpu-a"), make_checkpoint()
    fast = [(8, 100, 1.0, 100_000.0)]
    earlier_run(make_node("gpu-b"), checkpoint, 10, fast)
    earlier_run(node, make_checkpoint(repo="Qwen/Qwen3-8B"), 10, fast)
    earlier_run(node, checkpoint, 10, fast, state="failed")
    earlier_run(node, checkpoint, 10, fast, source="imported")
    plan = sweep_plan([EngineConfig(max_num_seqs=8)], [100])
    got = estimates.estimate_launch(plan, node=node, checkpoint=checkpoint)
    assert got.wall_s == pytest.approx(600 + 512)
    assert got.basis.startswith("No earlier run")
    earlier_run(node, checkpoint, 10, fast)  # the one that counts: 9 s outside its 1 s point
    assert estimates.estimate_launch(plan, node=node, checkpoint=checkpoint).wall_s == (
        pytest.approx(9 + 100 * 256 / 100_000))


def test_gpu_hours_count_every_replica_of_the_widest_config():
    plan = sweep_plan([EngineConfig(max_num_seqs=64, tensor_parallel_size=2),
                       EngineConfig(max_num_seqs=64)], [100], replicas=2)
    size = estimates.plan_size(plan)
    assert (size.engine_starts, size.points, size.gpus_held) == (2, 2, 4)
    assert (size.requests, size.output_tokens) == (2 * 100 * 2, 2 * 100 * 2 * 256)
    got = estimates.estimate(plan, [], where="m on gpu-a")
    # The default rate is per GPU: a replica of two GPUs decodes 100 tok/s, so each config's
    # point takes 100 x 256 / 100 = 256 s after its 600 s start.
    assert got.wall_s == pytest.approx(2 * (600 + 256))
    assert got.gpu_hours == pytest.approx(2 * 856 / HOUR * 4)


def test_a_cpu_node_holds_no_gpus_and_says_so_instead_of_a_number():
    plan = sweep_plan([EngineConfig(max_num_seqs=8)], [100], style="cpu")
    got = estimates.estimate(plan, [], where="m on cpu-a")
    assert got.gpu_hours is None and got.no_gpus_note == "none: a CPU node holds no GPUs"
    assert estimates.plan_size(plan).gpus_held == 0


def test_an_attached_endpoint_starts_no_engine_and_holds_none_of_its_gpus():
    plan = sweep_plan([EngineConfig()], [100]).model_copy(update={
        "launch": EngineLaunch(style="attach", base_url="http://10.0.0.5:8000")})
    assert (estimates.plan_size(plan).engine_starts, estimates.plan_size(plan).gpus_held) == (0, 0)
    got = estimates.estimate(plan, [], where="m on prod")
    assert got.wall_s == pytest.approx(100 * 256 / 50)  # no start: the point alone
    assert got.gpu_hours is None and "the endpoint's GPUs" in got.no_gpus_note
    assert "per engine start" not in got.basis


def test_an_open_loop_point_lasts_at_least_its_arrival_schedule():
    point = estimates.PointToRun("seqs=8", "rate", 100, requests_per_replica=100,
                                 output_tokens_per_request=16, schedule_s=100 / 4)
    assert estimates.point_duration_s(point, 100_000.0) == 25.0
    assert estimates.point_duration_s(point, 32.0) == 50.0  # 1,600 tokens at 32 tok/s


def test_between_two_levels_equally_near_the_lower_one_is_taken():
    past = [estimates.PastPoint("seqs=8", "burst", level, 1.0, rate, 1)
            for level, rate in ((8, 100.0), (32, 900.0))]
    planned = estimates.PointToRun("seqs=8", "burst", 16, 16, 256, 0.0)
    assert estimates.nearest_tokens_per_s(planned, past) == 100.0
    node_run = [estimates.PastPoint("seqs=8", "burst", 16, 1.0, 900.0, 3)]
    assert estimates.nearest_tokens_per_s(planned, node_run) == 300.0  # per replica


@pytest.mark.parametrize(("seconds", "label"),
                         [(45, "45 s"), (89.4, "89 s"), (720, "12 min"), (7500, "2 h 05 min")])
def test_durations_read_as_minutes_and_hours(seconds, label):
    assert estimates.duration_label(seconds) == label


# ---------------------------------------------------------------------------------------------
# The confirmation page
# ---------------------------------------------------------------------------------------------


def test_a_valid_form_shows_its_size_and_estimate_and_creates_nothing(owner_client, launches):
    node = make_node("gpu-c", gpu_count=2)
    response = owner_client.post("/runs/new/", launch_data(node))
    assert response.status_code == 200
    assert response.templates[0].name == "runs/confirm.html"
    page = response.content.decode()
    # 3 configs x 2 loads x 2 repeats; (1000 + 2000) x 2 repeats x 3 configs requests of 256.
    for figure, value in (("engine-starts", 3), ("points", 12), ("requests", 18000),
                          ("output-tokens", 18000 * 256)):
        assert f'id="size-{figure}">{value:,}</dd>' in page
    # The default: 3 x 600 s starts, 4,608,000 tokens at 50 tok/s = 92,160 s: 93,960 s.
    assert 'id="estimate-wall">about 26 h 06 min<' in page
    assert 'id="estimate-gpu-hours">26.1 (1 GPU held)<' in page
    assert "no engine start measured on this node: default 10 min" in page
    for label in ("seqs=256,tokens=8192,kv=fp8", "seqs=1024,tokens=8192,kv=fp8"):
        assert f"<code>{label}</code>" in page
    assert "gpu-c is offline" in page  # its worker never beat
    assert not Benchmark.objects.exists() and not Workload.objects.exists()
    assert not AuditEvent.objects.exists() and launches == []


def test_the_page_says_the_start_time_came_from_the_starts_measured_on_the_node(owner_client,
                                                                               launches):
    node = make_node("gpu-c", gpu_count=2)
    for seconds in (40.0, 50.0):
        EngineStart.objects.record(node, make_checkpoint(), seconds)
    response = owner_client.post("/runs/new/", launch_data(node))
    page = response.content.decode()
    assert "measured engine starts on this node: 2, median 45 s" in page
    # As above with 3 starts of 45 s: 135 s + 92,160 s = 92,295 s.
    assert 'id="estimate-wall">about 25 h 38 min<' in page


def test_the_page_counts_four_gpus_for_two_replicas_of_two(owner_client, launches):
    node = make_node("gpu-c", gpu_count=8)
    data = launch_data(node, max_num_seqs="64", tensor_parallel_size="2", replicas="2",
                       load_levels="100", repeats="1")
    page = owner_client.post("/runs/new/", data).content.decode()
    assert 'id="size-requests">200<' in page
    # 600 s start, then 100 x 256 tokens a replica at 2 x 50 tok/s: 856 s x 4 GPUs.
    assert f'id="estimate-gpu-hours">{856 / HOUR * 4:.2f} (4 GPUs held)<' in page


def test_on_a_cpu_node_the_page_says_no_gpus_instead_of_a_number(owner_client, launches):
    node = make_node("cpu-a", gpu_count=0, gpu_name="", launch_style="cpu")
    page = owner_client.post("/runs/new/", launch_data(node)).content.decode()
    assert 'id="estimate-gpu-hours">none: a CPU node holds no GPUs<' in page


def test_launch_on_the_page_posts_every_field_back_and_launches_with_the_estimate(launches):
    from tests.personas import grant_role

    user = grant_role(make_user("launcher"))
    client = Client(enforce_csrf_checks=True)  # the page's token must be a working one
    client.force_login(user)
    node = make_node("gpu-c", gpu_count=2)
    form_page = FormFields(client.get("/runs/new/").content.decode(), "launch-form")
    token = {"csrfmiddlewaretoken": form_page.fields["csrfmiddlewaretoken"]}
    name = 'tuning <b>"quoted"</b> & more'  # escaped into the hidden input, back as typed
    first = client.post("/runs/new/", {**launch_data(node, name=name), **token})
    assert first.status_code == 200 and not Benchmark.objects.exists()
    confirm = FormFields(first.content.decode(), "confirm-form").fields
    assert confirm["confirm"] == ["1"] and confirm["name"] == [name]

    response = client.post("/runs/new/", confirm)
    assert response.status_code == 302
    benchmark = Benchmark.objects.get()
    assert launches == [benchmark] and benchmark.name == name
    assert benchmark.points_total == 12
    expected = estimates.estimate_launch(SweepPlan.model_validate(benchmark.plan),
                                         node=node, checkpoint=benchmark.checkpoint)
    assert benchmark.estimated_wall_s == pytest.approx(93960) == expected.wall_s
    assert benchmark.estimated_gpu_hours == pytest.approx(93960 / HOUR)
    assert benchmark.estimate_basis == expected.basis
    assert AuditEvent.objects.get().action == "launched"


def test_change_on_the_page_shows_the_form_filled_in(owner_client, launches):
    node = make_node("gpu-c", gpu_count=2)
    page = owner_client.post("/runs/new/", launch_data(node)).content.decode()
    change = FormFields(page, "change-form").fields
    assert "confirm" not in change
    response = owner_client.post("/runs/new/", change)
    assert response.status_code == 200
    assert response.templates[0].name == "runs/new.html"
    form = response.context["form"]
    assert form["max_num_seqs"].value() == "256, 512, 1024"
    assert form["load_levels"].value() == "1000 2000"
    assert not Benchmark.objects.exists() and launches == []


def test_an_invalid_form_shows_its_errors_even_when_confirmed(owner_client, launches):
    node = make_node("gpu-c", gpu_count=2)
    response = owner_client.post("/runs/new/", launch_data(node, load_levels="", confirm="1"))
    assert response.status_code == 400
    assert "load_levels" in response.context["form"].errors
    assert not Benchmark.objects.exists()


# ---------------------------------------------------------------------------------------------
# The run page: the estimate beside what it took
# ---------------------------------------------------------------------------------------------


def test_a_finished_run_shows_its_estimate_beside_what_it_took(owner_client):
    started = timezone.now() - timedelta(hours=1)
    run = make_benchmark(state="succeeded", started_at=started,
                         finished_at=started + timedelta(minutes=14), estimated_wall_s=720,
                         estimated_gpu_hours=0.2, estimate_basis="From 3 earlier runs")
    page = owner_client.get(f"/runs/{run.code}/").content.decode()
    # 14 minutes on the one GPU its single replica holds: 0.23 GPU-hours.
    assert ("Estimated 12 min, 0.20 GPU-hours <small>(From 3 earlier runs)</small> - took "
            "14 min, 0.23 GPU-hours</p>") in page


def test_a_running_run_shows_only_its_estimate(owner_client):
    run = make_benchmark(state="running", started_at=timezone.now(), estimated_wall_s=720,
                         estimated_gpu_hours=0.2, estimate_basis="From 3 earlier runs")
    page = owner_client.get(f"/runs/{run.code}/").content.decode()
    assert "Estimated 12 min, 0.20 GPU-hours" in page and "took" not in page
    unestimated = make_benchmark(node=run.node)
    assert 'id="run-estimate"' not in owner_client.get(f"/runs/{unestimated.code}/").content.decode()


# ---------------------------------------------------------------------------------------------
# Run again
# ---------------------------------------------------------------------------------------------


def test_run_again_fills_the_form_with_the_runs_plan_on_its_node(owner_client, launches):
    make_node("gpu-a", gpu_count=2)
    node = make_node("gpu-b", gpu_count=2)  # not the only node: preselected for the run
    data = launch_data(node, name="tuning", max_num_seqs="64, 256", load_levels="8, 32",
                       goodput="ttft:500", confirm="1")
    assert owner_client.post("/runs/new/", data).status_code == 302
    first = Benchmark.objects.get()
    page = owner_client.get(f"/runs/{first.code}/").content.decode()
    assert f'href="/runs/{first.code}/again/"' in page

    response = owner_client.get(f"/runs/{first.code}/again/")
    assert response.status_code == 200
    form = response.context["form"]
    assert form.initial["node"] == node.pk
    assert (form.initial["checkpoint"], form.initial["runtime"]) == (
        first.checkpoint_id, first.runtime_id)
    assert (form["max_num_seqs"].value(), form["load_levels"].value()) == ("64, 256", "8, 32")
    assert form["goodput"].value() == "ttft:500"
    html = response.content.decode()
    assert f'<option value="{node.pk}" selected>' in html
    assert response.context["plan_left_out"] == []
    assert "Every part of the plan of this run is on the form." in html
    assert Benchmark.objects.count() == 1

    again = {**form_post(form), "confirm": "1"}
    assert owner_client.post("/runs/new/", again).status_code == 302
    second = Benchmark.objects.exclude(pk=first.pk).get()
    assert second.plan == first.plan and launches == [first, second]


def test_run_again_preselects_the_endpoint_the_run_attached_to(owner_client):
    node = make_node("gpu-a", gpu_count=2)
    endpoint = Endpoint.objects.create(
        name="prod", base_url="http://10.0.0.5:8000", served_model="qwen", node=node,
        checkpoint=make_checkpoint(), runtime=make_runtime())
    run = make_benchmark(node=node, endpoint=endpoint)
    form = owner_client.get(f"/runs/{run.code}/again/").context["form"]
    assert form.initial["registered_endpoint"] == endpoint.pk


def test_an_imported_run_cannot_be_run_again(owner_client):
    imported = make_benchmark(source="imported", plan={"name": "x", "imported_from": "a.json"})
    assert owner_client.get(f"/runs/{imported.code}/again/").status_code == 404
    assert "/again/" not in owner_client.get(f"/runs/{imported.code}/").content.decode()


def test_running_again_needs_the_launch_permission():
    run = make_benchmark()
    viewer = Client()
    viewer.force_login(make_user("viewer"))
    assert viewer.get(f"/runs/{run.code}/again/").status_code == 403
    assert "/again/" not in viewer.get(f"/runs/{run.code}/").content.decode()


def make_user(username: str):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(username, password=f"{username}-password")
