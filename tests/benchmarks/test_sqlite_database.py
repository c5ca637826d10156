"""The demo's embedded SQLite database migrates from zero and reads every constraint as
PostgreSQL does: CI runs on PostgreSQL, so without these a SQLite-only failure would reach
every newcomer's `make demo` unseen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmarks import constraint_bounds
from tests.repository import ROOT


def demo_environment(database: Path) -> dict[str, str]:
    """demo/run.py's settings: config.settings with DEBUG on and no SECRET_KEY, on a new
    SQLite file (the demo's own is var/db.sqlite3; a test must not touch it)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DJANGO_SETTINGS_MODULE")}
    return {**env, "DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"sqlite:///{database}", "CELERY_BROKER_URL": "memory://"}


def run(args: list[str], env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_new_sqlite_database_migrates_and_holds_every_constraint_at_its_bounds(tmp_path):
    env = demo_environment(tmp_path / "db.sqlite3")
    run(["manage.py", "migrate", "--noinput", "-v", "0"], env)
    run(["manage.py", "makemigrations", "--check", "--dry-run", "-v", "0"], env)

    outcome = json.loads(run(["-m", "tests.benchmarks.constraint_bounds"], env).splitlines()[-1])

    assert outcome["failures"] == []
    assert set(outcome["constraints"]) == {b.constraint for b in constraint_bounds.BOUNDS}


@pytest.mark.django_db
def test_postgresql_holds_every_constraint_at_the_same_bounds():
    assert constraint_bounds.check_bounds() == []


def test_every_check_constraint_has_a_case_at_its_bounds():
    covered = {bound.constraint for bound in constraint_bounds.BOUNDS}
    assert covered == constraint_bounds.check_constraint_names()


@pytest.mark.django_db
def test_a_bound_the_database_does_not_hold_is_reported(monkeypatch):
    # The check itself can fail: a refused value the database stores is named.
    loose = constraint_bounds.Bound("workload_output_pos", "workload", {"output_tokens": 2},
                                    {"output_tokens": 1})
    monkeypatch.setattr(constraint_bounds, "BOUNDS", (loose,))
    assert constraint_bounds.check_bounds() == [
        "workload_output_pos: {'output_tokens': 1} was not refused"
    ]
