"""The repository's prose stands on its own: no comment, docstring or doc names a file outside
the repository, and every repository path a doc names exists.

A pointer to a document only one engineer's machine has, or to a script that was never
committed, tells a newcomer nothing; the facts belong in docs/ (docs/vllm.md holds the domain
knowledge the code relies on). Python files are checked in their comments and docstrings only,
so test data such as a path that must be refused stays allowed; every other text file is checked
whole.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.repository import ROOT, root_packages

# Where the repository's own prose lives; var/, .venv/ and the caches are not the repository.
SOURCE_DIRS = (*root_packages(), "bench", "tests", "templates", "static", "docs")
TOP_FILES = ("README.md", "Makefile", "Dockerfile", "docker-compose.yml", "pyproject.toml",
             "pytest.ini", ".importlinter", "requirements.txt", "requirements-dev.txt",
             "requirements-engine-cpu.txt")
TEXT_SUFFIXES = {".md", ".html", ".js", ".css", ".txt", ".yml", ".yaml", ".toml", ".ini", ".cfg"}

# The engine tests' lock is a path every checkout agrees on, not a file with content.
ALLOWED_TMP = ("/tmp/headroom-engine.lock",)

# Spelled in pieces so this file's own text does not match them.
OUTSIDE = [
    (re.compile(r"\bdomain" r"\.md\b"), "names the domain document, which is not in the repository"),
    (re.compile(r"\bshared" r"/"), "names the shared folder outside the repository"),
    (re.compile(r"/" r"tmp/[^\s`'\")]*"), "names a file under /tmp"),
    (re.compile(r"\bscripts? in /" r"tmp\b"), "points to scripts that were never committed"),
    (re.compile(r"(?<![\w.])\.\." r"/"), "names a path above the repository"),
    (re.compile(r"(?<![\w./-])/" r"work/"), "names an absolute path on a development host"),
]


def _python_prose(path: Path) -> list[tuple[int, str]]:
    """Each comment and docstring of a Python file, with its line."""
    text = path.read_text(encoding="utf-8")
    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(text).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                found.append((body[0].lineno, body[0].value.value))
    return found


def _prose_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES if (ROOT / name).is_file()]
    for folder in SOURCE_DIRS:
        for path in sorted((ROOT / folder).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            if path.suffix == ".py" or path.suffix in TEXT_SUFFIXES:
                files.append(path)
    return files


def outside_references(path: Path) -> list[str]:
    """'file:line: what' for each mention of a file outside the repository."""
    if path.suffix == ".py":
        pieces = _python_prose(path)
    else:
        pieces = [(1, path.read_text(encoding="utf-8"))]
    problems = []
    for first_line, text in pieces:
        for pattern, why in OUTSIDE:
            for match in pattern.finditer(text):
                if match.group(0).rstrip(".,:;") in ALLOWED_TMP:
                    continue
                line = first_line + text.count("\n", 0, match.start())
                problems.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r} {why}")
    return problems


def test_no_comment_docstring_or_doc_names_a_file_outside_the_repository() -> None:
    problems = [p for path in _prose_files() for p in outside_references(path)]
    assert not problems, "\n".join(problems)


# A backticked or linked path that starts at one of the repository's own top-level folders.
TOP_LEVEL = ("runner", "benchmarks", "judgement", "reports", "config", "bench", "tests",
             "templates", "static", "docs", "locale")
BACKTICKED = re.compile(r"`([^`\s]+)`")
LINKED = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _repository_path(candidate: str) -> str | None:
    """The path part of a token that names a repository path, else None."""
    path = candidate.split("::")[0].rstrip(".,:;")
    path = re.sub(r":\d+$", "", path)  # file:line
    if path.startswith("./"):
        path = path[2:]
    if "/" not in path or path.split("/")[0] not in TOP_LEVEL:
        return None
    if any(ch in path for ch in "*{}<>$[]"):  # a pattern or a placeholder, not one path
        return None
    return path


def doc_paths(doc: Path) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    tokens = BACKTICKED.findall(text) + LINKED.findall(text)
    return [p for p in (_repository_path(t) for t in tokens) if p is not None]


DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_repository_path_a_doc_names_exists(doc: Path) -> None:
    missing = sorted({p for p in doc_paths(doc) if not (ROOT / p).exists()})
    assert not missing, f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_checks_catch_a_planted_reference(tmp_path: Path) -> None:
    """Each pattern fires on a planted example, so a check that silently matched nothing fails."""
    plants = [
        "# see domain" ".md section 4",
        "# the profile script in shared" "/notes",
        "# throwaway profiles (scripts in /" "tmp, not kept)",
        "# run /" "tmp/profile.py first",
        "# as ../" "notes/figures.md says",
    ]
    for plant in plants:
        module = tmp_path / "planted.py"
        module.write_text(f"{plant}\nVALUE = '../data-is-fine-in-code'\n", encoding="utf-8")
        found = [p for p in (pattern.search(plant) for pattern, _ in OUTSIDE) if p]
        assert found, plant
        assert len(_python_prose(module)) == 1  # the comment, not the string literal
