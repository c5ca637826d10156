"""A report's words as values: which whole sentence (its msgid) and the figures that fill it.

Judgement decides every sentence a report shows and returns it as a Phrase: the English msgid,
found in locale/ by its whole sentence, and its values, each a Figure (a number or date the
report formats in its own language), plain public text, or another Phrase (a clause). The
report translates and formats (reports.wording.say); it never chooses the words. This module
also holds the comparison guard's wording, read the same way from every shape of comparison
result, so no ratio or percentage is ever printed across input/output specs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from analysis.sentences import Sentence
from judgement.public_provenance import public_model_name

# How a Figure is written: a count or figure (grouped thousands) with 0, 1 or 2 decimals; a
# duration in ms written in seconds; a level or a signed change in percent; a ratio ("2.32x");
# output tokens/s; a date; an engine config's label, or a point's key, as the customer may read
# it (no flag values).
Style = Literal["num", "num1", "num2", "seconds", "percent", "change", "ratio",
                "tokens_per_s", "day", "engine", "point_key"]


@dataclass(frozen=True)
class Figure:
    """A value the report formats in its language; None is written "-"."""

    value: Any
    style: Style = "num"


@dataclass(frozen=True)
class Phrase:
    """A whole sentence or label: its msgid and the values its placeholders take. A plural
    one also has its plural msgid and the count that picks the form (ngettext)."""

    msgid: str
    values: Mapping[str, Words] = field(default_factory=dict)
    plural: str = ""
    count: int = 0


@dataclass(frozen=True)
class Joined:
    """Words set side by side: sentences one after the other, a list's items."""

    parts: tuple[Words, ...]
    separator: str = " "


Words = str | Figure | Phrase | Joined | Sentence


def _(msgid: str, /, **values: Words) -> Phrase:
    """A whole sentence by its msgid, with its values. Named `_` so makemessages finds the
    msgid; nothing is translated here (the report does it in its own language)."""
    return Phrase(msgid, values)


def plural(singular: str, many: str, count: int, /, **values: Words) -> Phrase:
    """A sentence with a singular and a plural msgid (ngettext), the count picking the form;
    makemessages finds both with --keyword=plural:1,2."""
    return Phrase(singular, values, plural=many, count=count)


def number(value: float | None, decimals: int = 0) -> Figure:
    styles: dict[int, Style] = {0: "num", 1: "num1", 2: "num2"}
    return Figure(value, styles[decimals])


def seconds(ms: float | None) -> Figure:
    return Figure(ms, "seconds")


def percent(value: float | None) -> Figure:
    return Figure(value, "percent")


def change(value: float | None) -> Figure:
    return Figure(value, "change")


def engine(label: str) -> Figure:
    return Figure(label, "engine")


def joined(parts: list[Words], separator: str = " ") -> Joined:
    return Joined(tuple(parts), separator)


# Each side of a report, as its label; a side's title puts the engine config after it.
BEFORE = _("Before")
AFTER = _("After")
NODE_RUN = _("Node run")
SINGLE_REPLICA_REFERENCE = _("Single-replica reference")
# One whole title per side and engine kind, so no language gets English's word order glued on.
SIDE_TITLES = {
    ("Before", False): _("Before: %(config)s").msgid,
    ("Before", True): _("Before: %(config)s (CPU engine)").msgid,
    ("After", False): _("After: %(config)s").msgid,
    ("After", True): _("After: %(config)s (CPU engine)").msgid,
    ("Node run", False): _("Node run: %(config)s").msgid,
    ("Node run", True): _("Node run: %(config)s (CPU engine)").msgid,
    ("Single-replica reference", False): _("Single-replica reference: %(config)s").msgid,
    ("Single-replica reference", True):
        _("Single-replica reference: %(config)s (CPU engine)").msgid,
}


def side_title(side: Phrase, label: str, cpu: bool = False) -> Phrase:
    """'After: max_num_seqs 64', the engine label as the customer may read it."""
    return Phrase(SIDE_TITLES[(side.msgid, cpu)], {"config": engine(label)})


# --- the comparison guard ------------------------------------------------------------------------

