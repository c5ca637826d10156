"""How sure a run's figures are: the scatter of its draws, the drift its control points show,
and the interval a headline carries.

A slower spell of the host slows every step, so draws scatter by a factor rather than by an
amount: the spread is taken on the log scale, as the standard deviation of log(figure) among
the draws of each setting (a setting's repeats and its control point), pooled over the run's
settings by their degrees of freedom. A control point (runner.sweep) is its config's first
level measured once more after the last, on the same engine: the pair measures the drift over
the config's points. The end control (StabilitySpec.end_control) is the first config's first
level once more after the last config, on a fresh engine start (a search's: its answer point
once more after the search): against that point's first draw it measures the drift over the
whole sweep, across engine starts. A figure's interval is never
narrower than the widest of these pairs implies.
With one draw per level and no control point nothing measured the noise, and no interval is
given rather than a made-up one.

Only judged draws take part (analysis.repeats.judged_repeats: valid, undisturbed first). Z and
the pooled spread are runner.convergence's, which repeats the deciding levels by the same
interval; with a few draws the spread itself is uncertain, so every interval names its draws.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from analysis import sentences
from analysis.repeats import group_by_setting, judged_repeats
from analysis.sentences import Sentence, num, pct, percent, ratio_text, within_band
from analysis.types import PointFigures
from runner.convergence import Z, pooled_log_sd


@dataclass(frozen=True)
class Interval:
    """A figure's range: low to high, from `repeats` draws, and what it rests on in words."""

    low: float
    high: float
    repeats: int
    basis: str

    def contains(self, value: float) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True, kw_only=True)
class Drift:
    """One config's control point, or the run's end control, against the first draw of the
    same level."""

    config_label: str
    load_label: str
    first_key: str
    control_key: str
    change_pct: float
    # Beyond what the run's other repeats scatter by; None: no repeats to compare it with.
    beyond_spread: bool | None


@dataclass(frozen=True, kw_only=True)
class RunNoise:
    """The run's scatter, per figure, its control points' drifts and its end control's.

    sd: the log-scale standard deviation of one draw used for intervals (None: nothing measured
    it); repeat_sd the same over repeats alone, control points left out (None: no setting was
    repeated); draws: how many draws the estimate rests on; end_drift: the end control against
    the first config's first draw, start to end of the sweep (None: no end control).
    """

    throughput_sd: float | None
    latency_sd: float | None
    repeat_sd: float | None
    draws: int
    drifts: tuple[Drift, ...]
    end_drift: Drift | None = None

    @property
    def drifted(self) -> Drift | None:
        """The largest drift beyond the repeats' spread, if any."""
        beyond = [d for d in self.drifts if d.beyond_spread]
        return max(beyond, key=lambda d: abs(d.change_pct)) if beyond else None

    def step_band_pct(self) -> float | None:
        """The +/- percent inside which a change between two single draws is noise."""
        return band_pct(self.throughput_sd, math.sqrt(2))


def band_pct(sd: float | None, scale: float = 1.0) -> float | None:
    """Z standard deviations (times scale) on the log scale, as a percent change."""
    return None if sd is None else math.expm1(Z * sd * scale) * 100


def _draws(points: Sequence[PointFigures], figure: Callable[[PointFigures], float | None],
           controls: bool) -> list[list[float]]:
    groups = []
    for group in group_by_setting(points).values():
        judged = [p for p in judged_repeats(group) if controls or not _is_control(p)]
        groups.append([v for p in judged if (v := figure(p)) is not None])
    return groups


def _is_control(point: PointFigures) -> bool:
    return point.control or point.end_control


def _drift(judged: Sequence[PointFigures], control: PointFigures | None,
           repeat_sd: float | None) -> Drift | None:
    """The control against the setting's first draw (its lowest repeat that is no control),
    beyond the band of a change between two draws when the repeats measured one."""
    first = min((p for p in judged if not _is_control(p)), key=lambda p: p.repeat, default=None)
    if control is None or first is None or first.output_throughput <= 0:
        return None
    change = (control.output_throughput / first.output_throughput - 1) * 100
    beyond = None
    if repeat_sd is not None:
        beyond = not within_band(change, band_pct(repeat_sd, math.sqrt(2)))
    return Drift(config_label=first.config_label, load_label=first.load_label,
                 first_key=first.key, control_key=control.key, change_pct=change,
                 beyond_spread=beyond)


