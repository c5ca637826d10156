"""An import's memory is bounded by the document limit whatever the file holds.

A JSONL line and a download's point are parsed whole, into many times their size: a list of
tiny telemetry samples (`{"t":0}`, 8 bytes, each a pydantic model of about 600) is the worst
shape known. Each case imports a file in a fresh Python process and reads its peak resident
memory (VmHWM), so pydantic-core's own allocations count too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import point_result
from tests.repository import ROOT

MB = 2**20
LIMIT = 1 * MB
# docs/dashboard.md, "Uploads": an import holds at most this many times the document limit
# beyond the worker's own memory (measured: 96x for a JSONL line, 105x for a download's point).
CEILING_FACTOR = 128

IMPORT = """
import json, sys
from pathlib import Path
from runner.importer.files import iter_result_file_into
from runner.importer.vllm_document import ImportFileError
from runner.results import RecordList

def status(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024

before = status("VmRSS:")
try:
    points = list(iter_result_file_into(Path(sys.argv[1]), RecordList,
                                        max_document_bytes=int(sys.argv[2])))
    outcome = f"read {len(points[0][0].telemetry_samples)} samples"
except ImportFileError as exc:
    outcome = str(exc)
print(json.dumps({"grew": status("VmHWM:") - before, "outcome": outcome}))
"""


def telemetry_line(size: int) -> str:
    """A point line whose telemetry_samples make it `size` bytes: [{"t":0},{"t":0},...]."""
    head = point_result().model_copy(update={"requests": []}).model_dump_json()
    count = (size - len(head) - 24) // 8
    samples = '"telemetry_samples":[' + ",".join(['{"t":0}'] * count) + "]"
    return head.replace('"telemetry_samples":[]', samples)


def write(path: Path, form: str, size: int) -> Path:
    line = telemetry_line(size)
    path.write_text(line + "\n" if form == "jsonl" else '{"benchmark":{},"points":[' + line + "]}")
    return path


def imported(path: Path) -> tuple[int, str]:
    """(bytes the import's process grew to beyond what it held before, what it said)."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, str(path), str(LIMIT)],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )
    result = json.loads(done.stdout)
    return result["grew"], result["outcome"]


@pytest.mark.parametrize("form", ["jsonl", "download"])
def test_a_file_of_tiny_samples_over_the_document_limit_is_refused_under_the_ceiling(
    tmp_path, form
):
    grew, outcome = imported(write(tmp_path / f"run.{form}", form, 4 * LIMIT))

    assert grew < CEILING_FACTOR * LIMIT, f"{grew / MB:.0f} MB: {outcome}"
    assert "is over 1.0 MB" in outcome or "a line over 1.0 MB" in outcome, outcome
    assert outcome.endswith("the limit for one document read whole")


@pytest.mark.parametrize("form", ["jsonl", "download"])
def test_a_file_of_tiny_samples_just_within_the_limit_is_read_under_the_ceiling(tmp_path, form):
    grew, outcome = imported(write(tmp_path / f"run.{form}", form, LIMIT - 4096))

    assert outcome.startswith("read ") and outcome.endswith(" samples"), outcome
    assert grew < CEILING_FACTOR * LIMIT, f"{grew / MB:.0f} MB"
