"""The quality set on the dashboard: the launch form offers the data directory's files and puts
the chosen one in the plan (refusing a bad line on its field), a point keeps its score and rows,
and the run page shows them, escaped, with the judgement layer's caveat on the CPU engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.utils.html import escape

from analysis import caveats
from analysis.sentences import QUALITY_ON_CPU_ENGINE
from benchmarks.models import Benchmark, Caveat, Point
from benchmarks.storage import points
from runner.schema.plan import QualitySpec, SweepPlan
from runner.schema.result import PointResult, QualityResult, QualityRow
from tests.dashboard.test_endpoints import (
    KEY,
    launch_data,
    register,
)
from tests.dashboard.test_endpoints import fake_server as fake_server
from tests.dashboard.test_endpoints import fleet as fleet

# The endpoints registered here are this host's test servers on loopback, named as allowed.
from tests.dashboard.test_endpoints import fleet_networks as fleet_networks
from tests.dashboard.test_endpoints import proxy as proxy
from tests.dashboard.test_endpoints import run_inline as run_inline
from tests.dashboard.test_trace_launch import trace_form
from tests.rows import make_benchmark, make_point_result

ITEMS = [
    {"prompt": "a", "expected": "tok tok", "max_tokens": 2},  # the fake answers " tok tok"
    {"prompt": "b", "expected": "Paris", "rule": "contains"},
]


@pytest.fixture
def data_dir(settings, tmp_path) -> Path:
    root = tmp_path / "datasets"
    (root / "evals").mkdir(parents=True)
    (root / "evals" / "capitals.jsonl").write_text("".join(json.dumps(i) + "\n" for i in ITEMS))
    (root / "evals" / "bad.jsonl").write_text(json.dumps(ITEMS[0]) + '\n{"prompt": "x"}\n')
    settings.HEADROOM_DATA_DIR = root
    return root


def random_form(**fields: str) -> dict[str, str]:
    """A small custom workload on a GPU node, launched at once (confirm)."""
    form = trace_form(prompt_source="random", dataset_path="", load_shape="burst",
                      load_levels="8")
    return {**form, **fields}


@pytest.mark.django_db
def test_the_launch_form_offers_the_data_directorys_files_as_quality_sets(engineer, data_dir):
    page = engineer.get("/runs/new/").content.decode()
    assert '<select name="quality_path"' in page
    assert '<option value="evals/capitals.jsonl">' in page
    assert '<option value="" selected>none</option>' in page


@pytest.mark.django_db
def test_the_chosen_quality_set_goes_into_the_plan(engineer, launches, data_dir):
    response = engineer.post("/runs/new/", random_form(quality_path="evals/capitals.jsonl"))
    assert response.status_code == 302, response.context["form"].errors
    plan = SweepPlan.model_validate(Benchmark.objects.get().plan)
    assert plan.quality == QualitySpec(path="evals/capitals.jsonl")


@pytest.mark.django_db
def test_without_a_quality_set_the_plan_has_none(engineer, launches, data_dir):
    assert engineer.post("/runs/new/", random_form()).status_code == 302
    assert Benchmark.objects.get().plan["quality"] is None


@pytest.mark.django_db
@pytest.mark.parametrize(("name", "message"), [
    ("evals/bad.jsonl", "bad.jsonl:2: expected: Field required."),
    ("../outside.jsonl", "../outside.jsonl is not a file in the data directory."),
])
def test_a_quality_set_that_cannot_run_is_refused_on_its_field(
    engineer, launches, data_dir, name, message
):
    response = engineer.post("/runs/new/", random_form(quality_path=name))
    assert response.status_code == 400 and not launches
    assert response.context["form"].errors["quality_path"][0].endswith(message)


def quality_result(*, answer: str = "tok tok", passed: bool = True) -> QualityResult:
    rows = [
        QualityRow(index=0, line=1, rule="exact", expected="tok tok", answer=answer,
                          finish_reason="length", passed=passed),
        QualityRow(index=1, line=2, rule="contains", expected="<b>Paris</b>",
                          answer=" is is is", finish_reason="length", passed=False),
        QualityRow(index=2, line=4, rule="exact", expected="4",
                          error="HTTP 500: <html>boom</html>", passed=False),
    ]
    return QualityResult.of("evals/capitals.jsonl", rows)


def scored_point(launch_style: str = "cpu", *, answer: str = "tok tok",
                 passed: bool = True) -> PointResult:
    result = make_point_result(requests=2, launch_style=launch_style)
    return result.model_copy(update={"quality": quality_result(answer=answer, passed=passed)})


@pytest.mark.django_db
def test_a_point_keeps_its_quality_score_and_rows():
    stored = points.store_point(make_benchmark(state="succeeded"), scored_point())
    back = points.point_to_result(Point.objects.get(pk=stored.pk))
    assert back.quality == quality_result()
    assert (back.quality.items, back.quality.passed, back.quality.errors) == (3, 1, 1)
    assert Point.objects.get(pk=stored.pk).quality["score"] == pytest.approx(1 / 3)


@pytest.mark.django_db
@pytest.mark.parametrize(("launch_style", "gpu_host", "scored", "caveat"), [
    ("cpu", False, True, True),
    ("serve", False, True, True),  # vllm serve on a host without a GPU: the CPU engine too
    ("serve", True, True, False),
    ("attach", False, True, False),  # an attached server's hardware is not ours to read
    ("cpu", False, False, False),  # no score, nothing to qualify
])
def test_a_score_on_the_cpu_engine_carries_the_judgement_layers_caveat(
    launch_style, gpu_host, scored, caveat
):
    result = scored_point(launch_style) if scored else make_point_result(requests=2)
    if gpu_host:
        result.provenance.hardware = result.provenance.hardware.model_copy(
            update={"gpu_count": 1, "gpu_name": "NVIDIA H200"})
    stored = points.store_point(make_benchmark(state="succeeded"), result)
    texts = list(Caveat.objects.filter(point=stored, code=caveats.QUALITY_CAVEAT)
                 .values_list("text", flat=True))
    assert texts == ([QUALITY_ON_CPU_ENGINE] if caveat else [])


@pytest.mark.django_db
def test_the_run_page_shows_the_score_the_items_escaped_and_the_caveat(engineer):
    benchmark = make_benchmark(state="succeeded")
    stored = points.store_point(benchmark, scored_point(answer="<script>alert(1)</script>",
                                                       passed=False))
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    section = page[page.index('<section id="quality">'):]
    section = section[:section.index("</section>")]
    assert "evals/capitals.jsonl" in section
    row = section[section.index(f'id="point-{stored.pk}-quality"'):]
    assert '<td class="num quality-score">0.00%</td>' in row
    assert "0/3" in row
    assert f'<td class="quality-caveat">{escape(QUALITY_ON_CPU_ENGINE)}</td>' in row
    # Text from the model and the file is shown as text, never as markup.
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section
    assert "&lt;b&gt;Paris&lt;/b&gt;" in section
    assert "no answer: HTTP 500: &lt;html&gt;boom&lt;/html&gt;" in section


@pytest.mark.django_db
def test_a_score_off_the_cpu_engine_is_shown_without_the_caveat(engineer):
    benchmark = make_benchmark(state="succeeded")
    stored = points.store_point(benchmark, scored_point("attach"))
    page = engineer.get(f"/runs/{benchmark.code}/").content.decode()
    row = page[page.index(f'id="point-{stored.pk}-quality"'):]
    assert '<td class="num quality-score">33.3%</td>' in row
    assert '<td class="quality-caveat"></td>' in row
    assert QUALITY_ON_CPU_ENGINE.split(";")[0] not in page


@pytest.mark.django_db
def test_a_run_without_a_quality_set_has_no_quality_section(engineer):
    benchmark = make_benchmark(state="succeeded")
    points.store_point(benchmark, make_point_result(requests=2))
    assert 'id="quality"' not in engineer.get(f"/runs/{benchmark.code}/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_a_launch_against_an_endpoint_scores_its_quality_set_with_the_endpoints_key(
    fleet, engineer, proxy, run_inline, data_dir
):
    endpoint = register(fleet, proxy.base_url)
    data = launch_data(endpoint, quality_path="evals/capitals.jsonl")
    assert engineer.post("/runs/new/", data).status_code == 302
    benchmark = Benchmark.objects.get()
    assert benchmark.state == "succeeded", benchmark.error_message
    (point,) = benchmark.points.all()
    quality = QualityResult.model_validate(point.quality)
    # The gateway answers 401 without the key: no error row means the eval carried it.
    assert (quality.items, quality.passed, quality.errors) == (2, 1, 0)
    assert [row.passed for row in quality.rows] == [True, False]
    assert all(ok for _path, ok in proxy.seen)
    assert KEY not in json.dumps(point.quality)
