"""The one layers contract covers a module by the folder it is put in.

Each test copies the packages to a temporary folder, adds one module, and runs import-linter
there with the repository's own .importlinter: a module that imports upwards must break the
contract without anyone naming it in the configuration.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.repository import ROOT, root_packages

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("layers")
    for package in root_packages():
        shutil.copytree(ROOT / package, copy / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "migrations"))
    shutil.copy(ROOT / ".importlinter", copy / ".importlinter")
    return copy


def lint(tree: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    added = [tree / name for name in extra]
    for path, text in zip(added, extra.values(), strict=True):
        path.write_text(text)
    try:
        return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tree, text=True,
                              capture_output=True, env={"PYTHONPATH": str(tree), "PATH": ""})
    finally:
        for path in added:
            path.unlink()


def test_the_copied_tree_keeps_every_contract(tree: Path):
    out = lint(tree, {})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Layers: each package imports only those below it KEPT" in out.stdout
    assert "Reports reach their rows only through judgement" in out.stdout


@pytest.mark.parametrize(("module", "imports"), [
    ("runner/misplaced.py", "benchmarks.models"),
    ("analysis/misplaced.py", "judgement.figures"),
    ("benchmarks/misplaced.py", "dashboard.views"),
    ("judgement/misplaced.py", "reports.content"),
    ("dashboard/misplaced.py", "demo.run"),
])
def test_a_module_importing_upwards_breaks_the_layers(tree: Path, module: str, imports: str):
    out = lint(tree, {module: f"import {imports}\n"})
    assert out.returncode == 1
    misplaced = module.removesuffix(".py").replace("/", ".")
    assert f"{misplaced} -> {imports}" in out.stdout
    assert "Layers: each package imports only those below it BROKEN" in out.stdout


@pytest.mark.parametrize(("module", "imports"), [
    ("benchmarks/storage/misplaced.py", "benchmarks.worker.beats"),
    ("benchmarks/launch/misplaced.py", "benchmarks.storage.points"),
    ("benchmarks/models/misplaced.py", "benchmarks.security.vault"),
])
def test_a_benchmarks_module_reaching_across_its_groups_breaks_them(tree: Path, module: str,
                                                                     imports: str):
    out = lint(tree, {module: f"import {imports}\n"})
    assert out.returncode == 1
    assert f"{module.removesuffix('.py').replace('/', '.')} -> {imports}" in out.stdout
    assert "benchmarks by job: the worker above launch, storage and security, each apart BROKEN" \
        in " ".join(out.stdout.split())


def test_a_page_module_reaching_the_rules_directly_is_refused(tree: Path):
    # One run for both: a report module that names the data layer's models is refused too.
    out = lint(tree, {"dashboard/misplaced.py": "import analysis.verdicts\n",
                      "reports/misplaced.py": "from benchmarks.models import Point\n"})
    assert "reports.misplaced -> benchmarks.models" in out.stdout
    assert "never benchmarks.models BROKEN" in out.stdout.replace("models\nBROKEN",
                                                                  "models BROKEN")
    assert out.returncode == 1
    assert "dashboard.misplaced -> analysis.verdicts" in out.stdout
    assert "never the rules directly BROKEN" in out.stdout.replace("directlyBROKEN",
                                                                  "directly BROKEN")


# The reports app's Django plumbing, which may query (its own rows, access and audit); every
# other report module gets its rows from judgement calls.
REPORT_PLUMBING = {"models.py", "forms.py", "views.py", "admin.py", "publishing.py"}


def test_no_report_module_but_the_plumbing_queries_the_database():
    querying = [path.name for path in sorted((ROOT / "reports").glob("*.py"))
                if path.name not in REPORT_PLUMBING and ".objects" in path.read_text()]
    assert querying == []
