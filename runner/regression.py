"""Regression watch: a candidate run judged against the accepted baseline of its plan.

The same plan run again on another runtime version, checkpoint revision or node regressed where
a figure moved beyond the baseline's repeat spread, widened by a tolerance for the noise one
repeat cannot show. The rule reads result points alone, so `python -m runner compare` in a CI
pipeline and the dashboard's run page give the same verdict on the same points.

Per setting (engine config, load level, replicas, spec), over valid repeats only:
- regressed: even the candidate's best repeat is worse than the baseline's worst by more than
  the tolerance (throughput below min x (1 - tol), a latency above max x (1 + tol));
- improved: even the candidate's worst repeat is better than the baseline's best by more than it;
- within spread otherwise.
A config regressed when any of its settings did. Factors that differ between the two sides
(runner.fixed_factors) are named beside the verdict, never hidden by it. A figure that is not a
finite number (NaN, infinity) makes its setting not comparable, and fails the CLI's gate: every
comparison with NaN is false, so it would otherwise read as within spread.
"""

from __future__ import annotations

import hashlib
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from runner.fixed_factors import FACTORS, SPEC_FACTOR, factor_status, point_facts
from runner.schema.result import PointResult

# Beyond the spread, a figure must move by more than this share to count: one repeat has no
# spread, and two repeats on a GPU node still differ by a few percent.
REGRESSION_TOLERANCE_PCT = 5.0

Verdict = Literal["regressed", "improved", "within spread", "not comparable"]


@dataclass(frozen=True)
class Figure:
    """A figure the watch compares: a Metrics field under vLLM's name."""

    name: str
    label: str
    unit: str
    higher_is_better: bool


FIGURES: tuple[Figure, ...] = (
    Figure("output_throughput", "output throughput", "tok/s", True),
    Figure("median_ttft_ms", "median TTFT", "ms", False),
    Figure("median_tpot_ms", "median TPOT", "ms", False),
    Figure("median_e2el_ms", "median E2EL", "ms", False),
    Figure("p99_e2el_ms", "p99 E2EL", "ms", False),
)


class Setting(NamedTuple):
    """What repeats share, and what must match for a candidate point to face a baseline one."""

    config: str
    load: str
    replicas: int
    spec: str


def setting_of(p: PointResult) -> Setting:
    return Setting(p.engine_config.label(), p.load.label(), p.replicas, p.workload.spec_label())


@dataclass(frozen=True)
class FigureCheck:
    figure: Figure
    baseline: tuple[float, ...]
    candidate: tuple[float, ...]
    change_pct: float | None  # median against median
    verdict: Verdict

    def sentence(self) -> str:
        low, high = min(self.baseline), max(self.baseline)
        spread = f"{low:,.1f}" if low == high else f"{low:,.1f}-{high:,.1f}"
        shown = ", ".join(f"{v:,.1f}" for v in self.candidate)
        change = "" if self.change_pct is None else f" ({self.change_pct:+.1f}%)"
        return (f"{self.figure.label} {shown} {self.figure.unit}{change} against the "
                f"baseline's {spread}")


@dataclass(frozen=True)
class SettingCheck:
    setting: Setting
    checks: tuple[FigureCheck, ...]
    note: str | None = None  # why it could not be judged
    # What could distort the figures it was judged on: repeats left out, a saturated client.
    doubts: tuple[str, ...] = ()
    # A figure that is not a finite number: no verdict, and a failure of the CLI's gate.
    not_finite: bool = False

    @property
    def verdict(self) -> Verdict:
        if self.note is not None:
            return "not comparable"
        return _worst(check.verdict for check in self.checks)


@dataclass(frozen=True)
class ConfigVerdict:
    config: str
    settings: tuple[SettingCheck, ...]

    @property
    def verdict(self) -> Verdict:
        return _worst(s.verdict for s in self.settings)

    def sentence(self) -> str:
        """The config's verdict with the figures that decided it, e.g. 'seqs=8 regressed: at
        burst 64, output throughput 3,020.0 tok/s (-21.3%) against the baseline's
        3,811.0-3,840.2'."""
        verdict = self.verdict
        deciding = [
            f"at {s.setting.load}" + (f" x {s.setting.replicas} replicas"
                                      if s.setting.replicas > 1 else "")
            + ", " + "; ".join(c.sentence() for c in s.checks if c.verdict == verdict)
            for s in self.settings
            if s.verdict == verdict and s.note is None
        ]
        if verdict == "not comparable":
            deciding = [f"at {s.setting.load}, {s.note}" for s in self.settings if s.note]
        doubts = [f"at {s.setting.load}, {d}" for s in self.settings for d in s.doubts]
        doubt = f" (doubtful: {'; '.join(doubts)})" if doubts else ""
        if verdict == "within spread":
            return f"{self.config}: within the baseline's spread (tolerance applied){doubt}"
        return f"{self.config} {verdict}: " + " | ".join(deciding) + doubt


