"""Result files: one PointResult per line (JSONL), appended and flushed as each point finishes.

A crash loses at most the point in flight: every finished point is already on disk, and a
truncated last line (the process died mid-write) is skipped with a warning when reading back.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from runner.schema import PointResult


class ResultFileError(ValueError):
    """A result file that is not a Headroom results file; the message names the line."""


@dataclass
class ReadResult:
    points: list[PointResult]
    warnings: list[str] = field(default_factory=list)


def append_point(path: Path, point: PointResult) -> None:
    """Append one point and force it to disk before the next point starts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    line = point.model_dump_json() + "\n"
    with path.open("a", encoding="utf-8") as out:
        out.write(line)
        out.flush()
        os.fsync(out.fileno())


def read_points(path: Path) -> ReadResult:
    """Every point of a results file, validated against the schema."""
    result = ReadResult(points=[])
    result.points.extend(iter_points(path, result.warnings))
    return result


def iter_points(path: Path, warnings: list[str], *, label: str = "") -> Iterator[PointResult]:
    """The points of a results file one line at a time: a big file is never held whole.

    A last line cut short is skipped and said in `warnings`. Messages name the file as `label`
    (default: its path), so an uploaded file is named as its uploader called it.
    """
    label = label or str(path)
    size = path.stat().st_size
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                yield PointResult.model_validate_json(raw)
            except ValidationError as exc:
                if handle.tell() == size and _looks_truncated(exc):
                    warnings.append(
                        f"{label}:{number}: last line is cut short (a run was killed "
                        "mid-write); skipped"
                    )
                    continue
                raise ResultFileError(
                    f"{label}:{number}: not a Headroom point: {_first_error(exc)}"
                ) from None


def finished_keys(path: Path) -> frozenset[str]:
    """Keys of the points already in the file, for --resume."""
    if not path.exists():
        return frozenset()
    return frozenset(point.key for point in read_points(path).points)


def _looks_truncated(exc: ValidationError) -> bool:
    return any(error["type"] in ("json_invalid", "json_type") for error in exc.errors())


def _first_error(exc: ValidationError) -> str:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "(top level)"
    more = exc.error_count() - 1
    suffix = f" (and {more} more problems)" if more else ""
    return f"{where}: {error['msg']}{suffix}"
