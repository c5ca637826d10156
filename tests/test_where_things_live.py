"""docs/architecture.md's "Where things live" table is the one the tree makes
(tests.where_things_live), so it names every module and no module that is gone."""

from __future__ import annotations

from tests import where_things_live as map_
from tests.repository import ROOT


def _table() -> str:
    return map_.table_in(map_.DOC.read_text(encoding="utf-8"))


def test_the_table_is_the_one_the_tree_makes():
    table = _table()
    assert table == map_.where_things_live(map_.notes_of(table)), (
        "run `python -m tests.where_things_live` and write the new modules' notes")


def test_a_gone_module_or_a_missing_one_changes_the_table():
    table = _table()
    gone = table.replace("`sweep.py` (", "`loadgen.py` (the load client), `sweep.py` (", 1)
    assert gone != table
    assert map_.where_things_live(map_.notes_of(gone)) == table
    missing = table.replace("`sweep.py` (`run_plan`, the one seam)", "")
    assert map_.where_things_live(map_.notes_of(missing)) != missing


def test_every_module_but_packages_and_migrations_is_listed():
    folders = map_.module_folders()
    listed = {f"{folder}{m}" for folder, modules in folders.items() for m in modules}
    on_disk = {path.relative_to(ROOT).as_posix() for package in ("runner", "benchmarks")
               for path in (ROOT / package).rglob("*.py")}
    assert {p for p in on_disk if p.startswith(("runner/", "benchmarks/"))} - listed == {
        p for p in on_disk if p.endswith("__init__.py") or "/migrations/" in p}
    assert next(iter(folders)) == "runner/"  # the lowest layer first, as the layers table
