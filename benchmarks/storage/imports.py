"""Store the points of a result file (read by runner.importer) as one imported benchmark.

A `vllm bench serve` file rarely says which GPU, engine or checkpoint ran. The engineer may
state them at import (StatedFacts): a stated fact fills only what the file does not record,
and the point's notes and a caveat on the run say who stated what.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, field_validator

from benchmarks.models import (
    Benchmark,
    Caveat,
    Checkpoint,
    Runtime,
    Workload,
)
from benchmarks.storage.columnar import RequestEncoder
from benchmarks.storage.points import store_point
from runner.importer.files import iter_result_file_into
from runner.importer.vllm_document import UNKNOWN_HOST, UNKNOWN_MODEL, ImportFileError
from runner.schema.base import REVISION_RE
from runner.schema.result import EngineInfo, PointResult, Provenance, non_finite_figures

__all__ = ["ImportFileError", "StatedFacts", "apply_stated", "import_file", "import_points"]

STATED_CAVEAT = "stated-at-import"


class StatedFacts(BaseModel):
    """Hardware, runtime and checkpoint as the engineer states them for an imported file.

    Blank values are not statements. The field names are the import form's field names.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=True)

    gpu_name: str | None = Field(default=None, max_length=200)
    gpu_count: int | None = Field(default=None, gt=0)
    engine: str | None = Field(default=None, max_length=50)
    engine_version: str | None = Field(default=None, max_length=50)
    engine_image: str | None = Field(default=None, max_length=300)
    checkpoint: str | None = Field(default=None, max_length=300)
    revision: str | None = None
    precision: str | None = Field(default=None, max_length=50)

    @field_validator("*", mode="before")
    @classmethod
    def _blank_is_unstated(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("engine")
    @classmethod
    def _engine_spelling(cls, engine: str | None) -> str | None:
        return EngineInfo.normalize_name(engine)

    @field_validator("revision")
    @classmethod
    def _revision_is_commit(cls, revision: str | None) -> str | None:
        if revision is not None and not REVISION_RE.match(revision):
            raise ValueError(
                f"a revision is a 40-hex commit id (a branch or tag can move), got {revision!r}"
            )
        return revision

    def given(self) -> bool:
        return any(value is not None for value in self.model_dump().values())


# StatedFacts field -> (label, provenance group, field there), in the order notes list them.
STATED_FIELDS: dict[str, tuple[str, str, str]] = {
    "gpu_name": ("GPU", "hardware", "gpu_name"),
    "gpu_count": ("GPU count", "hardware", "gpu_count"),
    "engine": ("runtime", "engine", "name"),
    "engine_version": ("runtime version", "engine", "version"),
    "engine_image": ("runtime image", "engine", "image"),
    "checkpoint": ("checkpoint", "checkpoint", "model"),
    "revision": ("revision", "checkpoint", "revision"),
    "precision": ("precision", "checkpoint", "precision"),
}


@dataclass
class Statement:
    """What the stated facts did to the points of one file: labels as 'GPU NVIDIA H200'."""

    by: str
    filled: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # stated, but the file records otherwise

    def sentences(self) -> list[str]:
        out = []
        if self.filled:
            out.append(
                f"Stated at import by {self.by}, not recorded in the file: "
                + "; ".join(self.filled) + "."
            )
        if self.kept:
            out.append(
                f"Stated at import by {self.by} but not used, the file records otherwise: "
                + "; ".join(self.kept) + "."
            )
        return out

    def add(self, other: Statement) -> None:
        self.filled += [text for text in other.filled if text not in self.filled]
        self.kept += [text for text in other.kept if text not in self.kept]


def _recorded(point: PointResult, group: str, name: str, value: Any) -> bool:
    """Whether the file records this fact (a None or an importer's placeholder does not)."""
    if group == "hardware" and point.source == "headroom":
        return True  # the runner measured its host: no GPU there means a CPU host
    if value is None or (group, name, value) in (
        ("hardware", "host", UNKNOWN_HOST),
        ("checkpoint", "model", UNKNOWN_MODEL),
    ):
        return False
    # vllm bench files never carry a GPU count: the 0 is the schema's default.
    return (group, name, value) != ("hardware", "gpu_count", 0)


def apply_stated(point: PointResult, stated: StatedFacts, by: str) -> tuple[PointResult, Statement]:
    """The point with each stated fact filled in where its file does not record it."""
    statement = Statement(by=by)
    if not stated.given():
        return point, statement
    if point.provenance is None:
        raise ImportFileError(
            f"point {point.key!r} has no provenance at all, so there is nothing to complete; "
            "import it without stated facts"
        )
    provenance = point.provenance.model_dump()
    for attr, (label, group, name) in STATED_FIELDS.items():
        value = getattr(stated, attr)
        if value is None:
            continue
        recorded = provenance[group][name]
        if not _recorded(point, group, name, recorded):
            provenance[group][name] = value
            statement.filled.append(f"{label} {value}")
        elif recorded != value:
            shown = "none" if recorded is None else recorded  # a CPU host records no GPU
            statement.kept.append(f"{label} {shown} (stated {value})")
    completed = point.model_copy(
        update={
            "provenance": Provenance.model_validate(provenance),
            "notes": [*point.notes, *statement.sentences()],
        }
    )
    return completed, statement


def stated_by(user: Any) -> str:
    if user is not None and user.is_authenticated:
        return str(user.get_username())
    return "an unnamed user (command line)"


def import_file(
    path: Path,
    *,
    source_file: str = "",
    name: str = "",
    user: Any = None,
    stated: StatedFacts | None = None,
    on_point: Callable[[int], None] | None = None,
    document_limit: bool = True,
    companion: Path | None = None,
    companion_file: str = "",
) -> Benchmark:
    """Store a result file (or a folder of them) as one imported run, a point at a time.

    source_file is the file's name as its owner gave it (default: the path's); ImportFileError
    if the file is bad anywhere, with nothing stored. document_limit: refuse a document read
    whole (a vllm bench, AIPerf, GuideLLM, inference-perf or llm-d file, or a companion) over
    HEADROOM_MAX_IMPORT_DOCUMENT_BYTES (an upload's limit; False: an operator's own file on
    the command line). companion: the file that came with it (runner.importer.companions:
    AIPerf's gpu_telemetry_export.jsonl, inference-perf's stage_N_prometheus_metrics.json),
    named companion_file as its owner gave it.
    """
    source_file = source_file or path.name
    # Each point's records are encoded batch by batch as they are read: at 100,000 requests x
    # 1,000 chunks they are 1.4 GB, which the worker would otherwise hold beside their blob.
    points = iter_result_file_into(
        path, RequestEncoder, name=source_file,
        max_document_bytes=settings.HEADROOM_MAX_IMPORT_DOCUMENT_BYTES if document_limit else None,
        companion=companion, companion_name=companion_file,
        max_unpacked_bytes=settings.HEADROOM_MAX_UPLOAD_BYTES if document_limit else None,
    )
    return import_points(
        points, name=name or source_file, source_file=source_file, user=user, stated=stated,
        on_point=on_point,
    )


def _workload_for(point: PointResult) -> Workload:
    spec = point.workload
    thinking = bool(spec.extra_body.get("chat_template_kwargs", {}).get("enable_thinking", False))
    workload, _ = Workload.objects.get_or_create(
        name="imported",
        prompt_source=spec.kind,
        dataset_path=spec.dataset_path or "",
        input_tokens_min=spec.input_tokens_min,
        input_tokens_max=spec.input_tokens_max,
        output_tokens=spec.output_tokens,
        request_count=point.load.num_requests,
        temperature=spec.temperature,
        ignore_eos=spec.ignore_eos,
        thinking=thinking and spec.endpoint == "chat",
        endpoint=spec.endpoint,
        stream=spec.stream,
        load_shape=point.load.shape,
        keep_outputs=spec.keep_outputs,
        trace_span_s=spec.trace_span_s,
        trace_longer=spec.trace_longer,
        conversation_turns_max=spec.conversation_turns_max,
        lora_split=[share.model_dump(mode="json") for share in spec.lora_split],
    )
    return workload


def _checkpoint_for(point: PointResult) -> Checkpoint | None:
    if point.provenance is None:
        return None
    checkpoint = point.provenance.checkpoint
    engine = point.provenance.engine
    row, _ = Checkpoint.objects.get_or_create(
        repo=checkpoint.model,
        revision=checkpoint.revision or "",
        precision=checkpoint.precision or "",
        kv_cache_dtype=engine.cache_dtype or "",
        # A file names what ran elsewhere, not what may run here: a new row waits for approval.
        defaults={"approved": False, "trusted": False},
    )
    return row


def _runtime_for(point: PointResult) -> Runtime | None:
    """The runtime row of what served the file; none when its engine or version is unknown."""
    engine = point.provenance.engine if point.provenance else None
    if engine is None or not engine.name or not engine.version:
        return None
    row, _ = Runtime.objects.get_or_create(
        **Runtime.engine_fields(engine.name),
        version=engine.version,
        image=engine.image or "",
        digest="",
        defaults={"approved": False},  # as a checkpoint: a record until someone approves it
    )
    return row


def import_points(
    points: Iterable[tuple[PointResult, RequestEncoder | None]],
    *,
    name: str,
    source_file: str,
    user: Any = None,
    stated: StatedFacts | None = None,
    on_point: Callable[[int], None] | None = None,
) -> Benchmark:
    """Store the points as one imported run, each as it comes, all in one transaction.

    Each point comes with the encoder its records were given to as they were read, or None:
    its records are in the point. Only the current point is held: a bad point anywhere
    (ImportFileError from the reader, a repeated key, a stated fact that cannot apply) rolls
    back every one before it. on_point(count) is called after each point is stored.
    """
    statement = Statement(by=stated_by(user))
    keys: set[str] = set()
    benchmark: Benchmark | None = None
    with transaction.atomic():
        for point, requests in points:
            # An encoder's files go when its point is stored (or the import fails).
            with requests or contextlib.nullcontext():
                if point.key in keys:
                    raise ImportFileError(
                        f"{source_file}: point key {point.key!r} appears more than once"
                    )
                keys.add(point.key)
                _check_finite(point, source_file)
                if stated is not None:
                    point = _apply_stated_to(point, stated, statement, source_file)
                if benchmark is None:
                    benchmark = _imported_benchmark(
                        point, name=name, source_file=source_file, user=user
                    )
                store_point(benchmark, point, requests=requests)
            if on_point is not None:
                on_point(len(keys))
        if benchmark is None:
            raise ImportFileError(f"{source_file}: no points in this file")
        if statement.sentences():
            # On the run page beside the figures; each point's notes say what it received.
            Caveat.objects.create(
                benchmark=benchmark,
                kind=Caveat.Kind.SCOPE,
                code=STATED_CAVEAT,
                text=" ".join(statement.sentences()),
            )
    return benchmark


def _check_finite(point: PointResult, source_file: str) -> None:
    """Refuse a point with a figure that is not a finite number: stored, an Infinity would be
    written into the pages' chart JSON (which has none) and NaN would pass every comparison."""
    if found := non_finite_figures(point):
        raise ImportFileError(
            f"{source_file}: point {point.key!r}: not a finite number: {'; '.join(found[:5])}"
            + (f" (and {len(found) - 5} more)" if len(found) > 5 else "")
        )


def _apply_stated_to(
    point: PointResult, stated: StatedFacts, statement: Statement, source_file: str
) -> PointResult:
    try:
        point, told = apply_stated(point, stated, statement.by)
    except ImportFileError as exc:
        raise ImportFileError(f"{source_file}: {exc}") from None
    statement.add(told)
    return point


def _imported_benchmark(
    point: PointResult, *, name: str, source_file: str, user: Any
) -> Benchmark:
    """The run's row, described by the file's first point."""
    now = timezone.now()
    return Benchmark.objects.create(
        name=name[:200],
        source=Benchmark.Source.IMPORTED,
        runtime=_runtime_for(point),
        checkpoint=_checkpoint_for(point),
        workload=_workload_for(point),
        plan={"name": point.plan_name, "imported_from": source_file},
        created_by=user if user is not None and user.is_authenticated else None,
        state=Benchmark.State.SUCCEEDED,
        progress=1.0,
        progress_note=f"imported from {source_file}",
        started_at=now,
        finished_at=now,
    )

