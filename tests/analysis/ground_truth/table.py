"""What today's verdict rules say of every recorded ground-truth point, beside what the class
expects: `python -m tests.analysis.ground_truth.table` prints one row per point."""

from __future__ import annotations

from analysis.convert import from_point_result
from analysis.verdicts import verdicts_for_sweep
from tests.analysis.ground_truth.classes import CLASSES
from tests.analysis.ground_truth.record import read_recording, recordings


def rows() -> list[tuple[str, str, str, str | None, str]]:
    """(class, recording, point key, expected kind, judged kind) for every recorded point."""
    out = []
    for name, gt in CLASSES.items():
        for path in recordings(name):
            points = read_recording(path)
            judged = verdicts_for_sweep([from_point_result(p) for p in points])
            for p in points:
                expected = gt.expected_kind(p.engine_config.label(), p.load.label())
                out.append((name, path.stem, p.key, expected, judged[p.key].kind))
    return out


def main() -> None:
    print("| class | recording | point | expected | today's verdict |")
    print("|---|---|---|---|---|")
    for name, recording, key, expected, kind in rows():
        mark = "" if expected in (None, kind) else " (wrong)"
        print(f"| {name} | {recording} | {key} | {expected} | {kind}{mark} |")


if __name__ == "__main__":
    main()
