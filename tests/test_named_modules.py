"""Every module of the repository that a text names exists, with the names imported from it.

Code handed to `python -c` in a string, a `-m` invocation in a Makefile or a doc, a doc's own
examples, and a module named in prose (`runner.sweep`, `runner/measure/`) are not imports a
linter follows: after a module moves, only this finds them.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

from tests.repository import ROOT, root_packages
from tests.test_docs import _prose_files, _python_prose

PACKAGES = "|".join((*root_packages(), "tests"))
FROM_IMPORT = re.compile(rf"\bfrom ((?:{PACKAGES})(?:\.\w+)*) import ([\w, ]+)")
RUN_MODULE = re.compile(rf"""(?:python3? -m |"-m", ")((?:{PACKAGES})(?:\.\w+)*)""")
# In prose: `runner.sweep.run_plan` names a module and one of its names; `runner/measure/` and
# `bench/capacity.py` name a folder or a file. Not after a dot, a slash or a word, so that
# `templates/runs/detail.html` or `point.runner.x` is not read as a module.
PROSE_DOTTED = re.compile(rf"(?<![\w./-])((?:{PACKAGES})(?:\.\w+)+)")
PROSE_PATH = re.compile(rf"(?<![\w./-])((?:{PACKAGES}|bench)/[\w./-]*)(.?)")
FILE_SUFFIXES = {"py", "json", "jsonl", "yaml", "yml", "csv", "md", "html", "txt", "toml"}
# The peers' own READMEs quote paths of the peers' repositories, not of this one.
NOT_OURS = "tests/data/"


def _texts() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.md", "*.html", "*.yml", "Makefile", ".ci/run"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    this_file = Path(__file__).resolve().relative_to(ROOT).as_posix()  # its examples are wrong
    return [name for name in listed if (ROOT / name).is_file() and name != this_file]


def _missing_import(module_name: str, names: list[str]) -> list[str]:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return [module_name]
    missing = []
    for name in names:
        if hasattr(module, name):
            continue
        try:
            importlib.import_module(f"{module_name}.{name}")
        except ImportError:
            missing.append(f"{module_name}.{name}")
    return missing


def named_modules_missing(text: str) -> list[str]:
    missing = []
    for match in FROM_IMPORT.finditer(text):
        names = [part.strip().split(" as ")[0] for part in match.group(2).split(",")]
        missing += _missing_import(match.group(1), [name for name in names if name])
    for match in RUN_MODULE.finditer(text):
        if importlib.util.find_spec(match.group(1)) is None:
            missing.append(f"-m {match.group(1)}")
    return missing


def _permission(app_label: str, codename: str) -> bool:
    from django.apps import apps

    try:
        models = apps.get_app_config(app_label).get_models()
    except LookupError:
        return False
    return any(codename in [c for c, _ in model._meta.permissions]
               or codename in [f"{a}_{model._meta.model_name}"
                               for a in model._meta.default_permissions]
               for model in models)


def _dotted_missing(name: str) -> bool:
    """Whether a dotted name misses: its longest importable prefix must hold the next part.
    A file name (`config.yaml`) and a permission (`reports.publish_report`) are not modules."""
    parts = name.split(".")
    if parts[-1] in FILE_SUFFIXES and len(parts) == 2:
        return False
    if len(parts) == 2 and _permission(*parts):
        return False
    for end in range(len(parts), 0, -1):
        module_name = ".".join(parts[:end])
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        if end == len(parts) or hasattr(module, parts[end]):
            return False
        return not hasattr(module, "__path__") \
            or importlib.util.find_spec(f"{module_name}.{parts[end]}") is None
    return True


def _path_missing(path: str) -> bool:
    path = path.rstrip("./")
    module_file = path.split(".")[0] + ".py"  # tests/runner/fakeserver.FakeVllm
    if any((ROOT / p).exists() for p in (path, f"{path}.py", module_file)):
        return False
    # A migration is named by its number, as Django's own messages name it.
    folder, _, number = path.rpartition("/")
    return not (folder.endswith("migrations") and number.isdigit()
                and any((ROOT / folder).glob(f"{number}_*.py")))


def prose_names_missing(text: str) -> list[str]:
    """The module names and repository paths a piece of prose names that do not exist."""
    missing = [m.group(1) for m in PROSE_DOTTED.finditer(text) if _dotted_missing(m.group(1))]
    paths = [m.group(1) for m in PROSE_PATH.finditer(text)
             if m.group(2) not in ("*", "<", "{") and _path_missing(m.group(1))]  # not a pattern
    return missing + paths


def _prose(name: str) -> list[str]:
    path = ROOT / name
    if path.suffix == ".py":
        return [text for _line, text in _python_prose(path)]
    return [path.read_text(encoding="utf-8")] if path.suffix == ".md" else []


def test_every_module_a_text_names_exists():
    texts = _texts()
    assert len(texts) > 100  # the repository, not an empty listing
    missing = {name: named_modules_missing((ROOT / name).read_text(encoding="utf-8"))
               for name in texts}
    assert {name: found for name, found in missing.items() if found} == {}


def test_the_check_finds_a_moved_module_and_a_missing_name():
    text = '''
    code = "from runner.engine import engines"
    subprocess.run([sys.executable, "-m", "runner.loadgen"])
    from runner.schema.plan import SweepPlan, NoSuchThing
    '''
    assert named_modules_missing(text) == [
        "runner.engine.engines", "runner.schema.plan.NoSuchThing", "-m runner.loadgen",
    ]


def test_every_module_prose_names_exists():
    names = [path.relative_to(ROOT).as_posix() for path in _prose_files()]
    this_file = Path(__file__).resolve().relative_to(ROOT).as_posix()  # its examples are wrong
    missing = {name: found for name in names if name != this_file and not name.startswith(NOT_OURS)
               for found in [[m for text in _prose(name) for m in prose_names_missing(text)]]
               if found}
    assert missing == {}


def test_the_prose_check_finds_a_stale_name_in_a_docstring(tmp_path: Path):
    module = tmp_path / "stale.py"
    module.write_text('''"""Sends the load (runner.loadgen.send, see runner/telemetry/)."""

# The samples come from runner.measure.sampler.QueueSampler (runner/measure/sampler.py).
LABEL = "runner.traces is data, not prose"
''', encoding="utf-8")
    found = [m for _line, text in _python_prose(module) for m in prose_names_missing(text)]
    assert found == ["runner.loadgen.send", "runner/telemetry/"]
    assert prose_names_missing("runner.sweep.run_plan, runner.sweep.no_such_seam") == [
        "runner.sweep.no_such_seam",
    ]
