"""Result files: one PointResult per line (JSONL), appended and flushed as each point finishes.

A crash loses at most the point in flight: every finished point is already on disk, and a
truncated last line (the process died mid-write) is skipped with a warning when reading back.
"""

from __future__ import annotations

import os
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
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ResultFileError(f"{path}: not a text file ({exc.reason})") from exc
    result = ReadResult(points=[])
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            result.points.append(PointResult.model_validate_json(line))
        except ValidationError as exc:
            if number == len(lines) and _looks_truncated(exc):
                result.warnings.append(
                    f"{path}:{number}: last line is cut short (a run was killed mid-write); "
                    "skipped"
                )
                continue
            raise ResultFileError(f"{path}:{number}: not a Headroom point: {_first_error(exc)}")
    return result


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
