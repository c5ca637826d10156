"""The report's words as values: which whole sentence the comparison guard says, and what fills
it (judgement.report_phrases). No row is read: each case is a comparison's factor rows."""

from __future__ import annotations

from dataclasses import dataclass

from analysis.types import FactorRow
from judgement.report_phrases import (
    AFTER,
    Figure,
    Phrase,
    differs_text,
    factor_phrase,
    guarded,
    joined,
    side_title,
    spec_sentence,
)


def _row(name: str, baseline: str | None, candidate: str | None, status: str) -> FactorRow:
    return FactorRow(name=name, label=name.replace("_", " "), baseline=baseline,
                     candidate=candidate, status=status)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Result:
    """A comparison as the guard reads it: its factor rows, its flag and a ratio."""

    factors: tuple[FactorRow, ...]
    controlled: bool
    ratio: float | None = 2.0


SAME_SPEC = _row("workload", "63-66 in / 256 out", "63-66 in / 256 out", "match")


def test_a_differing_factor_names_both_values_but_the_host_only_its_label():
    assert factor_phrase(_row("runtime_version", "0.31.0", "0.32.0", "differ")) == joined(
        [Phrase("runtime version"), ": ", "0.31.0", " → ", "0.32.0"], "")
    # Where a point ran is never printed: only that it differs.
    assert factor_phrase(_row("host", "gpu-node-7", "gpu-node-8", "differ")) == Phrase("host")


def test_a_local_checkpoint_is_named_by_its_last_part_only():
    phrase = factor_phrase(_row("checkpoint", "/home/alice/models/tiny-qwen3", "Qwen/Qwen3-0.6B",
                                "differ"))
    assert phrase == joined([Phrase("checkpoint"), ": ", "tiny-qwen3", " → ",
                             "Qwen/Qwen3-0.6B"], "")


def test_the_guard_says_controlled_or_not_then_what_differs_then_what_was_not_recorded():
    result = _Result(factors=(SAME_SPEC, _row("runtime_version", "0.31.0", "0.32.0", "differ"),
                              _row("precision", None, "bf16", "unknown")), controlled=False)
    lead = Phrase("Engine settings %(before)s → %(after)s.")
    assert differs_text(result, lead) == joined([
        Phrase("Not controlled."),
        lead,
        Phrase("Differs: %(list)s.", {"list": joined(
            [joined([Phrase("runtime version"), ": ", "0.31.0", " → ", "0.32.0"], "")], "; ")}),
        Phrase("Not recorded: %(list)s.", {"list": joined([Phrase("precision")], ", ")}),
    ])
    controlled = _Result(factors=(SAME_SPEC,), controlled=True)
    assert differs_text(controlled) == joined([Phrase("Controlled.")])


def test_no_ratio_across_specs_and_the_sentence_says_which_case_it_is():
    differ = _row("workload", "1000 in / 1000 out", "63-66 in / 256 out", "differ")
    assert guarded(_Result(factors=(differ,), controlled=False), "ratio") is None
    assert guarded(_Result(factors=(SAME_SPEC,), controlled=True), "ratio") == 2.0
    assert spec_sentence(differ).msgid.startswith("The input/output specs differ")
    unknown = _row("workload", None, "63-66 in / 256 out", "unknown")
    assert spec_sentence(unknown).values == {"before": "-", "after": "63-66 in / 256 out"}
    assert spec_sentence(unknown).msgid.startswith("The input/output spec was not recorded")


def test_a_side_title_is_one_whole_title_for_each_engine_kind():
    assert side_title(AFTER, "seqs=64") == Phrase(
        "After: %(config)s", {"config": Figure("seqs=64", "engine")})
    assert side_title(AFTER, "seqs=64", cpu=True).msgid == "After: %(config)s (CPU engine)"