@dataclass(frozen=True)
class RegressionReport:
    tolerance_pct: float
    configs: tuple[ConfigVerdict, ...]
    differing: tuple[str, ...]  # "runtime version: 0.31.0 -> 0.32.0"
    unknown: tuple[str, ...]  # factor labels not recorded on one side
    only_baseline: tuple[Setting, ...] = field(default=())
    only_candidate: tuple[Setting, ...] = field(default=())

    @property
    def verdict(self) -> Verdict:
        if not self.configs:
            return "not comparable"
        return _worst(c.verdict for c in self.configs)

    @property
    def regressed_configs(self) -> tuple[str, ...]:
        return tuple(c.config for c in self.configs if c.verdict == "regressed")

    @property
    def not_finite(self) -> tuple[str, ...]:
        """Each setting with a figure that is not a finite number, with which: 'seqs=8 at burst
        100: the candidate's output throughput is nan'."""
        return tuple(f"{c.config} at {s.setting.load}: {s.note}"
                     for c in self.configs for s in c.settings if s.not_finite)

    def factors_sentence(self) -> str:
        if not self.differing and not self.unknown:
            return "every fixed factor matches (a controlled comparison)"
        parts = []
        if self.differing:
            parts.append("differs: " + "; ".join(self.differing))
        if self.unknown:
            parts.append("not recorded on both sides: " + ", ".join(self.unknown))
        return "not a controlled comparison; " + "; ".join(parts)

    def lines(self) -> list[str]:
        """The report as plain lines: the verdict, the factors, one line per config."""
        out = [f"{self.verdict} (tolerance {self.tolerance_pct:g}% beyond the baseline's "
               f"repeat spread)", self.factors_sentence()]
        return out + [c.sentence() for c in self.configs] + self.unmatched()

    def unmatched(self) -> list[str]:
        """The settings only one side measured: listed, never judged."""
        out = []
        if self.only_baseline:
            out.append("not measured in the candidate: "
                       + ", ".join(f"{s.config} at {s.load}" for s in self.only_baseline))
        if self.only_candidate:
            out.append("not in the baseline: "
                       + ", ".join(f"{s.config} at {s.load}" for s in self.only_candidate))
        return out


# The worst verdict of several, in this order: one regressed setting makes the config regressed.
_ORDER: tuple[Verdict, ...] = ("regressed", "not comparable", "improved", "within spread")


def _worst(verdicts: Iterable[Verdict]) -> Verdict:
    seen = set(verdicts)
    return next((v for v in _ORDER if v in seen), "within spread")


def check_figure(
    figure: Figure, baseline: Sequence[float], candidate: Sequence[float], tolerance_pct: float
) -> FigureCheck:
    """One figure of one setting; both sides need at least one value."""
    tol = tolerance_pct / 100
    low, high = min(baseline), max(baseline)
    if figure.higher_is_better:
        regressed = max(candidate) < low * (1 - tol)
        improved = min(candidate) > high * (1 + tol)
    else:
        regressed = min(candidate) > high * (1 + tol)
        improved = max(candidate) < low * (1 - tol)
    mid = statistics.median(baseline)
    change = (statistics.median(candidate) - mid) / mid * 100 if mid > 0 else None
    verdict: Verdict = "regressed" if regressed else "improved" if improved else "within spread"
    return FigureCheck(figure, tuple(baseline), tuple(candidate), change, verdict)


def _values(points: Sequence[PointResult], figure: Figure) -> list[float]:
    values = (getattr(p.metrics, figure.name) for p in points)
    return [float(v) for v in values if v is not None]


def check_setting(
    setting: Setting,
    baseline: Sequence[PointResult],
    candidate: Sequence[PointResult],
    tolerance_pct: float,
) -> SettingCheck:
    base, cand = _judged(baseline), _judged(candidate)
    doubts = _doubts("the baseline", baseline, base) + _doubts("the candidate", candidate, cand)
    if not base or not cand:
        side = "the baseline" if not base else "the candidate"
        return SettingCheck(setting, (), note=f"{side} has no valid repeat that other "
                            "processes left undisturbed", doubts=doubts)
    if not_finite := _not_finite("the baseline", base) + _not_finite("the candidate", cand):
        return SettingCheck(setting, (), note="; ".join(not_finite), doubts=doubts,
                            not_finite=True)
    checks = []
    for figure in FIGURES:
        b, c = _values(base, figure), _values(cand, figure)
        if b and c:
            checks.append(check_figure(figure, b, c, tolerance_pct))
    return SettingCheck(setting, tuple(checks), doubts=doubts)