def _drifts(points: Sequence[PointFigures], repeat_sd: float | None) -> tuple[Drift, ...]:
    out = []
    for group in group_by_setting(points).values():
        judged = judged_repeats(group)
        drift = _drift(judged, next((p for p in judged if p.control), None), repeat_sd)
        if drift is not None:
            out.append(drift)
    return tuple(out)


def end_drift(points: Sequence[PointFigures], repeat_sd: float | None = None) -> Drift | None:
    """The end control against its setting's first draw, by the per-config controls' rule
    (beyond_spread None without repeat_sd)."""
    for group in group_by_setting(points).values():
        judged = judged_repeats(group)
        end = next((p for p in judged if p.end_control), None)
        if end is not None:
            return _drift(judged, end, repeat_sd)
    return None


def _at_least_pairs(sd: float | None, drifts: Sequence[Drift]) -> float | None:
    """The pooled sd, never narrower than the widest control pair implies (|log ratio| / sqrt 2):
    a drift widens every interval that rests on the run's draws."""
    widest = max((abs(math.log1p(d.change_pct / 100)) / math.sqrt(2) for d in drifts),
                 default=None)
    if widest is None:
        return sd
    return widest if sd is None else max(sd, widest)


def run_noise(points: Sequence[PointFigures]) -> RunNoise:
    """The run's noise from its own draws (module docstring)."""
    repeat_sd, _ = pooled_log_sd(_draws(points, lambda p: p.output_throughput, controls=False))
    throughput_sd, draws = pooled_log_sd(
        _draws(points, lambda p: p.output_throughput, controls=True))
    latency_sd, _ = pooled_log_sd(_draws(points, lambda p: p.median_e2el_ms, controls=True))
    drifts = _drifts(points, repeat_sd)
    end = end_drift(points, repeat_sd)
    pairs = (*drifts, *([end] if end is not None else []))
    return RunNoise(
        throughput_sd=_at_least_pairs(throughput_sd, pairs),
        latency_sd=_at_least_pairs(latency_sd, pairs),
        repeat_sd=repeat_sd,
        draws=draws,
        drifts=drifts,
        end_drift=end,
    )


def value_interval(value: float, sd: float | None, draws: int, basis: str) -> Interval | None:
    """A figure from `draws` draws of one setting, with the run's per-draw sd: value x
    exp(+/- Z sd / sqrt(draws)). None when nothing measured the noise."""
    if sd is None or draws < 1 or not math.isfinite(value):
        return None
    half = Z * sd / math.sqrt(draws)
    return Interval(value * math.exp(-half), value * math.exp(half), draws, basis)


@dataclass(frozen=True, kw_only=True)
class RatioInterval:
    """candidate / baseline over every judged draw of each side's setting: the geometric means'
    ratio, and its interval from each run's per-draw sd."""

    ratio: float
    low: float
    high: float
    baseline_draws: int
    candidate_draws: int

    @property
    def within_noise(self) -> bool:
        return self.low <= 1.0 <= self.high


def ratio_interval(
    baseline: Sequence[float], candidate: Sequence[float],
    baseline_sd: float | None, candidate_sd: float | None,
) -> RatioInterval | None:
    """None when either side has no positive draw or its run measured no noise."""
    b = [math.log(v) for v in baseline if v > 0 and math.isfinite(v)]
    c = [math.log(v) for v in candidate if v > 0 and math.isfinite(v)]
    if not b or not c or baseline_sd is None or candidate_sd is None:
        return None
    centre = math.fsum(c) / len(c) - math.fsum(b) / len(b)
    half = Z * math.sqrt(baseline_sd ** 2 / len(b) + candidate_sd ** 2 / len(c))
    return RatioInterval(ratio=math.exp(centre), low=math.exp(centre - half),
                         high=math.exp(centre + half), baseline_draws=len(b),
                         candidate_draws=len(c))


