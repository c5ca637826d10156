"""`vllm bench sweep serve` output: its summary.json and summary.csv as vllm bench points.

vLLM's sweep (vllm/benchmarks/sweep/serve.py) runs `vllm bench serve --save-result` once per
serve-parameter x bench-parameter combination and repeat, and adds to each run's result the
repeat (run_number) and the parameters it swept (max_num_seqs: 64, max_concurrency: 32): each
run is a vllm bench serve file read by runner.importer.vllm_bench, whose --metadata reading
takes the swept engine settings by their names. Per combination it writes run=N.json and
summary.json (their list); over the sweep, summary.csv (every run's keys as columns, pandas'
to_csv: an unnamed index column first, an empty cell for a key a run did not have). A CSV cell
holds a number or a string; the --save-detailed arrays are Python lists there, which are not
read back: a point from summary.csv has no per-request records, and says so.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator
from typing import Any

from runner.importer.detect import vllm_bench_format
from runner.importer.vllm_bench import from_vllm_bench
from runner.importer.vllm_document import ImportFileError
from runner.schema.result import PointResult

# Read back from summary.csv as lists, not values: vLLM's --save-detailed arrays.
ARRAY_COLUMNS = frozenset({"input_lens", "output_lens", "ttfts", "itls", "generated_texts",
                           "errors", "start_times", "latencies", "queue_times"})  # fmt: skip


def summary_points(document: list[Any], source: str) -> Iterator[PointResult]:
    """summary.json: the combination's runs, each a vllm bench serve result."""
    for index, run in enumerate(document):
        if not isinstance(run, dict):
            raise ImportFileError(f"{source}: item {index} is not a vllm bench serve result")
        yield from_vllm_bench(run, source_name=f"{source}#{index}",
                              format_label=vllm_bench_format(run))


def csv_points(text: str, source: str) -> Iterator[PointResult]:
    """summary.csv: one point a row."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header or "duration" not in header:
        raise ImportFileError(
            f"{source}: not a vllm bench sweep summary.csv (no duration column); Headroom reads "
            "a CSV only as that"
        )
    columns = list(header)
    for line, row in enumerate(reader, 2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(columns):
            raise ImportFileError(f"{source}:{line}: {len(row)} cells, the header has "
                                  f"{len(columns)}")  # fmt: skip
        document = {name: _cell(cell) for name, cell in zip(columns, row, strict=True)
                    if name and cell != "" and name not in ARRAY_COLUMNS}  # fmt: skip
        point = from_vllm_bench(document, source_name=f"{source}:{line}",
                                format_label=vllm_bench_format(document))
        dropped = [name for name, cell in zip(columns, row, strict=True)
                   if name in ARRAY_COLUMNS and cell]  # fmt: skip
        point.notes.append(
            "read from vllm bench sweep's summary.csv"
            + (f"; its --save-detailed columns ({', '.join(dropped)}) are not read back from "
               "the CSV: import the run=N.json files for the requests" if dropped else "")
        )
        yield point


def _cell(cell: str) -> Any:
    """A CSV cell as pandas wrote it: an integer, a float, or the text ("inf" stays text, as
    vLLM writes an infinite request_rate)."""
    text = cell.strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    # pandas writes an integer column with an empty cell as floats: 100.0 is vLLM's 100.
    return int(value) if value.is_integer() else value
