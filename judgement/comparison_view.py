"""Comparisons of stored points: baseline against candidate, their output parity request by
request, a saved comparison, and a local point against a dated external reference."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings as django_settings

from analysis import AnalysisError
from analysis import compare as compare_mod
from analysis import parity as parity_mod
from analysis.types import Comparison as ComparisonResult
from analysis.types import ReferenceComparison
from benchmarks.models import Comparison, ExternalReference, Point
from benchmarks.storage import columnar
from benchmarks.storage.points import stored_requests
from judgement.figures import measured, reference
from runner.schema.records import RequestRecord


def compare_points(baseline: Point, candidate: Point) -> ComparisonResult:
    """Raises AnalysisError (e.g. missing latency data) with the reason."""
    return compare_mod.compare(measured(baseline), measured(candidate))


@dataclass(frozen=True)
class OutputSample:
    """One of the first few requests' texts on both sides, for a reader to look at."""

    index: int
    baseline: str | None
    candidate: str | None
    identical: bool  # False: diverged, or not compared (the parity sentence says which)


@dataclass(frozen=True)
class OutputParity:
    parity: parity_mod.Parity
    samples: list[OutputSample]


def _kept(point: Point) -> tuple[parity_mod.PointOutputs, dict[int, str]]:
    """The point's kept outputs by request index (completed requests with token ids) and the
    texts kept of its first requests, read once from its stored records; nothing is read when
    its workload did not keep outputs."""
    if not (point.workload or {}).get("keep_outputs"):
        return parity_mod.PointOutputs(point.key, kept=False, outputs={}), {}
    blob = stored_requests(point)
    if blob is None:
        return parity_mod.PointOutputs(point.key, kept=True, outputs={}), {}
    # The few fields parity reads, never the records: at 100,000 requests x 1,000 chunks the
    # records are 1.4 GB, these columns (chunk times only counted) a small part of it.
    columns = columnar.request_columns(blob, _PARITY_FIELDS)
    index, error, status, digest, ids, text = (columns.values[f] for f in _PARITY_FIELDS)
    outputs: dict[int, parity_mod.KeptOutput] = {}
    texts: dict[int, str] = {}
    without = 0
    chunks = columns.lengths["chunk_times"].tolist()
    for at in range(len(index)):
        if RequestRecord.completed(error[at], status[at], chunks[at]):
            if ids[at]:
                outputs[index[at]] = parity_mod.KeptOutput(digest[at], ids[at])
            else:
                without += 1
        if text[at] is not None:
            texts[index[at]] = text[at]
    return parity_mod.PointOutputs(point.key, kept=True, outputs=outputs,
                                   completed_without_ids=without), texts


# What _kept reads of each request (RequestRecord fields).
_PARITY_FIELDS = ("index", "error", "status", "prompt_digest", "output_ids", "output_text")


def output_parity(baseline: Point, candidate: Point) -> OutputParity:
    """Request-by-request output parity of two points (analysis.parity), with the
    texts of their first requests side by side when both kept them."""
    (before, before_texts), (after, after_texts) = _kept(baseline), _kept(candidate)
    parity = parity_mod.compare_outputs(
        before, after, django_settings.HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT)
    diverged = {d.index for d in parity.diverged}

    def identical(index: int) -> bool:
        a, b = before.outputs.get(index), after.outputs.get(index)
        return (parity.measured and a is not None and b is not None and index not in diverged
                and a.prompt_digest == b.prompt_digest)

    samples = [
        OutputSample(index, before_texts[index], after_texts[index], identical(index))
        for index in sorted(before_texts.keys() & after_texts.keys())
    ]
    return OutputParity(parity, samples)


def compare_saved(comparison: Comparison) -> tuple[ComparisonResult | None, str | None]:
    try:
        return compare_points(comparison.baseline_point, comparison.candidate_point), None
    except AnalysisError as exc:
        return None, str(exc)


def compare_with_reference(
    point: Point, ref: ExternalReference
) -> tuple[ReferenceComparison | None, str | None]:
    try:
        return compare_mod.compare_reference(measured(point), reference(ref)), None
    except AnalysisError as exc:
        return None, str(exc)