FACTOR_LABELS = {
    "gpu_sku": _("GPU"),
    "gpu_count": _("GPU count"),
    "runtime": _("runtime"),
    "runtime_version": _("runtime version"),
    "checkpoint": _("checkpoint"),
    "checkpoint_revision": _("checkpoint revision"),
    "precision": _("precision"),
    "kv_dtype": _("KV cache dtype"),
    "request_count": _("request count"),
    "workload": _("input/output spec"),
    "host": _("host"),
}
# Factors whose value is never printed: only whether the two sides matched.
HIDDEN_FACTOR_VALUES = {"host"}


def workload_row(result: Any) -> Any:
    return next((row for row in result.factors if row.name == "workload"), None)


def same_spec(result: Any) -> bool:
    """Both sides recorded the same input/output spec: the only case with a ratio or percentage.

    Read from the result's workload factor row, which every shape of result carries, so guarded()
    holds every shape to it, whatever ratios the result itself holds.
    """
    row = workload_row(result)
    return row is not None and row.status == "match"


def is_controlled(result: Any) -> bool:
    flagged = getattr(result, "controlled", None)
    if flagged is not None:
        return bool(flagged)
    return not result.differing and not result.unknown


def guarded(result: Any, name: str) -> float | None:
    """A ratio or percentage of the result, or None unless both sides ran the same spec."""
    if not same_spec(result):
        return None
    value = getattr(result, name, None)
    return None if value is None else float(value)


def factor_label(row: Any) -> Words:
    return FACTOR_LABELS.get(row.name, row.label)


def factor_value(name: str, value: str | None) -> str:
    if value is None:
        return "-"
    if name == "checkpoint":
        return public_model_name(value) or "-"
    return value


def factor_phrase(row: Any) -> Words:
    """'runtime version: 0.31.0 → 0.32.0', or the label alone for hidden values."""
    if row.name in HIDDEN_FACTOR_VALUES or row.status != "differ":
        return factor_label(row)
    return joined([factor_label(row), ": ", factor_value(row.name, row.baseline), " → ",
                   factor_value(row.name, row.candidate)], "")


def labels(result: Any, status: str) -> list[Words]:
    return [factor_label(row) for row in result.factors if row.status == status]


def guard_text(controlled: bool, differing: list[Words], unknown: Words | None,
               lead: Words | None = None) -> Joined:
    """'Controlled.' or 'Not controlled.', then what differs and what was not recorded."""
    parts: list[Words] = [_("Controlled.") if controlled else _("Not controlled.")]
    if lead is not None:
        parts.append(lead)
    if differing:
        parts.append(_("Differs: %(list)s.", list=joined(differing, "; ")))
    if unknown is not None:
        parts.append(unknown)
    return joined(parts)


def differs_text(result: Any, lead: Words | None = None) -> Joined:
    unknown = labels(result, "unknown")
    return guard_text(
        is_controlled(result),
        [factor_phrase(r) for r in result.factors if r.status == "differ"],
        _("Not recorded: %(list)s.", list=joined(unknown, ", ")) if unknown else None,
        lead,
    )


def spec_sentence(row: Any) -> Phrase:
    """What replaces a ratio when the two sides' specs differ or one was not recorded."""
    before, after = row.baseline or "-", row.candidate or "-"
    if row.status == "differ":
        return _("The input/output specs differ (%(before)s against %(after)s): no ratio or "
                 "percentage is given.", before=before, after=after)
    return _("The input/output spec was not recorded on both sides (%(before)s against "
             "%(after)s): no ratio or percentage is given.", before=before, after=after)


LATENCY_SENTENCES = {
    "fell": _("Median request latency fell from %(before)s to %(after)s.").msgid,
    "rose": _("Median request latency rose from %(before)s to %(after)s.").msgid,
    "stayed": _("Median request latency stayed at %(before)s.").msgid,
}


def latency_sentence(before_ms: float, after_ms: float) -> Phrase:
    moved = "fell" if after_ms < before_ms else "rose" if after_ms > before_ms else "stayed"
    return Phrase(LATENCY_SENTENCES[moved],
                  {"before": seconds(before_ms), "after": seconds(after_ms)})


def spec_text(point: Any) -> Phrase:
    workload = point.workload or {}
    low, high = workload.get("input_tokens_min"), workload.get("input_tokens_max")
    inputs = f"{low}" if low == high else f"{low}-{high}"
    return _("%(input)s in / %(output)s out", input=inputs,
             output=str(workload.get("output_tokens")))
