"""What a point costs per million output tokens, and what a tuning result is worth.

A point's cost is the GPU-hours it takes to produce a million output tokens at its throughput,
priced at its node's GPU-hour price:

    price per GPU-hour x GPUs used / (output tokens/s x 3600) x 1,000,000

GPUs used are the point's own (replicas x tensor parallel size, as
runner.fixed_factors.devices_used counts them), not the host's. A CPU engine used no GPU-hours,
an attached endpoint's GPUs are not its worker node's, and an invalid run's throughput counts
missing work: none of them gets a figure, each gets the reason instead.

What a tuning is worth: each side's cost at its setting's capacity, and the additional GPUs
the tuned setting's capacity equals on the candidate's node:

    node GPUs x (candidate capacity per GPU / baseline capacity per GPU - 1)

Per GPU, so a candidate that spent more GPUs per point does not read as a gain; with the same
GPUs on both sides it is node GPUs x (candidate capacity / baseline capacity - 1). Money is
given only in one currency, always with the price's date beside it; a price older than
PRICE_MAX_AGE_DAYS, or a different price on each side, is said next to it.

The sentences a report shows are listed in COST_TEMPLATES so the Korean catalog is held to every
one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from analysis.errors import AnalysisError
from analysis.sentences import Sentence

SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1_000_000
# GPU-hour prices move within months (cloud list prices, reserved-capacity deals); a price
# quoted more than this long before the page is read is flagged beside the money figure.
PRICE_MAX_AGE_DAYS = 180
# ISO 4217: three capital letters.
CURRENCY_RE = re.compile(r"[A-Z]{3}")
# A cost or an efficiency is shown to three significant digits and at least two decimals, so
# 0.0386 and 0.0165 USD per million stay apart, as 13.89 and 13.94 do.
SIGNIFICANT_DIGITS = 3
MIN_DECIMALS = 2


# --- formatting --------------------------------------------------------------------------------


def figure(value: float) -> str:
    """A cost or tokens per joule: 0.139, 0.0165, 2.50, 13.89, 1,234.57."""
    if value == 0 or not math.isfinite(value):
        return f"{0:.{MIN_DECIMALS}f}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(MIN_DECIMALS, SIGNIFICANT_DIGITS - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def amount_text(amount: Decimal) -> str:
    """A price as it was entered, with at least two decimals: 2.5 -> 2.50, 2.4567 -> 2.4567."""
    exponent = amount.normalize().as_tuple().exponent
    decimals = max(MIN_DECIMALS, -exponent if isinstance(exponent, int) else 0)
    return f"{amount:,.{decimals}f}"


def gpus_text(gpus: float) -> str:
    """Additional (or forgone) GPUs, one decimal: 10.7."""
    return f"{abs(gpus):.1f}"


# --- inputs ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class GpuHourPrice:
    """What one GPU of a node costs per hour, in one currency, as of one date."""

    amount: Decimal
    currency: str
    as_of: date

    def __post_init__(self) -> None:
        if not self.amount.is_finite() or self.amount < 0:
            raise AnalysisError(f"a GPU-hour price must be a number >= 0, got {self.amount}")
        if not CURRENCY_RE.fullmatch(self.currency):
            raise AnalysisError(
                f"a price's currency is its ISO 4217 code (e.g. USD), got {self.currency!r}"
            )

    @property
    def text(self) -> str:
        """'2.50 USD'."""
        return f"{amount_text(self.amount)} {self.currency}"

    def age_days(self, today: date) -> int:
        return (today - self.as_of).days

    def same_amount(self, other: GpuHourPrice) -> bool:
        return self.amount == other.amount and self.currency == other.currency


@dataclass(frozen=True, kw_only=True)
class CostInput:
    """One point as the cost rules read it (judge builds it from the row and its run's node).

    output_throughput is the point's own, or for a comparison its setting's capacity (the
    lowest valid repeat, `repeats` of them). valid: the run's own validity and its stored
    aggregates' checks together; run_valid the run's alone. launch_style as the runner records
    it (cpu, serve, docker, attach); host_has_gpu: the host reported a GPU (None: not known).
    node: the node the run names (None for an import); price: that node's, None when unset.
    """

    key: str
    output_throughput: float
    gpus: int
    valid: bool = True
    run_valid: bool = True
    launch_style: str | None = None
    host_has_gpu: bool | None = None
    node: str | None = None
    price: GpuHourPrice | None = None
    joules_per_output_token: float | None = None
    repeats: int = 1

    def __post_init__(self) -> None:
        if not math.isfinite(self.output_throughput) or self.output_throughput < 0:
            raise AnalysisError(f"point {self.key}: output_throughput must be a number >= 0")
        if self.gpus < 1:
            raise AnalysisError(f"point {self.key}: a point uses at least one device")

    @property
    def cpu_engine(self) -> bool:
        """A CPU engine stood in for a GPU: launched as one, or on a host without a GPU."""
        if self.launch_style == "cpu":
            return True
        return self.launch_style in ("serve", "docker") and self.host_has_gpu is False

    @property
    def tokens_per_joule(self) -> float | None:
        """Output tokens per joule where energy was measured (1 / joules per output token)."""
        joules = self.joules_per_output_token
        if joules is None or not math.isfinite(joules) or joules <= 0:
            return None
        return 1.0 / joules


# --- one point ---------------------------------------------------------------------------------

CPU_ENGINE = "a CPU engine stood in for the GPU: no GPU-hours to price"
ATTACHED = (
    "an attached endpoint: its GPUs are not its worker node's, so that node's price does not "
    "apply"
)
INVALID_RUN = "not a valid run: failed or short responses make its throughput count missing work"
FAILED_CHECKS = "its stored aggregates fail their checks, so its throughput is not relied on"
NO_OUTPUT = "no output tokens/s, so no cost per token"
NO_NODE = "the run names no node (an imported result), so no GPU-hour price applies"
NO_PRICE = "node {node} has no GPU-hour price (an administrator sets it in the catalog)"


def cost_per_million_output_tokens(
    price_per_gpu_hour: float, gpus: int, output_throughput: float
) -> float:
    """price per GPU-hour x GPUs / (output tokens/s x 3600) x 1,000,000."""
    if output_throughput <= 0:
        raise AnalysisError(NO_OUTPUT)
    tokens_per_hour = output_throughput * SECONDS_PER_HOUR
    return price_per_gpu_hour * gpus / tokens_per_hour * TOKENS_PER_MILLION


def unpriced_reason(point: CostInput) -> str | None:
    """Why the point has no cost per million output tokens, or None when it has one."""
    if point.cpu_engine:
        return CPU_ENGINE
    if point.launch_style == "attach":
        return ATTACHED
    if not point.run_valid:
        return INVALID_RUN
    if not point.valid:
        return FAILED_CHECKS
    if point.output_throughput <= 0:
        return NO_OUTPUT
    if point.node is None:
        return NO_NODE
    if point.price is None:
        return NO_PRICE.format(node=point.node)
    return None


@dataclass(frozen=True, kw_only=True)
class PointCost:
    """A point's cost per million output tokens in its price's currency, or why it has none."""

    key: str
    per_million: float | None
    price: GpuHourPrice | None
    gpus: int
    reason: str | None
    tokens_per_joule: float | None

    @property
    def text(self) -> str | None:
        """'0.139 USD'; None when there is no figure."""
        if self.per_million is None or self.price is None:
            return None
        return f"{figure(self.per_million)} {self.price.currency}"

    @property
    def tokens_per_joule_text(self) -> str | None:
        return None if self.tokens_per_joule is None else figure(self.tokens_per_joule)


def point_cost(point: CostInput) -> PointCost:
    reason = unpriced_reason(point)
    per_million = None
    if reason is None and point.price is not None:
        per_million = cost_per_million_output_tokens(
            float(point.price.amount), point.gpus, point.output_throughput
        )
    return PointCost(
        key=point.key,
        per_million=per_million,
        price=point.price,
        gpus=point.gpus,
        reason=reason,
        tokens_per_joule=point.tokens_per_joule,
    )


# --- what a tuning is worth: the sentences -----------------------------------------------------

WORTH_MORE_GPUS = (
    "The tuned setting serves this queue at %(candidate_cost)s per million output tokens "
    "instead of %(baseline_cost)s; on this %(node_gpus)s-GPU node that is the capacity of "
    "%(gpus)s additional GPUs."
)
WORTH_FEWER_GPUS = (
    "The tuned setting serves this queue at %(candidate_cost)s per million output tokens "
    "instead of %(baseline_cost)s; on this %(node_gpus)s-GPU node it gives up the capacity of "
    "%(gpus)s GPUs."
)
WORTH_MONEY = (
    "The tuned setting serves this queue at %(candidate_cost)s per million output tokens "
    "instead of %(baseline_cost)s."
)
WORTH_MORE_GPUS_ONLY = (
    "On this %(node_gpus)s-GPU node the tuned setting has the capacity of %(gpus)s additional "
    "GPUs."
)
WORTH_FEWER_GPUS_ONLY = (
    "On this %(node_gpus)s-GPU node the tuned setting gives up the capacity of %(gpus)s GPUs."
)
PRICE_ONE = "GPU-hour price: %(price)s, as of %(as_of)s."
PRICE_DATES = (
    "GPU-hour price: %(price)s on both sides, as of %(baseline_as_of)s for the baseline and "
    "%(candidate_as_of)s for the candidate."
)
PRICES_DIFFER = (
    "The two sides are priced differently: %(baseline_price)s per GPU-hour for the baseline "
    "(as of %(baseline_as_of)s), %(candidate_price)s for the candidate (as of "
    "%(candidate_as_of)s); part of the cost difference is the price's."
)
PRICE_STALE = (
    "The price as of %(as_of)s is %(age)s days old, older than %(max_age)s days: GPU-hour "
    "prices change, so check it before quoting the money figure."
)
CURRENCIES_DIFFER = (
    "No money figure: the two sides are priced in different currencies (%(baseline_currency)s "
    "and %(candidate_currency)s)."
)
NO_PRICE_BASELINE = "No money figure: no GPU-hour price is set for the baseline's node."
NO_PRICE_CANDIDATE = "No money figure: no GPU-hour price is set for the candidate's node."
NO_PRICE_EITHER = "No money figure: no GPU-hour price is set for either side's node."
NO_FIGURE_CPU = (
    "No cost or GPU figure: a CPU engine stood in for the GPU, so no GPU-hours were used."
)
NO_FIGURE_ATTACHED = (
    "No cost or GPU figure: an attached endpoint's GPUs are not its worker node's, so neither "
    "that node's price nor its GPU count applies."
)
NO_FIGURE_INVALID = (
    "No cost or GPU figure: a side that is not a valid run (failed or short responses, or "
    "aggregates that fail their checks) counts missing work."
)
NO_FIGURE_SPECS = (
    "No cost comparison across different input/output specs: the two sides do not serve the "
    "same queue."
)
CAPACITY_REPEATS = (
    "Each side's capacity is the lowest of its setting's valid repeats (%(baseline_repeats)s "
    "for the baseline, %(candidate_repeats)s for the candidate)."
)
ENERGY = "Energy: %(candidate)s output tokens per joule instead of %(baseline)s."

# Every template a report may look up (locale/ko translates each, with the same placeholders).
COST_TEMPLATES = (
    WORTH_MORE_GPUS, WORTH_FEWER_GPUS, WORTH_MONEY, WORTH_MORE_GPUS_ONLY, WORTH_FEWER_GPUS_ONLY,
    PRICE_ONE, PRICE_DATES, PRICES_DIFFER, PRICE_STALE, CURRENCIES_DIFFER, NO_PRICE_BASELINE,
    NO_PRICE_CANDIDATE, NO_PRICE_EITHER, NO_FIGURE_CPU, NO_FIGURE_ATTACHED, NO_FIGURE_INVALID,
    NO_FIGURE_SPECS, CAPACITY_REPEATS, ENERGY,
)


# --- what a tuning is worth: the rules ---------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Worth:
    """Baseline -> candidate in money and GPUs, with every statement that goes beside it.

    baseline / candidate: each side's cost at its capacity. gpu_equivalent: the additional
    GPUs (negative: forgone) the tuned setting's capacity equals on node_gpus GPUs; None when
    no GPU figure can be given. sentences: the worth, then the price and its date, then any
    note (a stale price, different prices, why money or GPUs are missing), then energy.
    """

    baseline: PointCost
    candidate: PointCost
    gpu_equivalent: float | None
    node_gpus: int | None
    money: bool
    sentences: tuple[Sentence, ...]


def gpu_equivalent(baseline: CostInput, candidate: CostInput, node_gpus: int) -> float:
    """node GPUs x (candidate capacity per GPU / baseline capacity per GPU - 1)."""
    if baseline.output_throughput <= 0:
        raise AnalysisError(f"baseline {baseline.key}: {NO_OUTPUT}")
    per_gpu_ratio = (candidate.output_throughput / candidate.gpus) / (
        baseline.output_throughput / baseline.gpus
    )
    return node_gpus * (per_gpu_ratio - 1)


def _no_figure(baseline: CostInput, candidate: CostInput) -> Sentence | None:
    """Why neither a cost nor a GPU figure can be given, or None."""
    sides = (baseline, candidate)
    if any(side.cpu_engine for side in sides):
        return Sentence(NO_FIGURE_CPU, {})
    if any(side.launch_style == "attach" for side in sides):
        return Sentence(NO_FIGURE_ATTACHED, {})
    if any(not side.valid or side.output_throughput <= 0 for side in sides):
        return Sentence(NO_FIGURE_INVALID, {})
    return None


def _no_money(baseline: CostInput, candidate: CostInput) -> Sentence | None:
    """Why no money figure can be given, or None when both sides are priced in one currency."""
    b, c = baseline.price, candidate.price
    if b is None and c is None:
        return Sentence(NO_PRICE_EITHER, {})
    if b is None:
        return Sentence(NO_PRICE_BASELINE, {})
    if c is None:
        return Sentence(NO_PRICE_CANDIDATE, {})
    if b.currency != c.currency:
        return Sentence(CURRENCIES_DIFFER, {"baseline_currency": b.currency,
                                            "candidate_currency": c.currency})
    return None


def price_sentences(
    baseline: GpuHourPrice, candidate: GpuHourPrice, today: date, max_age_days: int
) -> tuple[Sentence, ...]:
    """The price and its date beside a money figure; both when they differ; each stale one."""
    if baseline == candidate:
        stated = Sentence(PRICE_ONE, {"price": baseline.text, "as_of": baseline.as_of.isoformat()})
    elif baseline.same_amount(candidate):
        stated = Sentence(PRICE_DATES, {"price": baseline.text,
                                        "baseline_as_of": baseline.as_of.isoformat(),
                                        "candidate_as_of": candidate.as_of.isoformat()})
    else:
        stated = Sentence(PRICES_DIFFER, {"baseline_price": baseline.text,
                                          "baseline_as_of": baseline.as_of.isoformat(),
                                          "candidate_price": candidate.text,
                                          "candidate_as_of": candidate.as_of.isoformat()})
    # One statement per date: two prices quoted on one day are one age.
    dated = {price.as_of: price for price in (baseline, candidate)}
    stale = [stale_price_sentence(price, today, max_age_days) for price in dated.values()]
    return (stated, *(s for s in stale if s is not None))


def stale_price_sentence(price: GpuHourPrice, today: date, max_age_days: int) -> Sentence | None:
    """'The price as of ... is N days old, older than M days: ...' when it is; else None."""
    age = price.age_days(today)
    if age <= max_age_days:
        return None
    return Sentence(PRICE_STALE, {"as_of": price.as_of.isoformat(), "age": str(age),
                                  "max_age": str(max_age_days)})


def _headline(
    money: tuple[PointCost, PointCost] | None, gpus: float | None, node_gpus: int | None
) -> Sentence | None:
    """The worth itself: money and GPUs, money alone, or GPUs alone."""
    gpu_values = {"node_gpus": str(node_gpus), "gpus": gpus_text(gpus)} if gpus is not None else {}
    if money is not None:
        costs = {"baseline_cost": money[0].text or "", "candidate_cost": money[1].text or ""}
        if gpus is None:
            return Sentence(WORTH_MONEY, costs)
        return Sentence(WORTH_MORE_GPUS if gpus >= 0 else WORTH_FEWER_GPUS,
                        {**costs, **gpu_values})
    if gpus is not None:
        return Sentence(WORTH_MORE_GPUS_ONLY if gpus >= 0 else WORTH_FEWER_GPUS_ONLY, gpu_values)
    return None


def worth(
    baseline: CostInput,
    candidate: CostInput,
    *,
    node_gpus: int | None,
    same_spec: bool,
    today: date,
    max_price_age_days: int = PRICE_MAX_AGE_DAYS,
) -> Worth:
    """What the candidate's setting is worth against the baseline's, at their capacities.

    node_gpus: the GPUs of the candidate's node (None or 0: no GPU figure). Across different
    input/output specs the two do not serve the same queue: no figure, only that statement.
    """
    costs = (point_cost(baseline), point_cost(candidate))

    def result(sentences: tuple[Sentence, ...], gpus: float | None = None,
               money: bool = False) -> Worth:
        return Worth(baseline=costs[0], candidate=costs[1], gpu_equivalent=gpus,
                     node_gpus=node_gpus, money=money, sentences=sentences)

    if not same_spec:
        return result((Sentence(NO_FIGURE_SPECS, {}),))
    blocked = _no_figure(baseline, candidate)
    if blocked is not None:
        return result((blocked,))
    gpus = gpu_equivalent(baseline, candidate, node_gpus) if node_gpus else None
    no_money = _no_money(baseline, candidate)
    notes: list[Sentence] = []
    if no_money is None and baseline.price is not None and candidate.price is not None:
        notes += price_sentences(baseline.price, candidate.price, today, max_price_age_days)
    elif no_money is not None:
        notes.append(no_money)
    headline = _headline(costs if no_money is None else None, gpus, node_gpus)
    if headline is not None and (baseline.repeats > 1 or candidate.repeats > 1):
        notes.append(Sentence(CAPACITY_REPEATS, {"baseline_repeats": str(baseline.repeats),
                                                 "candidate_repeats": str(candidate.repeats)}))
    energy = energy_sentence(baseline, candidate)
    if energy is not None:
        notes.append(energy)
    lead = (headline,) if headline is not None else ()
    return result((*lead, *notes), gpus=gpus, money=no_money is None)


def energy_sentence(baseline: CostInput, candidate: CostInput) -> Sentence | None:
    """Output tokens per joule on both sides, where both measured energy; else nothing."""
    b, c = baseline.tokens_per_joule, candidate.tokens_per_joule
    if b is None or c is None:
        return None
    return Sentence(ENERGY, {"candidate": figure(c), "baseline": figure(b)})
