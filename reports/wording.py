"""How the report words and formats what the judgement layer returns.

Numbers go through Django's formats (grouped thousands, the language's dates), sentences through
gettext; call these inside translation.override(language). The comparison-guard readers work
with every shape of comparison result: what they cannot find on it they read from its factor
rows, so no ratio or percentage is ever printed across input/output specs.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from judgement.rows import Point
from judgement.vocabulary import pct_decimals
from reports import facts

FACTOR_LABELS = {
    "gpu_sku": gettext_lazy("GPU"),
    "gpu_count": gettext_lazy("GPU count"),
    "runtime": gettext_lazy("runtime"),
    "runtime_version": gettext_lazy("runtime version"),
    "checkpoint": gettext_lazy("checkpoint"),
    "checkpoint_revision": gettext_lazy("checkpoint revision"),
    "precision": gettext_lazy("precision"),
    "kv_dtype": gettext_lazy("KV cache dtype"),
    "request_count": gettext_lazy("request count"),
    "workload": gettext_lazy("input/output spec"),
    "host": gettext_lazy("host"),
}
# Factors whose value is never printed: only whether the two sides matched.
HIDDEN_FACTOR_VALUES = {"host"}

# ---------------------------------------------------------------------------------------------
# Formatting
# ---------------------------------------------------------------------------------------------


def num(value: float | None, decimals: int = 0) -> str:
    """A figure in the active language: grouped thousands, fixed decimals, '-' when missing."""
    if value is None:
        return "-"
    return formats.number_format(round(value, decimals), decimals, use_l10n=True,
                                 force_grouping=True)


def percent(value: float | None) -> str:
    """A share or level in percent (KV use, efficiency, spread), with the run page's
    decimals (pct_decimals) in the active language's number format."""
    return "-" if value is None else f"{num(value, pct_decimals(value))}%"


def pct(value: float | None) -> str:
    """A signed change in percent."""
    if value is None:
        return "-"
    sign = "+" if round(value, pct_decimals(value)) > 0 else ""
    return f"{sign}{percent(value)}"


def ratio(value: float) -> str:
    return f"{num(value, 2)}x"


def day(value: date | datetime | None) -> str:
    return formats.date_format(value, "DATE_FORMAT") if value else "-"


def seconds(ms: float | None) -> str:
    return "-" if ms is None else _("%(value)s s") % {"value": num(ms / 1000, 1)}


def tokens_per_s(value: float | None) -> str:
    return _("%(value)s output tokens/s") % {"value": num(value)}


def cpu_label(cpu: bool) -> str:
    return _(" (CPU engine)") if cpu else ""


def latency_sentence(before_ms: float, after_ms: float) -> str:
    if after_ms < before_ms:
        text = _("Median request latency fell from %(before)s to %(after)s.")
    elif after_ms > before_ms:
        text = _("Median request latency rose from %(before)s to %(after)s.")
    else:
        text = _("Median request latency stayed at %(before)s.")
    return text % {"before": seconds(before_ms), "after": seconds(after_ms)}


def queue_value(point: Point, name: str) -> float | None:
    value = (point.queue or {}).get(name)
    return None if value is None else float(value)


def kv_text(point: Point) -> str:
    value = queue_value(point, "peak_kv_usage")
    return percent(None if value is None else value * 100)


def spec_text(point: Point) -> str:
    workload = point.workload or {}
    low, high = workload.get("input_tokens_min"), workload.get("input_tokens_max")
    inputs = f"{low}" if low == high else f"{low}-{high}"
    return _("%(input)s in / %(output)s out") % {"input": inputs,
                                                  "output": workload.get("output_tokens")}


# ---------------------------------------------------------------------------------------------
# The comparison guard, read the same way whatever the result's shape
# ---------------------------------------------------------------------------------------------


def same_spec(result: Any) -> bool:
    """Both sides recorded the same input/output spec: the only case with a ratio or percentage.

    Read from the result's workload factor row, which every shape of result carries; newer
    results also leave their ratios None otherwise, older ones do not, and guarded() covers both.
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


def factor_label(row: Any) -> str:
    return str(FACTOR_LABELS.get(row.name, row.label))


def factor_value(name: str, value: str | None) -> str:
    if value is None:
        return "-"
    if name == "checkpoint":
        return facts.public_model_name(value) or "-"
    return value


def factor_phrase(row: Any) -> str:
    """'runtime version: 0.31.0 -> 0.32.0', or the label alone for hidden values."""
    if row.name in HIDDEN_FACTOR_VALUES or row.status != "differ":
        return factor_label(row)
    return f"{factor_label(row)}: {factor_value(row.name, row.baseline)} → " \
           f"{factor_value(row.name, row.candidate)}"


def labels(result: Any, status: str) -> list[str]:
    return [factor_label(row) for row in result.factors if row.status == status]


def guard_text(controlled: bool, differing: list[str], unknown: str | None,
                lead: str = "") -> str:
    """'Controlled.' or 'Not controlled.', then what differs and what was not recorded."""
    parts = [_("Controlled.") if controlled else _("Not controlled.")]
    if lead:
        parts.append(lead)
    if differing:
        parts.append(_("Differs: %(list)s.") % {"list": "; ".join(differing)})
    if unknown:
        parts.append(unknown)
    return " ".join(parts)


def differs_text(result: Any, lead: str = "") -> str:
    unknown = labels(result, "unknown")
    return guard_text(
        is_controlled(result),
        [factor_phrase(r) for r in result.factors if r.status == "differ"],
        _("Not recorded: %(list)s.") % {"list": ", ".join(unknown)} if unknown else None,
        lead,
    )


def spec_sentence(row: Any) -> str:
    """What replaces a ratio when the two sides' specs differ or one was not recorded."""
    values = {"before": row.baseline or "-", "after": row.candidate or "-"}
    if row.status == "differ":
        return _("The input/output specs differ (%(before)s against %(after)s): no ratio or "
                 "percentage is given.") % values
    return _("The input/output spec was not recorded on both sides (%(before)s against "
             "%(after)s): no ratio or percentage is given.") % values


def workload_row(result: Any) -> Any:
    return next((row for row in result.factors if row.name == "workload"), None)
