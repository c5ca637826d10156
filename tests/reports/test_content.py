"""What the report page shows is decided in one judgement call: reports/content.py and the
modules that write and serve the page import from judgement only report_view, the words it
returns (report_phrases) and the rules' vocabulary, never another judgement module."""

from __future__ import annotations

import ast
from pathlib import Path

import reports

# The build form checks its points with judgement's own calls (compare_points, scaling_problem)
# before a report exists; the page's modules never judge anything themselves.
PAGE_MODULES = ("content.py", "wording.py", "facts.py", "page.py", "publishing.py", "pdf.py",
                "views.py")
ALLOWED = {"judgement.report_view", "judgement.report_phrases", "judgement.vocabulary",
           "judgement.rows"}


def judgement_imports(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("judgement"):
            found.add(node.module or "")
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("judgement")}
    return found


def test_the_report_page_reaches_judgement_only_through_report_view():
    folder = Path(reports.__file__).parent
    found = {name: judgement_imports((folder / name).read_text()) - ALLOWED
             for name in PAGE_MODULES}
    assert {name: sorted(extra) for name, extra in found.items() if extra} == {}


def test_the_check_sees_each_kind_of_import():
    source = "from judgement.charts import samples_figure\nimport judgement.cost_view\n"
    assert judgement_imports(source) == {"judgement.charts", "judgement.cost_view"}