def _judged(points: Sequence[PointResult]) -> list[PointResult]:
    """The repeats a verdict rests on: valid, and not disturbed by other processes on the host
    (HostCpu.disturbed), whose change would be the neighbour's rather than the engine's."""
    return [p for p in points
            if p.metrics.valid and not (p.host is not None and p.host.disturbed)]


def _not_finite(side: str, points: Sequence[PointResult]) -> list[str]:
    """Each watched figure of the side that is not a finite number, named with its value."""
    return [f"{side}'s {figure.label} is {value}"
            for figure in FIGURES for value in _values(points, figure)
            if not math.isfinite(value)]


def _doubts(
    side: str, points: Sequence[PointResult], judged: Sequence[PointResult]
) -> tuple[str, ...]:
    """Invalid or disturbed repeats left out, and judged ones whose client could not keep up:
    its timings, and so the latencies judged, may be its own."""
    out = []
    if invalid := sum(not p.metrics.valid for p in points):
        out.append(f"{invalid} invalid repeat(s) of {side} left out")
    if disturbed := len(points) - len(judged) - invalid:
        out.append(f"{disturbed} repeat(s) of {side} disturbed by other processes left out")
    if saturated := sum(p.client.saturated for p in judged):
        out.append(f"{side}'s client saturated in {saturated} repeat(s)")
    return tuple(out)


def _by_setting(points: Iterable[PointResult]) -> dict[Setting, list[PointResult]]:
    groups: dict[Setting, list[PointResult]] = {}
    for p in points:
        groups.setdefault(setting_of(p), []).append(p)
    return groups


def _factor_differences(
    pairs: Iterable[tuple[PointResult, PointResult]],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Each factor that differs (with both values) or is unknown, over the matched settings."""
    differing: dict[str, str] = {}
    unknown: dict[str, None] = {}
    for a, b in pairs:
        before, after = point_facts(a), point_facts(b)
        for name, label in FACTORS:
            if name == SPEC_FACTOR:
                continue  # settings match on their spec, so it is the same on both sides
            status = factor_status(before.get(name), after.get(name))
            if status == "differ":
                differing.setdefault(label, f"{label}: {before[name]} -> {after[name]}")
            elif status == "unknown":
                unknown.setdefault(label)
    return tuple(differing.values()), tuple(unknown)


def compare_runs(
    baseline: Sequence[PointResult],
    candidate: Sequence[PointResult],
    tolerance_pct: float = REGRESSION_TOLERANCE_PCT,
) -> RegressionReport:
    """The regression verdict of a candidate run's points against its baseline's."""
    if not 0 <= tolerance_pct < 100:
        raise ValueError(f"the tolerance must be from 0 to under 100 percent, got {tolerance_pct}")
    before, after = _by_setting(baseline), _by_setting(candidate)
    shared = [s for s in before if s in after]
    by_config: dict[str, list[SettingCheck]] = {}
    for setting in shared:
        check = check_setting(setting, before[setting], after[setting], tolerance_pct)
        by_config.setdefault(setting.config, []).append(check)
    differing, unknown = _factor_differences((before[s][0], after[s][0]) for s in shared)
    return RegressionReport(
        tolerance_pct=tolerance_pct,
        configs=tuple(ConfigVerdict(c, tuple(s)) for c, s in by_config.items()),
        differing=differing,
        unknown=unknown,
        only_baseline=tuple(s for s in before if s not in after),
        only_candidate=tuple(s for s in after if s not in before),
    )


# The parts of a plan that say what is measured. What "run again" may change to be watched (the
# runtime image, the checkpoint's revision, the node, the client's processes, the repeats) and
# the run's name are left out, so such runs share the plan's key.
PLAN_KEY_PARTS = ("engine_configs", "loads", "workload", "replicas", "warmup_requests")


def plan_key(plan: Any) -> str:
    """A stable digest of what a stored plan measures: runs with the same key are one plan."""
    plan = plan if isinstance(plan, dict) else {}
    measured = {part: plan.get(part) for part in PLAN_KEY_PARTS}
    measured["checkpoint"] = (plan.get("checkpoint") or {}).get("model")
    text = json.dumps(measured, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()
