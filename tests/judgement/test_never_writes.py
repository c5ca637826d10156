"""The judgement layer reads rows and never writes them: a write belongs to the data layer
(benchmarks, e.g. benchmarks.storage.operating_points) or to the command that asks for it (demo)."""

from __future__ import annotations

import ast
from pathlib import Path

import judgement

# A model's or a queryset's writes; a dict is merged with |= in judgement so .update reads as one.
WRITE_METHODS = frozenset({
    "save", "create", "update", "delete", "bulk_create", "bulk_update", "get_or_create",
    "update_or_create", "select_for_update", "execute",
})


def writes(source: str) -> list[str]:
    """Each write in the source, as 'line: what' in line order, found in its syntax tree."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in WRITE_METHODS):
            found.append((node.lineno, f".{node.func.attr}()"))
        elif isinstance(node, ast.Name) and node.id == "transaction":
            found.append((node.lineno, "transaction"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("django.db"):
            found += [(node.lineno, f"import of django.db's {alias.name}") for alias in node.names
                      if alias.name in {"transaction", "connection", "connections"}]
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_no_module_of_the_judgement_package_writes():
    package = Path(judgement.__file__).parent
    modules = sorted(package.rglob("*.py"))
    assert len(modules) > 5  # the package itself, not an empty folder
    found = {str(m.relative_to(package)): writes(m.read_text()) for m in modules}
    assert {name: lines for name, lines in found.items() if lines} == {}


def test_the_check_finds_each_kind_of_write():
    source = """
from django.db import transaction

@transaction.atomic
def store(benchmark, point):
    point.save()
    OperatingPoint.objects.create(benchmark=benchmark)
    OperatingPoint.objects.filter(benchmark=benchmark).update(is_current=False)
    Comparison.objects.get_or_create(name="x")
    Point.objects.bulk_create([])
    point.delete()
"""
    assert [line.split(": ", 1)[1] for line in writes(source)] == [
        "import of django.db's transaction", "transaction", ".save()", ".create()", ".update()",
        ".get_or_create()", ".bulk_create()", ".delete()",
    ]
