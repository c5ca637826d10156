"""Each script under bench/ in its quick mode, run as its docstring says, as a subprocess.

The full runs measure the figures in docs/performance.md by hand; these runs keep the scripts
working between them: the same code paths on small data, in seconds. What they print is too
small to judge, so a test checks the exit status and the result table, never a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.db import connection

from runner.engine.tinymodel import build_tiny_model
from tests.repository import ROOT

BENCH_TIMEOUT_S = 300
# An engine start is about a minute on 2 cores; peer_vllm's --time-limit stops it sooner.
ENGINE_BENCH_TIMEOUT_S = 600
PEER_TIME_LIMIT_MIN = 8


def run_bench(script: str, *args: str, timeout_s: float = BENCH_TIMEOUT_S,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # Without pytest-django's settings module: each script chooses its own, as run by hand.
    inherited = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT, capture_output=True,
        text=True, timeout=timeout_s, env={**inherited, **(env or {})}, check=False,
    )


def table_rows(stdout: str, header: str) -> list[str]:
    """The rows of the Markdown table whose header line starts with `header`."""
    lines = stdout.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    assert start is not None, f"no table {header!r} in:\n{stdout}"
    assert lines[start + 1].startswith("|---"), lines[start + 1]
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def assert_ran(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"


def own_cores() -> bool:
    return {0, 1} <= os.sched_getaffinity(0)


# ---------------------------------------------------------------------------------------------
# Without a database
# ---------------------------------------------------------------------------------------------


def test_client_events_quick_mode_measures_every_client():
    done = run_bench("client_events.py", "--quick")
    assert_ran(done)
    rows = table_rows(done.stdout, "| placement | client |")
    # 6 clients in each placement (own cores only where CPUs 0 and 1 are this process's).
    assert len(rows) == (12 if own_cores() else 6)


def test_client_gc_quick_mode_runs_both_collectors_on_both_loads():
    done = run_bench("client_gc.py", "--quick")
    assert_ran(done)
    rows = table_rows(done.stdout, "| workload | collector |")
    assert len(rows) == 4
    assert sum("| quieted |" in row for row in rows) == 2


def test_request_memory_quick_mode_measures_every_stage():
    done = run_bench("request_memory.py", "--quick")
    assert_ran(done)
    rows = table_rows(done.stdout, "| code | point | stage |")
    assert [row.split("|")[3].strip() for row in rows] == [
        "client", "runner", "worker", "celery", "web", "download",
    ]


# ---------------------------------------------------------------------------------------------
# On PostgreSQL
# ---------------------------------------------------------------------------------------------


def test_request_memory_quick_mode_stores_and_reads_the_point_through_postgresql(
    transactional_db,
):
    # The test database, migrated; the script's cleanup stage deletes the run it imported.
    url = urlsplit(os.environ["DATABASE_URL"])._replace(path="/" + connection.settings_dict["NAME"])
    done = run_bench("request_memory.py", "--quick", "--db", env={"DATABASE_URL": urlunsplit(url)})
    assert_ran(done)
    rows = table_rows(done.stdout, "| code | point | stage |")
    assert len(rows) == 6
    assert "stored_requests 256" in rows[2]  # the worker stage's import_file


def _admin_url() -> str:
    server = urlsplit(os.environ.get("DATABASE_URL", ""))
    if server.scheme not in ("postgres", "postgresql"):
        pytest.skip("the bench scripts create their own PostgreSQL database")
    return urlunsplit(server._replace(path="/postgres"))


def _database_exists(name: str) -> bool:
    with psycopg.connect(_admin_url(), autocommit=True) as admin:
        return admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone() \
            is not None


@pytest.fixture
def bench_database() -> Iterator[tuple[str, str]]:
    """(name, URL) of a database no other run uses: the script creates and drops it; dropped
    here too if the script died first."""
    admin = _admin_url()
    name = f"headroom_bench_quick_{uuid.uuid4().hex[:12]}"
    yield name, urlunsplit(urlsplit(admin)._replace(path="/" + name))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_dashboard_pages_quick_mode_times_every_page_on_its_own_database(bench_database):
    name, url = bench_database
    done = run_bench("dashboard_pages.py", "--quick", "--database-url", url)
    assert_ran(done)
    rows = table_rows(done.stdout, "| target | limit |")
    assert len(rows) == 7  # store_point and six pages (the request timeline's JSON one)
    assert "0 reading a blob column" in done.stdout
    assert not _database_exists(name)


def test_large_run_quick_mode_times_both_shared_pages_on_its_own_database(bench_database):
    name, url = bench_database
    done = run_bench("large_run.py", "--quick", "--database-url", url)
    assert_ran(done)
    rows = table_rows(done.stdout, "| page | beside ")
    assert [row.split("|")[1].strip() for row in rows] == ["run page", "/comparisons/new/"]
    assert not _database_exists(name)


def test_report_page_quick_mode_renders_every_chart_on_its_own_database(bench_database):
    name, url = bench_database
    done = run_bench("report_page.py", "--quick", "--database-url", url)
    assert_ran(done)
    (row,) = table_rows(done.stdout, "| page | first request |")
    assert "(6 chart areas)" in row
    assert not _database_exists(name)


# ---------------------------------------------------------------------------------------------
# On a vLLM CPU engine (one start each)
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_model() -> Path:
    """The tiny model at HEADROOM_TINY_MODEL (make test) or var/tiny-model: a stable path lets
    vLLM reuse its torch.compile cache."""
    default = ROOT / "var" / "tiny-model"
    return build_tiny_model(Path(os.environ.get("HEADROOM_TINY_MODEL", default)))


needs_own_cores = pytest.mark.skipif(
    not own_cores(), reason="the engine benches pin the engine to CPU 0 and the client to CPU 1"
)


@pytest.mark.engine
@needs_own_cores
def test_peer_vllm_quick_mode_compares_both_clients_on_both_workloads(tiny_model, tmp_path):
    done = run_bench(
        "peer_vllm.py", "--quick", "--model", str(tiny_model),
        "--time-limit", str(PEER_TIME_LIMIT_MIN), "--json", str(tmp_path / "peer.json"),
        timeout_s=ENGINE_BENCH_TIMEOUT_S,
        env={"TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"},  # its work folder goes in tmp_path
    )
    assert_ran(done)
    header = "| metric | vLLM median | Headroom median |"
    assert done.stdout.count(header) == 2  # the burst and the closed loop
    assert len(table_rows(done.stdout, header)) == 6
    assert "SOME RUNS INCOMPLETE" not in done.stdout
    assert (tmp_path / "peer.json").is_file()


@pytest.mark.engine
@needs_own_cores
def test_capacity_quick_mode_plans_and_loads_the_promise_on_one_engine(tiny_model, tmp_path):
    done = run_bench("capacity.py", "--quick", "--model", str(tiny_model),
                     timeout_s=ENGINE_BENCH_TIMEOUT_S,
                     env={"TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert_ran(done)
    rows = table_rows(done.stdout, "| config | target |")
    assert [row.split("|")[2].strip().split(" ")[0] for row in rows] == [
        "p95_ttft_ms", "p95_e2el_ms"]
    # Each plan says where its ladder first missed the target, and the restated verdict follows.
    assert "| ladder first missed (x the planned rate) |" in done.stdout
    assert "restated against the host's noise:" in done.stdout
    assert "host noise:" in done.stdout


@pytest.mark.engine
@needs_own_cores
def test_scrape_cost_quick_mode_times_both_metrics_pages(tiny_model, tmp_path):
    done = run_bench(
        "scrape_cost.py", "--quick", "--model", str(tiny_model), timeout_s=ENGINE_BENCH_TIMEOUT_S,
        env={"TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"},
    )
    assert_ran(done)
    assert "both pages read the same sample" in done.stdout
    rows = table_rows(done.stdout, "| page | bytes |")
    assert [row.split("|")[1].strip() for row in rows] == ["whole", "filtered"]


def test_adaptive_replay_quick_mode_judges_the_search_on_a_recorded_grid():
    done = run_bench("adaptive.py", "replay", "--quick")
    assert_ran(done)
    rows = table_rows(done.stdout, "| grid | configs | objective |")
    # The knee and the SLO objective on the first recorded grid.
    assert len(rows) == 2
    assert all("% of the grid's" in row for row in rows)
    # Eleven columns: a config and its load share a cell, not a column each.
    assert all(row.count("|") == 12 for row in rows)


@pytest.mark.engine
@needs_own_cores
def test_stability_quick_mode_flags_the_hogged_point_and_measures_on(tiny_model, tmp_path):
    """The live hog test: a busy loop of the bench's own, pinned to the engine's core and bound
    in time, runs through the second point only. That point is flagged disturbed (measured
    twice, both draws hogged, the least disturbed kept) and the sweep carries on to its last
    level and the control point."""
    done = run_bench("stability.py", "--quick", "--model", str(tiny_model),
                     timeout_s=ENGINE_BENCH_TIMEOUT_S,
                     env={"TMPDIR": str(tmp_path), "HF_HUB_OFFLINE": "1"})
    assert_ran(done)
    rows = [[cell.strip() for cell in row.split("|")[1:-1]]
            for row in table_rows(done.stdout, "| run | point | hog |")]
    assert [row[1] for row in rows] == [
        "seqs=8,len=1024 · burst 6 · r0", "seqs=8,len=1024 · burst 12 · r0",
        "seqs=8,len=1024 · burst 18 · r0", "seqs=8,len=1024 · burst 6 · r1 (control)"]
    hogged = rows[1]
    assert hogged[2] == "yes" and hogged[5] == "yes", rows
    assert float(hogged[3]) > 0.25
    assert "| hog | 1 | 1 | 100% |" in done.stdout
