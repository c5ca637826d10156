"""docs/architecture.md's "Where things live" table, made from the tree.

The tree says which modules each folder holds; the doc keeps only the note beside each one. A
module added, moved or deleted changes the table, so a map written by hand cannot drift from
the code. `python -m tests.where_things_live` writes the table into the doc again.
"""

from __future__ import annotations

import re

from tests.repository import ROOT, root_packages

DOC = ROOT / "docs" / "architecture.md"
HEADING = "## Where things live\n\n"
HEAD = "| package | modules |\n|---|---|\n"
MODULE = re.compile(r"`(\w+\.py)`")


def module_folders() -> dict[str, list[str]]:
    """Each package folder, lowest layer first, with its modules (migrations are Django's)."""
    folders: dict[str, list[str]] = {}
    for package in reversed(root_packages()):
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if "migrations" in relative.parts or path.name == "__init__.py":
                continue
            folders.setdefault(f"{relative.parent.as_posix()}/", []).append(path.name)
    return folders


def _note_after(cell: str, end: int) -> str | None:
    """The parenthesised note right after a module's name, nested parentheses included."""
    if not cell.startswith(" (", end):
        return None
    depth = 0
    for i in range(end + 1, len(cell)):
        depth += {"(": 1, ")": -1}.get(cell[i], 0)
        if depth == 0:
            return cell[end + 2:i]
    return None


def notes_of(table: str) -> dict[str, str]:
    """'folder/module.py' -> its note, read back from a table this module wrote."""
    notes = {}
    for line in table.splitlines()[2:]:
        folder_cell, cell = line.strip().strip("|").split("|", 1)
        folder = folder_cell.strip().strip("`")
        for match in MODULE.finditer(cell):
            note = _note_after(cell, match.end())
            if note is not None:
                notes.setdefault(f"{folder}{match.group(1)}", note)
    return notes


def where_things_live(notes: dict[str, str]) -> str:
    rows = []
    for folder, modules in module_folders().items():
        cells = [f"`{m}` ({notes[folder + m]})" if folder + m in notes else f"`{m}`"
                 for m in modules]
        rows.append(f"| `{folder}` | {', '.join(cells)} |\n")
    return HEAD + "".join(rows)


def table_in(doc: str) -> str:
    start = doc.index(HEADING) + len(HEADING)
    end = doc.index("\n\n", start) + 1
    return doc[start:end]


def main() -> None:
    doc = DOC.read_text(encoding="utf-8")
    table = table_in(doc)
    DOC.write_text(doc.replace(table, where_things_live(notes_of(table))), encoding="utf-8")


if __name__ == "__main__":
    main()
