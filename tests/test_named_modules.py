"""Every module of the repository that a text names exists, with the names imported from it.

Code handed to `python -c` in a string, a `-m` invocation in a Makefile or a doc, and a doc's
own examples are not imports a linter follows: after a module moves, only this finds them.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import subprocess
from pathlib import Path

from tests.repository import ROOT, root_packages

PACKAGES = "|".join((*root_packages(), "tests"))
FROM_IMPORT = re.compile(rf"\bfrom ((?:{PACKAGES})(?:\.\w+)*) import ([\w, ]+)")
RUN_MODULE = re.compile(rf"""(?:python3? -m |"-m", ")((?:{PACKAGES})(?:\.\w+)*)""")


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
