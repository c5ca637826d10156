"""Files built to be slow to read are refused, or read, within a budget of CPU time: the shapes
that once made a reader's time grow faster than the file, and their neighbours."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.importer import ImportFileError, load_result_file
from tests.runner.test_results_and_import import vllm_bench_032

KB = 1024
MB = 1024 * KB
# Generous for a loaded two-core host; the attack inputs here are large enough that the
# quadratic readers they guard against took ten times this or more.
CPU_BUDGET_S = 3.0


def cpu_seconds(read: Callable[[], object]) -> float:
    start = time.process_time()
    read()
    return time.process_time() - start


def refused_in(path: Path) -> float:
    """CPU seconds load_result_file took to refuse the file."""

    def read() -> None:
        with pytest.raises(ImportFileError):
            load_result_file(path)

    return cpu_seconds(read)


# ---------------------------------------------------------------------------------------------
# A vllm bench file, read whole after its nesting is checked
# ---------------------------------------------------------------------------------------------

ESCAPED_QUOTES = b'\\"' * (64 * KB)  # 128 KB
HOSTILE_DOCUMENTS = {
    "an open string of escaped quotes": b'{"duration": "' + ESCAPED_QUOTES,
    "an open string of escaped quotes on a second line":
        json.dumps(vllm_bench_032()).encode() + b'\n{"duration": "' + ESCAPED_QUOTES,
    "an open string ending in a lone backslash": b'"' + ESCAPED_QUOTES + b"\\",
    "an open string of backslashes": b'{"a": "' + b"\\" * (128 * KB),
    "escaped quotes between brackets": b'["' + b'\\"[]' * (32 * KB),
    "deep nesting": b"[" * MB,
    "many small brackets": b"[" + b"[]," * (MB // 3) + b"[]]",
    "many empty strings": b"[" + b'"",' * (MB // 3) + b'""]',
}


@pytest.mark.parametrize("shape", HOSTILE_DOCUMENTS)
def test_a_json_file_built_to_be_slow_is_refused_within_the_budget(tmp_path, shape):
    path = tmp_path / "hostile.json"
    path.write_bytes(HOSTILE_DOCUMENTS[shape])
    assert refused_in(path) < CPU_BUDGET_S


def test_brackets_inside_strings_full_of_escaped_quotes_are_not_nesting(tmp_path):
    texts = ['"[' * 1000, '\\"{' * 1000, "\\", "]"]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(vllm_bench_032(generated_texts=texts)))
    (point,) = load_result_file(path)
    assert point.metrics.completed == 4