# --- in words ----------------------------------------------------------------------------------


def noise_sentences(
    noise: RunNoise, disturbed: Sequence[PointFigures], *, searched: bool = False
) -> tuple[Sentence, ...]:
    """What a run's page says about how sure its figures are: the noise and where it came from,
    the drift, and the disturbed points. searched: an adaptive sweep's run, whose end control is
    its answer point (runner.search.state)."""
    out = []
    band = band_pct(noise.throughput_sd)
    controls = [d.change_pct for d in noise.drifts]
    if band is None:
        out.append(Sentence(sentences.NOISE_NONE, {}))
    elif noise.repeat_sd is None:
        template = sentences.NOISE_CONTROLS if controls else sentences.NOISE_END_ONLY
        out.append(Sentence(template, {
            "changes": sentences.changes_list(controls), "band": percent(band)}))
    else:
        out.append(Sentence(sentences.NOISE_REPEATS, {"band": percent(band),
                                                      "draws": str(noise.draws)}))
        repeat_band = percent(band_pct(noise.repeat_sd, math.sqrt(2)) or 0.0)
        drifted = noise.drifted
        if drifted is not None:
            out.append(Sentence(sentences.DRIFTED, {
                "change": pct(drifted.change_pct), "config": drifted.config_label,
                "band": repeat_band}))
        elif controls:
            out.append(Sentence(sentences.NO_DRIFT, {
                "changes": sentences.changes_list(controls), "band": repeat_band}))
    if band is not None and noise.end_drift is not None:
        out.append(_end_sentence(noise.end_drift, noise.repeat_sd, searched))
    if disturbed:
        names = sentences.join_names([f"{p.config_label} at {p.load_label or p.key}"
                                      for p in disturbed])
        out.append(Sentence(sentences.DISTURBED_POINTS, {"count": str(len(disturbed)),
                                                         "points": names}))
    return tuple(out)


def _end_sentence(drift: Drift, repeat_sd: float | None, searched: bool) -> Sentence:
    """The end control: beyond the repeats' band, inside it, or with no repeats to judge by."""
    values = {"change": pct(drift.change_pct)}
    if searched:
        values["point"] = f"{drift.config_label} at {drift.load_label or drift.first_key}"
        moved, drifted, steady = (sentences.SEARCH_END_MOVED, sentences.SEARCH_END_DRIFTED,
                                  sentences.SEARCH_END_NO_DRIFT)
    else:
        values["config"] = drift.config_label
        moved, drifted, steady = sentences.END_MOVED, sentences.END_DRIFTED, sentences.END_NO_DRIFT
    if repeat_sd is None or drift.beyond_spread is None:
        return Sentence(moved, values)
    values["band"] = percent(band_pct(repeat_sd, math.sqrt(2)) or 0.0)
    return Sentence(drifted if drift.beyond_spread else steady, values)


def figure_sentence(value: float, interval: Interval | None, unit: str) -> Sentence:
    """"2,258 output tok/s (95% interval 1,950-2,610, from 2 draw(s))", or the figure alone."""
    if interval is None:
        return Sentence("%(value)s", {"value": f"{num(value)} {unit}"}, translatable=False)
    return Sentence(sentences.FIGURE_INTERVAL, {
        "value": f"{num(value)} {unit}", "low": num(interval.low), "high": num(interval.high),
        "draws": str(interval.repeats)})


def ratio_sentence(ratio: float, interval: RatioInterval | None) -> Sentence:
    """The headline ratio with its interval, "within noise" when the interval holds 1x."""
    if interval is None:
        return Sentence(sentences.RATIO_NO_INTERVAL, {"ratio": ratio_text(ratio)})
    values = {"ratio": ratio_text(interval.ratio), "low": ratio_text(interval.low),
              "high": ratio_text(interval.high), "baseline": str(interval.baseline_draws),
              "candidate": str(interval.candidate_draws)}
    template = sentences.RATIO_WITHIN_NOISE if interval.within_noise else sentences.RATIO_INTERVAL
    return Sentence(template, values)

