"""Persist runner.schema.result.PointResult objects as Point rows, and read them back.

Used by the worker task (one point as it finishes) and by imports (every point of a file).
"""

from __future__ import annotations

import contextlib
import struct
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from django.db import connection, transaction
from django.db.models import F, Field, Q
from django.db.models.functions import Greatest

from analysis.caveats import automatic_caveats
from benchmarks.models import Benchmark, Caveat, Point, PointData
from benchmarks.storage import blobs, columnar
from runner.schema.result import Metrics, PointResult, Window
from runner.schema.samples import TelemetrySummary
from runner.search.observation import Observation, observe

METRIC_FIELDS: tuple[str, ...] = tuple(Metrics.model_fields)
# The telemetry summary's point-level figures, one CSV column each (telemetry_<field>); the
# per-GPU figures and the notes are in the JSON download.
TELEMETRY_FIELDS = (
    "source", "mean_utilization_pct", "mean_power_w", "peak_power_w", "energy_j",
    "energy_method", "joules_per_output_token", "output_tokens_per_joule", "cpu_seconds",
    "mean_cores_busy",
)  # fmt: skip
TELEMETRY_CSV_COLUMNS = tuple(f"telemetry_{name}" for name in TELEMETRY_FIELDS)


def telemetry_cells(stored: dict[str, object]) -> list[object]:
    """Point.telemetry's figures in TELEMETRY_CSV_COLUMNS order (read through the schema, so a
    point stored before telemetry existed gives empty cells, not an error)."""
    summary = TelemetrySummary.model_validate(stored or {})
    return [getattr(summary, name) for name in TELEMETRY_FIELDS]


def store_point(
    benchmark: Benchmark, result: PointResult, *, requests: columnar.RequestEncoder | None = None
) -> Point:
    """Save one point, its compressed records, its automatic caveats; bump the run's counters.

    requests: an encoder the point's records were already given to (an import feeds it each
    batch as it reads the file; the worker gives it the records it measured), result.requests
    then left unread; None: they are encoded here from result.requests.
    """
    with contextlib.ExitStack() as stack:
        if requests is None:
            requests = stack.enter_context(columnar.RequestEncoder())
            requests.add(result.requests)
        return _store_point(benchmark, result, requests)


def _store_point(
    benchmark: Benchmark, result: PointResult, requests: columnar.RequestEncoder
) -> Point:
    metrics = result.metrics.model_dump()
    window = result.window
    with transaction.atomic():
        point = Point.objects.create(
            benchmark=benchmark,
            key=result.key,
            plan_name=result.plan_name,
            source=result.source,
            engine_label=result.engine_config.label(),
            engine_config=result.engine_config.model_dump(mode="json"),
            load_label=result.load.label(),
            load=result.load.model_dump(mode="json"),
            offered_concurrency=result.load.offered_concurrency(),
            workload=result.workload.model_dump(mode="json"),
            repeat=result.repeat,
            replicas=result.replicas,
            t0_monotonic=result.t0_monotonic,
            window_start=window.start if window else None,
            window_end=window.end if window else None,
            client_saturated=result.client.saturated,
            client=result.client.model_dump(mode="json"),
            queue=result.queue.model_dump(mode="json"),
            per_replica=[r.model_dump(mode="json") for r in result.per_replica],
            provenance=result.provenance.model_dump(mode="json") if result.provenance else None,
            notes=list(result.notes),
            telemetry=result.telemetry.model_dump(mode="json"),
            lengths=result.lengths.model_dump(mode="json") if result.lengths else None,
            conversations=(
                result.conversations.model_dump(mode="json") if result.conversations else None
            ),
            quality=result.quality.model_dump(mode="json") if result.quality else None,
            search=result.search.model_dump(mode="json") if result.search else None,
            peer=result.peer.model_dump(mode="json") if result.peer else None,
            host=result.host.model_dump(mode="json") if result.host else None,
            control=result.control,
            end_control=result.end_control,
            **metrics,
        )
        _insert_point_data({
            "point": point,
            "request_count": requests.count,
            "sample_count": len(result.samples),
            "requests": requests.blob(),
            "samples": columnar.encode_samples(result.samples),
            "telemetry": columnar.encode_telemetry(result.telemetry_samples),
        })
        Caveat.objects.bulk_create(
            Caveat(point=point, code=code, kind=kind, text=text, automatic=True)
            for code, kind, text in automatic_caveats(
                result, imported=benchmark.source == Benchmark.Source.IMPORTED)
        )
        _count_point(benchmark, result)
    return point


