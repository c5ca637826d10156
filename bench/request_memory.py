"""Peak resident memory of one large point in each process it passes through.

A point of N requests x K streamed chunks is made, written, read back, stored and decoded by the
real code, each process's stage in its own fresh subprocess, and the stage's peak RSS (VmHWM,
which counts every page the process ever had resident, C allocations included) is reported:

- client: the records as the collector makes them, then the message(s) a client worker sends
  them to the parent in (runner.client.workers; before: one orjson text of model_dump()s);
- runner: the records as the collector makes them, runner.measure.metrics.aggregate, and
  runner.results.append_point of the PointResult;
- worker: an upload's import (benchmarks.storage.imports.import_file): runner.importer
  iter_result_file_into of that file, each point's batches into a columnar.RequestEncoder as
  they are read, and the blob written out a piece at a time as store_point's COPY sends it
  (here to a file). With --db, import_file itself into PostgreSQL (DATABASE_URL, migrated),
  committed for the download stage and deleted at the end;
- celery: the worker that measured the point (benchmarks.worker.tasks.execute_benchmark): the
  records as run_plan yields them (made and aggregated as the runner stage does), given up to a
  RequestEncoder (take) and the blob written out; with --db, store_point into PostgreSQL in a
  transaction rolled back after;
- web: the run page's judgement of the point, which reads the Point row's aggregates only
  (judgement.figures.point_result -> figures), and output parity's read of the blob
  (columnar.request_columns of judgement.comparison_view._PARITY_FIELDS: what a comparison page
  reads per request); with --db, the blob read from PostgreSQL as judgement.comparison_view._kept
  reads it (points.stored_requests);
- download: the point as the JSON download streams it (dashboard.views._point_json, its
  requests from columnar.iter_requests: a block of records at a time); with --db, the stored
  point read back from PostgreSQL as run_json reads it (views._stored_point_json: the blob in
  binary pieces, points.stored_requests).

Records are made through ResponseCollector.record(), the collector's chunk-time list filled
directly (the SSE parsing per event is not what is measured, and at 100 million events it
would take minutes): chunk times increase with jitter (gamma gaps around 20 ms after a TTFT
around 100 ms), one token per chunk, usage and finish_reason as vLLM sends them.

--before ROOT runs the same stages against another checkout (a `git worktree` of an older
commit) for a before/after table; its code is imported, this script drives it, and a stage the
older code lacks falls back to what that code did (the worker's iter_points + encode_requests,
the web's decode_requests).

Run: .venv/bin/python bench/request_memory.py [--sizes 32768x256,100000x1000]
     [--before DIR --before-sizes 32768x256] [--stages client,runner,worker,...]
     [--db]
Quick: .venv/bin/python bench/request_memory.py --quick [--db] (every stage on a point of
QUICK_SIZE, seconds; tests/bench runs it so the script keeps working).

A stage that fails is shown as "failed" in the table and the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
ROOT = HERE.parent.parent
STAGES = ("client", "runner", "worker", "celery", "web", "download")
DB_STAGES = ("worker", "celery", "web", "download")
QUICK_SIZE = "256x16"


def peak_mib() -> float:
    """VmHWM: the most this process ever had resident."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


# -- stages (each in its own process, importing the code under test from sys.path[0]) --------


def make_records(requests: int, chunks: int) -> list[Any]:
    import numpy as np

    from runner.client.httpstream import HttpResult
    from runner.client.responses import ResponseCollector

    rng = np.random.default_rng(14)
    sends = np.sort(rng.uniform(0.0, 5.0, requests))
    records = []
    for index in range(requests):
        send = float(sends[index])
        gaps = rng.gamma(8.0, 0.0025, chunks)  # ~20 ms apart, jittered
        gaps[0] = rng.gamma(4.0, 0.025)  # TTFT ~100 ms
        times = (send + 0.0004 + np.cumsum(gaps)).tolist()
        collector = ResponseCollector(index, 0, 0.0, False, prompt_tokens=64)
        collector.intended = send
        collector.actual = send + 0.0004
        collector.chunk_times = times  # what on_event appends, one per content chunk
        collector.usage = {"prompt_tokens": 64, "completion_tokens": chunks,
                           "total_tokens": 64 + chunks}
        collector.finish_reason = "length"
        collector.done_seen = True
        result = HttpResult(status=200, sent_at=send, ended_at=times[-1] + 0.0001,
                            connect_s=0.0002)
        records.append(collector.record(result, None))
    return records


