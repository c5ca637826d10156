"""One job and one distinct name per module: no two modules or packages of the repository share
a name, and no module repeats its package's name (`storage/storage.py`). `search.py` in four
layers makes every import a riddle; a name given once says where its module lives.

The frameworks' own names repeat by design, since each app keeps one where Django or Python looks
for it (`apps.py`, `urls.py`, `models`, `management/commands/`, `__main__.py`)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import PurePosixPath

from tests.repository import ROOT, root_packages

FRAMEWORK_NAMES = frozenset({
    "__init__", "__main__", "admin", "apps", "commands", "forms", "management", "migrations",
    "models", "templatetags", "urls", "views",
})


def _source_paths() -> list[str]:
    """Every module and package of the layers, as paths from the repository's root."""
    paths = []
    for package in root_packages():
        for path in (ROOT / package).rglob("*"):
            if "__pycache__" in path.parts or "migrations" in path.relative_to(ROOT).parts:
                continue
            if path.suffix == ".py" or (path.is_dir() and (path / "__init__.py").is_file()):
                paths.append(path.relative_to(ROOT).as_posix())
    return paths


def clashing_names(paths: list[str]) -> dict[str, list[str]]:
    """Each name that more than one module or package has, or that repeats its package's, with
    the paths that have it."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        by_name[PurePosixPath(path).stem].append(path)
    clashes = {name: sorted(found) for name, found in by_name.items()
               if len(found) > 1 and name not in FRAMEWORK_NAMES}
    for path in paths:
        module = PurePosixPath(path)
        if module.suffix == ".py" and module.stem == module.parent.name:
            clashes.setdefault(module.stem, []).append(path)
    return clashes


def test_every_module_and_package_has_a_name_of_its_own():
    paths = _source_paths()
    assert "benchmarks/storage/columnar.py" in paths and "runner/search" in paths
    assert clashing_names(paths) == {}


def test_a_name_in_two_layers_or_repeating_its_package_is_found():
    assert clashing_names([
        "runner/search/state.py", "judgement/state.py", "benchmarks/storage/storage.py",
        "runner/search", "analysis/search.py", "dashboard/urls.py", "reports/urls.py",
    ]) == {
        "state": ["judgement/state.py", "runner/search/state.py"],
        "storage": ["benchmarks/storage/storage.py"],
        "search": ["analysis/search.py", "runner/search"],
    }