def _insert_point_data(values: dict[str, Any]) -> None:
    """INSERT the point's PointData row; its requests blob is written out a piece at a time.

    On PostgreSQL (psycopg 3) the row goes in by COPY ... FROM STDIN (FORMAT BINARY) on a plain
    psycopg cursor of the same connection, inside the same transaction, its bytes written as
    the blob's layout makes them (columnar.Layout.pieces): the blob of a 100,000 x 1,000 point
    (590 MB) is never held whole, nor copied into libpq's buffer as a bound parameter would
    be, nor sent as the hex literal twice its size that Django's client-side binding makes.
    Elsewhere (SQLite) an ordinary save() of the blob made whole.
    """
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if connection.vendor != "postgresql" or not is_psycopg3:
        PointData(**{**values, "requests": values["requests"].tobytes()}).save(force_insert=True)
        return
    import psycopg
    from psycopg import sql

    fields = PointData._meta.concrete_fields
    query = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        sql.Identifier(PointData._meta.db_table),
        sql.SQL(", ").join(sql.Identifier(field.column) for field in fields),
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor, cursor.copy(query) as copy:
        for piece in _copy_row(values, fields):
            copy.write(piece)


# PostgreSQL's binary COPY framing: the signature, flags and header extension length; the end.
_COPY_HEAD = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_END = struct.pack(">h", -1)
_COPY_INTEGERS = {"bigint": ">q", "integer": ">i", "smallint": ">h"}


def _copy_row(values: dict[str, Any], fields: Sequence[Field]) -> Iterator[bytes | memoryview]:
    """The one row of a binary COPY: each field's length, then its bytes (big-endian integers,
    bytea as is); the requests blob a piece at a time."""
    yield _COPY_HEAD + struct.pack(">h", len(fields))
    for field in fields:
        value = values[field.name]
        db_type = field.db_type(connection)
        if isinstance(value, columnar.Layout):
            yield struct.pack(">i", value.size)
            yield from value.pieces()
        elif isinstance(value, (bytes, bytearray)):
            yield struct.pack(">i", len(value)) + value
        elif db_type in _COPY_INTEGERS:
            number = value.pk if isinstance(value, Point) else value
            integer = struct.Struct(_COPY_INTEGERS[db_type])
            yield struct.pack(">i", integer.size) + integer.pack(number)
        else:  # a column added to PointData without a way to write it here: say so
            raise TypeError(f"PointData.{field.name}: cannot COPY a {db_type} value")
    yield _COPY_END


# Bytes of a stored requests blob read at a time on PostgreSQL (stored_requests).
READ_PIECE_BYTES = 8 << 20


def stored_requests(point: Point) -> bytes | bytearray | None:
    """The point's requests blob; None when it has no PointData row.

    On PostgreSQL (psycopg 3) it is read into one buffer in pieces of READ_PIECE_BYTES, as
    binary results, on a plain psycopg cursor of Django's connection: Django's own query has
    bytea come back as hex text, twice the blob's size, copied twice more on its way to bytes.
    substring() of the column, stored uncompressed (EXTERNAL), reads only the TOAST chunks a
    piece needs, and the pieces come one row at a time (cursor.stream). Elsewhere (SQLite) the
    ORM's value.
    """
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if connection.vendor != "postgresql" or not is_psycopg3:
        rows = PointData.objects.filter(point=point).values_list("requests", flat=True)
        return rows.first()
    import psycopg
    from psycopg import sql

    table = sql.Identifier(PointData._meta.db_table)
    size_query = sql.SQL("SELECT octet_length(requests) FROM {} WHERE point_id = %s")
    pieces_query = sql.SQL(
        "SELECT s, substring(requests FROM s FOR %s::integer) FROM {}, "
        "generate_series(1, %s::integer, %s::integer) AS s WHERE point_id = %s"
    )
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:
        row = cursor.execute(size_query.format(table), [point.pk]).fetchone()
        if row is None:
            return None
        blob = bytearray(row[0])
        step = READ_PIECE_BYTES
        params = [step, len(blob), step, point.pk]
        # Each piece is placed by its own offset: the rows' order is not relied on.
        for start, piece in cursor.stream(pieces_query.format(table), params, binary=True):
            blob[start - 1 : start - 1 + len(piece)] = piece
    return blob


# A requests blob's head (one JSON entry per array) is a few kilobytes: this many bytes are read
# first, and the rest of a longer head once more.
HEAD_READ_BYTES = 16 << 10