def workload(chunks: int) -> Any:
    from runner.schema.plan import WorkloadSpec

    return WorkloadSpec(kind="random", output_tokens=chunks, ignore_eos=True,
                        endpoint="completions", input_tokens_min=64, input_tokens_max=64)


def stage_client(requests: int, chunks: int, folder: Path) -> dict[str, Any]:
    import pickle

    import orjson

    from runner.client import workers
    from runner.client.workers import record_batches

    records = make_records(requests, chunks)
    after_records = rss_mib()
    started = time.perf_counter()
    largest = 0
    if hasattr(workers, "record_batches"):
        # The queue's feeder thread pickles each message whole before writing it.
        for batch in record_batches(records):
            largest = max(largest, len(pickle.dumps(batch, pickle.HIGHEST_PROTOCOL)))
    else:  # before: one message, the records as JSON
        largest = len(orjson.dumps({"records": [r.model_dump() for r in records]}))
    return {"records_mib": after_records, "largest_message_mib": largest / 2**20,
            "seconds": time.perf_counter() - started}


def stage_runner(requests: int, chunks: int, folder: Path) -> dict[str, Any]:
    from runner.measure.metrics import aggregate, window_of
    from runner.results import append_point
    from runner.schema.engine_config import EngineConfig
    from runner.schema.plan import LoadSpec
    from runner.schema.result import PointResult

    started = time.perf_counter()
    records = make_records(requests, chunks)
    made = time.perf_counter()
    after_records = rss_mib()
    spec = workload(chunks)
    metrics = aggregate(records, spec)
    aggregated = time.perf_counter()
    point = PointResult(key=f"memory|burst {requests}|r0", engine_config=EngineConfig(),
                        load=LoadSpec(num_requests=requests), workload=spec,
                        window=window_of(records), metrics=metrics, requests=records)
    out = folder / "results.jsonl"
    out.unlink(missing_ok=True)
    append_point(out, point)
    written = time.perf_counter()
    (folder / "metrics.json").write_text(metrics.model_dump_json())
    return {"records_mib": after_records, "make_s": made - started,
            "aggregate_s": aggregated - made, "append_s": written - aggregated,
            "file_mib": out.stat().st_size / 2**20}


def stage_worker(requests: int, chunks: int, folder: Path, db: bool = False) -> dict[str, Any]:
    from benchmarks.storage import columnar

    path = folder / "results.jsonl"
    started = time.perf_counter()
    if db:
        return {**_import_into_db(path, folder), "import_s": time.perf_counter() - started}
    if not hasattr(columnar, "RequestEncoder"):  # before: the records whole, then the blob
        from runner.results import iter_points

        warnings: list[str] = []
        (point,) = iter_points(path, warnings)
        assert len(point.requests) == requests and not warnings, warnings
        blob = columnar.encode_requests(point.requests)
        (folder / "requests.blob").write_bytes(blob)
        return {"import_s": time.perf_counter() - started, "blob_mib": len(blob) / 2**20}
    from runner.importer.files import iter_result_file_into

    ((point, encoder),) = iter_result_file_into(path, columnar.RequestEncoder)
    with encoder:
        assert encoder.count == requests and not point.requests
        read = time.perf_counter()
        size = _write_blob(encoder, folder / "requests.blob")
    return {"read_encode_s": read - started, "layout_write_s": time.perf_counter() - read,
            "blob_mib": size / 2**20}


def _write_blob(encoder: Any, path: Path) -> int:
    """The blob a piece at a time, as store_point's COPY writes it to PostgreSQL."""
    with path.open("wb") as out:
        for piece in encoder.blob().pieces():
            out.write(piece)
    return path.stat().st_size


def _django() -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    # config.settings refuses to start without a key while DEBUG is off; nothing here is signed.
    os.environ.setdefault("SECRET_KEY", "bench-only-" + "x" * 40)
    django.setup()


def _import_into_db(path: Path, folder: Path) -> dict[str, Any]:
    """benchmarks.storage.imports.import_file into the database DATABASE_URL names, committed."""
    _django()
    from benchmarks.models import PointData
    from benchmarks.storage.imports import import_file

    benchmark = import_file(path, name="request-memory bench")
    (folder / "db.json").write_text(json.dumps({"benchmark": benchmark.pk}))
    data = PointData.objects.filter(point__benchmark=benchmark).values_list("request_count")
    return {"stored_requests": data.get()[0]}


