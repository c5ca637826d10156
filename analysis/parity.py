"""Output parity: did a serving change leave the model's outputs alone?

Two points that kept their outputs (WorkloadSpec.keep_outputs: every response's token ids, and a
digest of the prompt ids the server saw) are compared request by request, by request index. A
request is compared only when both points completed it and the server saw the same prompt on
both sides (equal prompt digests): same index with different prompts says the two points did
not send the same workload, and is counted apart, never as "identical". Where the token ids
differ, the divergence is where the common prefix ends ("diverged after token 180": the first
180 tokens agreed).

vLLM is not batch-invariant: the batch a request shares a step with changes the order of
floating-point reductions in its kernels, and at temperature 0 a near-tie between two tokens
can then fall the other way; after that token the continuation differs. Two runs with
different max_num_seqs or load build different batches, so a small share of outputs
diverging, usually late in a response, is expected of a correct change, and the sentence says
so instead of hiding it. A share beyond the tolerance is flagged instead: that much change is
not what batch variance alone does, and the change needs a quality check before it ships.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from analysis.sentences import Sentence, num, percent

# A share of diverged outputs above this (percent of compared requests) is flagged unless the
# installation sets its own (settings.HEADROOM_OUTPUT_PARITY_TOLERANCE_PCT).
DEFAULT_TOLERANCE_PCT = 1.0


@dataclass(frozen=True)
class KeptOutput:
    """One completed request's kept output: the prompt digest and the response's token ids."""

    prompt_digest: str | None
    ids: Sequence[int]


@dataclass(frozen=True)
class PointOutputs:
    """What one point kept, by request index (completed requests only).

    kept: the point's workload asked for outputs. completed_without_ids counts completed
    requests whose response carried no token ids (a server that ignores return_token_ids).
    """

    key: str
    kept: bool
    outputs: Mapping[int, KeptOutput]
    completed_without_ids: int = 0


@dataclass(frozen=True)
class Divergence:
    index: int
    agreed_tokens: int  # the common prefix: the outputs differ from this token on
    baseline_tokens: int
    candidate_tokens: int


@dataclass(frozen=True, kw_only=True)
class Parity:
    """Baseline vs candidate outputs. `measured` is False when the comparison could not be made
    (outputs not kept, no common completed request, or different prompts); then `sentence`
    says why and no count claims identity."""

    measured: bool
    compared: int = 0
    identical: int = 0
    diverged: tuple[Divergence, ...] = ()
    different_prompts: int = 0
    unpaired: int = 0  # completed on one side only (failed or absent on the other)
    without_ids: int = 0
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT
    sentence: Sentence
    notes: tuple[Sentence, ...] = ()

    @property
    def diverged_pct(self) -> float | None:
        return len(self.diverged) / self.compared * 100 if self.compared else None

    @property
    def beyond_tolerance(self) -> bool:
        share = self.diverged_pct
        return share is not None and share > self.tolerance_pct


# Which side lacks what, by the sides' names: one template each, so a translation never has
# to fit an English "the baseline" into its own sentence.
NOT_KEPT = {
    ("baseline",): "Outputs were not compared: the baseline did not keep its outputs (launch "
                   "with output parity, at temperature 0).",
    ("candidate",): "Outputs were not compared: the candidate did not keep its outputs (launch "
                    "with output parity, at temperature 0).",
    ("baseline", "candidate"): "Outputs were not compared: neither point kept its outputs "
                               "(launch with output parity, at temperature 0).",
}
NO_IDS = {
    ("baseline",): "Outputs were not compared: the server returned no token ids for the "
                   "baseline (vLLM answers return_token_ids from 0.10.2 on).",
    ("candidate",): "Outputs were not compared: the server returned no token ids for the "
                    "candidate (vLLM answers return_token_ids from 0.10.2 on).",
    ("baseline", "candidate"): "Outputs were not compared: the server returned no token ids "
                               "for either point (vLLM answers return_token_ids from 0.10.2 "
                               "on).",
}
NOTHING_IN_COMMON = "Outputs were not compared: no request completed on both sides."
OTHER_PROMPTS = (
    "Outputs were not compared: the two points sent different prompts for all %(count)s "
    "requests they both completed."
)
ALL_IDENTICAL = "Outputs identical for %(identical)s of %(compared)s requests compared."
SOME_DIVERGED = (
    "Outputs identical for %(identical)s of %(compared)s requests compared; %(diverged)s "
    "diverged, the earliest after token %(earliest)s (median after token %(median)s)."
)
BATCH_VARIANCE = (
    "vLLM is not batch-invariant: a request batched with different neighbours (other "
    "max_num_seqs or load) can take the other side of a near-tie at temperature 0 and continue "
    "differently from there, so a small share of late divergence is expected of a correct "
    "change."
)
BEYOND = (
    "Outputs changed for %(share)s of compared requests, more than the %(tolerance)s this "
    "installation tolerates and more than batch variance alone explains: check quality before "
    "shipping the change."
)
PARTLY_DIFFERENT_PROMPTS = (
    "%(count)s requests sent different prompts on the two sides and were not compared."
)
UNPAIRED = (
    "%(count)s requests completed with kept outputs on one side only and were not compared."
)
# Every template a report may look up (locale/ko translates each).
PARITY_TEMPLATES = (*NOT_KEPT.values(), *NO_IDS.values(), NOTHING_IN_COMMON, OTHER_PROMPTS,
                    ALL_IDENTICAL, SOME_DIVERGED, BATCH_VARIANCE, BEYOND,
                    PARTLY_DIFFERENT_PROMPTS, UNPAIRED)


def agreed_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens a and b share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare_outputs(
    baseline: PointOutputs, candidate: PointOutputs,
    tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
) -> Parity:
    """Request-by-request parity of two points' kept outputs (see the module docstring)."""
    sides = (("baseline", baseline), ("candidate", candidate))
    not_kept = tuple(name for name, side in sides if not side.kept)
    if not_kept:
        return Parity(measured=False, tolerance_pct=tolerance_pct,
                      sentence=Sentence(NOT_KEPT[not_kept], {}))
    no_ids = tuple(name for name, side in sides
                   if not side.outputs and side.completed_without_ids)
    if no_ids:
        return Parity(measured=False, tolerance_pct=tolerance_pct,
                      sentence=Sentence(NO_IDS[no_ids], {}))
    common = sorted(baseline.outputs.keys() & candidate.outputs.keys())
    unpaired = len(baseline.outputs.keys() ^ candidate.outputs.keys())
    without_ids = baseline.completed_without_ids + candidate.completed_without_ids
    if not common:
        return Parity(measured=False, unpaired=unpaired, without_ids=without_ids,
                      tolerance_pct=tolerance_pct, sentence=Sentence(NOTHING_IN_COMMON, {}))
    diverged: list[Divergence] = []
    identical = different_prompts = 0
    for index in common:
        before, after = baseline.outputs[index], candidate.outputs[index]
        if before.prompt_digest != after.prompt_digest or before.prompt_digest is None:
            different_prompts += 1
            continue
        agreed = agreed_prefix(before.ids, after.ids)
        if agreed == len(before.ids) == len(after.ids):
            identical += 1
        else:
            diverged.append(Divergence(index, agreed, len(before.ids), len(after.ids)))
    compared = identical + len(diverged)
    if compared == 0:
        return Parity(measured=False, different_prompts=different_prompts, unpaired=unpaired,
                      without_ids=without_ids, tolerance_pct=tolerance_pct,
                      sentence=Sentence(OTHER_PROMPTS, {"count": num(different_prompts)}))
    return _measured(compared, identical, tuple(diverged), different_prompts, unpaired,
                     without_ids, tolerance_pct)