def stored_request_arrays(point: Point, fields: Sequence[str]) -> dict[str, np.ndarray] | None:
    """A few numeric fields of the point's requests (columnar.request_arrays); None when it has
    no PointData row.

    On PostgreSQL only the blob's head and those fields' arrays are read: substring() of the
    uncompressed (EXTERNAL) column reads only the TOAST chunks they lie in, a few percent of a
    large blob (docs/performance.md, "Dashboard"). A format 1 blob, and any blob elsewhere
    (SQLite), is read whole.
    """
    from django.db.backends.postgresql.psycopg_any import is_psycopg3

    if connection.vendor != "postgresql" or not is_psycopg3:
        blob = stored_requests(point)
        return None if blob is None else columnar.request_arrays(blob, fields)
    import psycopg
    from psycopg import sql

    spans_query = sql.SQL(
        "SELECT s.n, substring(requests FROM s.start FOR s.size) FROM {}, "
        "unnest(%s::integer[], %s::integer[]) WITH ORDINALITY AS s(start, size, n) "
        "WHERE point_id = %s ORDER BY s.n"
    ).format(sql.Identifier(PointData._meta.db_table))
    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cursor:

        def read(spans: list[tuple[int, int]]) -> list[bytes]:
            """The bytes at each (offset, size) of the blob, in order."""
            params = [[start + 1 for start, _ in spans], [size for _, size in spans], point.pk]
            rows = cursor.execute(spans_query, params, binary=True).fetchall()
            return [bytes(piece) for _n, piece in rows]

        found = read([(0, HEAD_READ_BYTES)])
        if not found:
            return None
        head = found[0]
        length = blobs.head_length(head)
        if length is None:  # format 1: one zlib stream, read whole
            blob = stored_requests(point)
            return None if blob is None else columnar.request_arrays(blob, fields)
        if length > len(head):
            head = read([(0, length)])[0]
        spans = blobs.array_spans(head)
        names = [name for name in dict.fromkeys(("index", *fields)) if name in spans]
        pieces = read([spans[name] for name in names])
    return columnar.request_arrays(blobs.subset(head, dict(zip(names, pieces, strict=True))),
                                  fields)


def _count_point(benchmark: Benchmark, result: PointResult) -> None:
    """One UPDATE, so a concurrent progress write cannot lose the count."""
    changes: dict[str, object] = {
        "points_done": F("points_done") + 1,
        "best_output_throughput": Greatest(
            F("best_output_throughput"), result.metrics.output_throughput
        ),
    }
    if benchmark.source == Benchmark.Source.IMPORTED:
        changes["points_total"] = F("points_total") + 1
    Benchmark.objects.filter(pk=benchmark.pk).update(**changes)
    # Greatest() with NULL is NULL on PostgreSQL and SQLite alike: fill the first value.
    Benchmark.objects.filter(pk=benchmark.pk, best_output_throughput__isnull=True).update(
        best_output_throughput=result.metrics.output_throughput
    )
    hardware = result.provenance.hardware if result.provenance else None
    if hardware and hardware.gpu_name:
        label = f"{hardware.gpu_count} x {hardware.gpu_name}"
        # The hardware the point measured on is the truth, whatever the node row said.
        Benchmark.objects.filter(pk=benchmark.pk).filter(~Q(hardware=label)).update(
            hardware=label
        )


def point_to_result(
    point: Point, data: PointData | None = None, *, records: bool = True, requests: bool = True
) -> PointResult:
    """Rebuild the PointResult exactly as the runner produced it (for downloads).

    With records=False the per-request records, engine samples and telemetry readings are left
    out and PointData is never read: the judgement layer needs only the aggregates on the Point
    row (the telemetry summary among them). With requests=False only the per-request records
    are: the JSON download writes them from the blob a block at a time
    (columnar.iter_requests), never holding a point's records whole.
    """
    window = None
    if point.window_start is not None and point.window_end is not None:
        window = Window(start=point.window_start, end=point.window_end)
    if records:
        data = data or PointData.objects.get(point=point)
    return PointResult.model_validate(
        {
            "key": point.key,
            "plan_name": point.plan_name,
            "engine_config": point.engine_config,
            "load": point.load,
            "workload": point.workload,
            "repeat": point.repeat,
            "replicas": point.replicas,
            "t0_monotonic": point.t0_monotonic,
            "window": window,
            "metrics": {name: getattr(point, name) for name in METRIC_FIELDS},
            "queue": point.queue,
            "client": point.client,
            "per_replica": point.per_replica,
            "provenance": point.provenance,
            "samples": columnar.decode_samples(data.samples) if data else [],
            "telemetry": point.telemetry,
            "telemetry_samples": columnar.decode_telemetry(data.telemetry) if data else [],
            "requests": columnar.decode_requests(data.requests) if data and requests else [],
            "source": point.source,
            "notes": point.notes,
            "lengths": point.lengths,
            "conversations": point.conversations,
            "quality": point.quality,
            "search": point.search,
            "peer": point.peer,
            "host": point.host,
            "control": point.control,
            "end_control": point.end_control,
        }
    )


def stored_observations(benchmark: Benchmark) -> dict[str, Observation]:
    """A resumed search's stored points as the search reads them, by key."""
    return {point.key: observe(point_to_result(point, records=False))
            for point in benchmark.points.all()}