def stage_celery(requests: int, chunks: int, folder: Path, db: bool = False) -> dict[str, Any]:
    from benchmarks.storage import columnar
    from runner.measure.metrics import aggregate, window_of
    from runner.schema.engine_config import EngineConfig
    from runner.schema.plan import LoadSpec
    from runner.schema.result import PointResult

    if db:
        _django()
    started = time.perf_counter()
    records = make_records(requests, chunks)
    spec = workload(chunks)
    point = PointResult(key=f"memory|burst {requests}|r0", engine_config=EngineConfig(),
                        load=LoadSpec(num_requests=requests), workload=spec,
                        window=window_of(records), metrics=aggregate(records, spec),
                        requests=records)
    del records
    measured = time.perf_counter()
    peak_measured = peak_mib()  # the run's own peak, before the point is stored
    with columnar.RequestEncoder() as encoder:
        encoder.take(point.requests)
        if db:
            return {"measured_peak_mib": peak_measured, "measure_s": measured - started,
                    **_store(point, encoder, folder)}
        size = _write_blob(encoder, folder / "celery.blob")
    return {"measured_peak_mib": peak_measured, "measure_s": measured - started,
            "store_s": time.perf_counter() - measured, "blob_mib": size / 2**20}


def _store(point: Any, encoder: Any, folder: Path) -> dict[str, Any]:
    """store_point into the run the worker stage imported (--db), as another point, in a
    transaction rolled back after."""
    from django.db import transaction

    from benchmarks.models import Benchmark
    from benchmarks.storage.points import store_point

    started = time.perf_counter()
    with transaction.atomic():
        benchmark = Benchmark.objects.get(pk=json.loads((folder / "db.json").read_text())[
            "benchmark"])
        point.key = f"memory|celery {encoder.count}|r0"
        store_point(benchmark, point, requests=encoder)
        stored = time.perf_counter()
        transaction.set_rollback(True)
    return {"store_s": stored - started}


def stage_web(requests: int, chunks: int, folder: Path, db: bool = False) -> dict[str, Any]:
    _django()
    from analysis.convert import from_point_result
    from benchmarks.storage import columnar
    from judgement.comparison_view import _PARITY_FIELDS
    from runner.schema.result import Metrics

    started = time.perf_counter()
    if db:  # as _kept reads it
        from benchmarks.models import Point
        from benchmarks.storage.points import stored_requests

        benchmark = json.loads((folder / "db.json").read_text())["benchmark"]
        blob = stored_requests(Point.objects.get(benchmark_id=benchmark))
    else:
        blob = (folder / "requests.blob").read_bytes()
    read = time.perf_counter()
    if hasattr(columnar, "request_columns"):
        columns = columnar.request_columns(blob, _PARITY_FIELDS)
        assert len(columns.values["index"]) == requests
    else:  # before: output parity decoded the records
        assert len(columnar.decode_requests(blob)) == requests
    decoded = time.perf_counter()
    # The run page's judgement: point_result() is the Point row without its records.
    figures = from_point_result(_point(requests, chunks, folder, []))
    assert figures is not None and Metrics.model_validate_json(
        (folder / "metrics.json").read_text()).completed == requests
    return {"blob_read_s": read - started, "parity_columns_s": decoded - read,
            "blob_mib": len(blob) / 2**20}


def stage_download(requests: int, chunks: int, folder: Path, db: bool = False) -> dict[str, Any]:
    """The JSON download's pieces for the point, written out as the streaming response writes
    them."""
    _django()
    from benchmarks.storage import columnar
    from dashboard import views

    started = time.perf_counter()
    if db:
        from benchmarks.models import Point

        benchmark = json.loads((folder / "db.json").read_text())["benchmark"]
        pieces = views._stored_point_json(Point.objects.get(benchmark_id=benchmark))
    elif hasattr(columnar, "iter_requests"):
        records = columnar.iter_requests((folder / "requests.blob").read_bytes())
        pieces = views._point_json(_point(requests, chunks, folder, []), records)
    else:  # before: the point's records decoded whole
        records = columnar.decode_requests((folder / "requests.blob").read_bytes())
        pieces = views._point_json(_point(requests, chunks, folder, records))
    written = 0
    with open(os.devnull, "w") as sink:
        for piece in pieces:
            written += sink.write(piece)
    return {"json_mib": written / 2**20, "dump_s": time.perf_counter() - started}