def _measured(
    compared: int, identical: int, diverged: tuple[Divergence, ...], different_prompts: int,
    unpaired: int, without_ids: int, tolerance_pct: float,
) -> Parity:
    counts = {"identical": f"{identical:,}", "compared": f"{compared:,}"}
    if diverged:
        agreed = [d.agreed_tokens for d in diverged]
        sentence = Sentence(SOME_DIVERGED, {
            **counts, "diverged": f"{len(diverged):,}", "earliest": f"{min(agreed):,}",
            "median": f"{statistics.median_low(agreed):,}"})
    else:
        sentence = Sentence(ALL_IDENTICAL, counts)
    notes: list[Sentence] = []
    share = len(diverged) / compared * 100
    if share > tolerance_pct:
        # More than batch variance explains: no reassurance beside the flag.
        notes.append(Sentence(BEYOND, {"share": percent(share),
                                       "tolerance": percent(tolerance_pct)}))
    elif diverged:
        notes.append(Sentence(BATCH_VARIANCE, {}))
    if different_prompts:
        notes.append(Sentence(PARTLY_DIFFERENT_PROMPTS, {"count": f"{different_prompts:,}"}))
    if unpaired:
        notes.append(Sentence(UNPAIRED, {"count": f"{unpaired:,}"}))
    return Parity(measured=True, compared=compared, identical=identical, diverged=diverged,
                  different_prompts=different_prompts, unpaired=unpaired,
                  without_ids=without_ids, tolerance_pct=tolerance_pct, sentence=sentence,
                  notes=tuple(notes))
