"""Files built to be slow to read are refused, or read, within a budget of CPU time: the shapes
that once made a reader's time grow faster than the file, and their neighbours."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from runner.cli.commands import CliError, load_plan
from runner.importer.downloads import MAX_VALUE_BYTES
from runner.importer.files import load_result_file
from runner.importer.vllm_document import ImportFileError
from runner.plan_text import MAX_PLAN_DEPTH
from runner.schema.engine_config import EngineConfig
from runner.schema.plan import LoadSpec, SweepPlan
from tests.runner.importer.test_results_and_import import (
    download_of,
    make_point,
    vllm_bench_032,
    with_requests,
)

KB = 1024
MB = 1024 * KB
# Generous for a loaded two-core host; the attack inputs here are large enough that the
# quadratic readers they guard against took ten times this or more.
CPU_BUDGET_S = 3.0


def cpu_seconds(read: Callable[[], object]) -> float:
    start = time.process_time()
    read()
    return time.process_time() - start


def refused_in(path: Path, match: str | None = None) -> float:
    """CPU seconds load_result_file took to refuse the file (with a message matching match)."""

    def read() -> None:
        with pytest.raises(ImportFileError, match=match):
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


# ---------------------------------------------------------------------------------------------
# A run's download, read as a stream by ijson
# ---------------------------------------------------------------------------------------------

DOWNLOAD_START = b'{"benchmark": '
# Built when used: together they are 80 MB.
HOSTILE_DOWNLOADS: dict[str, Callable[[], bytes]] = {
    "a string of escaped quotes":
        lambda: DOWNLOAD_START + b'"' + b'\\"' * (12 * MB) + b'", "points": []}',
    "a string of backslashes left open": lambda: DOWNLOAD_START + b'"' + b"\\" * (24 * MB),
    "a long number": lambda: DOWNLOAD_START + b"1" + b"0" * (32 * MB) + b', "points": []}',
}


@pytest.mark.parametrize("shape", HOSTILE_DOWNLOADS)
def test_a_download_with_a_value_built_to_be_slow_is_refused_within_the_budget(tmp_path, shape):
    path = tmp_path / "run.json"
    path.write_bytes(HOSTILE_DOWNLOADS[shape]())
    assert refused_in(path, match="longer than any in a run download") < CPU_BUDGET_S


def test_a_download_with_values_as_long_as_it_allows_is_read_within_the_budget(tmp_path):
    point = with_requests(make_point(4), 40)
    for record in point.requests:  # each error 2 bytes a quote once escaped
        record.error = '"' * ((MAX_VALUE_BYTES - 64 * KB) // 2)
    path = tmp_path / "run.json"
    path.write_text(download_of(point))
    read: list = []
    assert cpu_seconds(lambda: read.extend(load_result_file(path))) < CPU_BUDGET_S
    assert read == [point]


# ---------------------------------------------------------------------------------------------
# A plan file, read by the CLI as the dashboard's upload reads it (runner.plan_text)
# ---------------------------------------------------------------------------------------------

PLAN_BYTES = 64 * KB  # the dashboard's upload limit


def filled(unit: str) -> str:
    return unit * (PLAN_BYTES // len(unit))


TOWER = "[" * (MAX_PLAN_DEPTH - 1) + "]" * (MAX_PLAN_DEPTH - 1)
LAUGHS = "a: &a [" + ", ".join(["lol"] * 10) + "]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 10)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)
)
HOSTILE_PLANS = {
    "nested brackets": "[" * PLAN_BYTES,
    "nested braces": "{" * PLAN_BYTES,
    "nested flow mappings": filled("{a: "),
    "nested block sequences": filled("- "),
    "towers of brackets just under the depth limit": "[" + filled(TOWER + ",")[:-1] + "]",
    "the towers a line each": "- " + filled(TOWER + "\n- "),
    "a long flow sequence": "[" + filled("a, ") + "a]",
    "a long flow sequence of empty ones": "[" + filled("[], ") + "[]]",
    "a long flow mapping": "{" + filled("a: b, ") + "}",
    "many anchors": "[" + ", ".join(f"&a{i} x" for i in range(PLAN_BYTES // 10)) + "]",
    "nested aliases": LAUGHS,
    "a quoted scalar of escaped quotes left open": '"' + filled('\\"'),
}


@pytest.mark.parametrize("shape", HOSTILE_PLANS)
def test_a_plan_file_built_to_be_slow_is_refused_within_the_budget(tmp_path, shape):
    path = tmp_path / "plan.yaml"
    path.write_text(HOSTILE_PLANS[shape])

    def read() -> None:
        with pytest.raises(CliError, match=r"^.*plan\.yaml: "):
            load_plan(path)

    assert cpu_seconds(read) < CPU_BUDGET_S


def test_the_largest_plan_the_launch_form_writes_is_read_within_the_bounds(tmp_path):
    plan = SweepPlan(
        name="twenty by twenty",
        checkpoint={"model": "var/tiny-model"},
        engine_configs=[EngineConfig(max_num_seqs=2**i, extra_args=["--enable-chunked-prefill"])
                        for i in range(20)],
        loads=[LoadSpec(shape="concurrency", concurrency=c, num_requests=1000)
               for c in range(1, 21)],
    )
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan.model_dump(mode="json"), sort_keys=False))
    assert load_plan(path) == plan