def _point(requests: int, chunks: int, folder: Path, records: list[Any]) -> Any:
    from runner.schema.engine_config import EngineConfig
    from runner.schema.plan import LoadSpec
    from runner.schema.result import Metrics, PointResult

    metrics = Metrics.model_validate_json((folder / "metrics.json").read_text())
    return PointResult(key=f"memory|burst {requests}|r0", engine_config=EngineConfig(),
                       load=LoadSpec(num_requests=requests), workload=workload(chunks),
                       metrics=metrics, requests=records)


def cleanup_db(folder: Path) -> None:
    """Delete the run the worker stage imported (--db)."""
    if not (folder / "db.json").exists():
        return
    _django()
    from benchmarks.models import Benchmark

    Benchmark.objects.filter(pk=json.loads((folder / "db.json").read_text())["benchmark"]).delete()


def run_stage(args: argparse.Namespace) -> None:
    if args.stage == "cleanup":
        cleanup_db(Path(args.dir))
        print(json.dumps({"stage": "cleanup"}))
        return
    baseline = rss_mib()
    stage = globals()[f"stage_{args.stage}"]
    extra = {"db": True} if args.stage in DB_STAGES and args.db else {}
    figures = stage(args.requests, args.chunks, Path(args.dir), **extra)
    print(json.dumps({"stage": args.stage, "peak_mib": peak_mib(), "start_mib": baseline,
                      **figures}))


# -- driver --------------------------------------------------------------------------------


def measure(root: Path, stage: str, requests: int, chunks: int, folder: Path,
            db: bool) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(root), "DJANGO_SETTINGS_MODULE": "config.settings"}
    command = [sys.executable, str(HERE), "--stage", stage, "--root", str(root),
               "--requests", str(requests), "--chunks", str(chunks), "--dir", str(folder)]
    if db:
        command.append("--db")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        return {"stage": stage, "error": (done.stderr or done.stdout).strip().splitlines()[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="32768x256,100000x1000",
                        help="comma-separated REQUESTSxCHUNKS")
    parser.add_argument("--before", type=Path, help="an older checkout to measure beside this")
    parser.add_argument("--before-sizes", default="32768x256",
                        help="sizes for --before (its 100,000 x 1,000 needs about 12 GB)")
    parser.add_argument("--stages", default=",".join(STAGES))
    parser.add_argument("--db", action="store_true",
                        help="worker, celery, web, download: through PostgreSQL (DATABASE_URL)")
    parser.add_argument("--stage", choices=(*STAGES, "cleanup"), help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--chunks", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke test: every size {QUICK_SIZE} (requests x chunks)")
    args = parser.parse_args()
    if args.stage:
        sys.path.insert(0, str(args.root))
        run_stage(args)
        return 0
    if args.quick:
        args.sizes = args.before_sizes = QUICK_SIZE
    stages = [s for s in args.stages.split(",") if s]
    trees = [("before", args.before, args.before_sizes)] if args.before else []
    trees.append(("after", ROOT, args.sizes))
    rows = []
    for name, root, sizes in trees:
        for size in sizes.split(","):
            requests, chunks = (int(part) for part in size.lower().split("x"))
            with tempfile.TemporaryDirectory(prefix="request-memory-") as folder:
                try:
                    for stage in stages:
                        figures = measure(root, stage, requests, chunks, Path(folder), args.db)
                        rows.append((name, f"{requests:,} x {chunks:,}", figures))
                        print(f"{name:6} {requests:>7,} x {chunks:<5,} {stage:8} "
                              f"{json.dumps(figures)}", file=sys.stderr, flush=True)
                finally:
                    if args.db:
                        measure(root, "cleanup", requests, chunks, Path(folder), args.db)
    print("| code | point | stage | peak RSS MiB | details |")
    print("|---|---|---|---|---|")
    for name, size, figures in rows:
        peak = figures.get("peak_mib")
        details = ", ".join(
            f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
            for k, v in figures.items() if k not in ("stage", "peak_mib")
        )
        cell = f"{peak:,.0f}" if peak is not None else "failed"
        print(f"| {name} | {size} | {figures['stage']} | {cell} | {details} |")
    return 1 if any("error" in figures for _, _, figures in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
