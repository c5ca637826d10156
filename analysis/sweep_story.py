"""The sweep's story across engine configs: the steps between them and what the sweep changed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import pairwise
from typing import Any

from analysis import causes, sentences
from analysis.errors import AnalysisError
from analysis.types import SettingChange, SweepStep, SweepSummary, Verdict
from analysis.verdicts import SATURATION_GAIN_PCT


def _represents(v: Verdict) -> tuple[bool, int, float, float]:
    """Sort key: the largest is the verdict that stands for its config in the sweep summary (an
    undisturbed point before a disturbed one, whose throughput is partly its neighbour's)."""
    return (not v.evidence.disturbed, -v.evidence.replicas,
            v.offered_concurrency, -v.output_throughput)


def _setting_order(value: Any) -> tuple[int, float, str]:
    """Sort key of one setting's value: numbers by size, then words, the engine default last."""
    if value is None:
        return (2, 0.0, "")
    if isinstance(value, int | float):  # bool too: off before on
        return (0, float(value), "")
    return (1, 0.0, str(value))


def config_order(v: Verdict) -> tuple[Any, ...]:
    return (*(_setting_order(value) for _, value in v.settings), v.config_label)


def _changed(a: Verdict, b: Verdict) -> list[str]:
    """The settings whose values differ between two configs, in EngineConfig's order."""
    after = dict(b.settings)
    return [name for name, value in a.settings if after.get(name) != value]


def _step(a: Verdict, b: Verdict, axes: Sequence[str] = ()) -> SweepStep:
    """One step between two configs; axes: the settings the sweep varies, whose values a step
    along one of them names as where it was taken ("at max_num_batched_tokens 2048")."""
    after = dict(b.settings)
    names = _changed(a, b)
    changes = [
        SettingChange(setting=name, before=value, after=after.get(name))
        for name, value in a.settings
        if name in names
    ]
    if not changes:
        # The configs differ in nothing recorded as a setting; name them by their labels.
        changes = [
            SettingChange(setting="the engine config", before=a.config_label, after=b.config_label)
        ]
    held = [(name, value) for name, value in a.settings if name in axes and name not in names]
    raised = any(c.setting in LIMIT_SETTINGS and _raised(c) for c in changes)
    return SweepStep(
        from_key=a.key,
        to_key=b.key,
        from_config=a.config_label,
        to_config=b.config_label,
        changes=tuple(changes),
        from_kind=a.kind,
        to_kind=b.kind,
        from_throughput=a.output_throughput,
        to_throughput=b.output_throughput,
        sentence=causes.sweep_step_sentence(
            [(c.setting, c.before, c.after) for c in changes], a.kind, b.kind, held=held
        ),
        story=causes.story_sentence(
            load=_loads_text(a, b), changes=[(c.setting, c.before, c.after) for c in changes],
            sides=_sides(changes), throughputs=(a.output_throughput, b.output_throughput),
            causes=(cause(a), cause(b)), flat_pct=SATURATION_GAIN_PCT, raised_a_limit=raised,
            noise_band_pct=a.evidence.noise_band_pct,
        ),
    )


def cause(v: Verdict) -> sentences.Sentence:
    """The verdict's cause in a clause, with its figure and the ladder's saturation."""
    return causes.cause_sentence(v.kind, v.evidence, v.partial)


def step_between(a: Verdict, b: Verdict) -> SweepStep:
    """The step from one judged point to another (a report's before and after), told as the
    sweep's story tells its steps."""
    return _step(a, b)


def _loads_text(a: Verdict, b: Verdict) -> str:
    load_a, load_b = a.load_label or a.key, b.load_label or b.key
    return load_a if load_a == load_b else f"{load_a} and {load_b}"


def _sides(changes: Sequence[SettingChange]) -> tuple[str, str]:
    """What names each side in the story: the one changed setting at its value, else the
    changed settings' values joined."""
    def side(values: Sequence[Any]) -> str:
        return ", ".join(f"{c.setting} {sentences.setting_value_text(v)}"
                         for c, v in zip(changes, values, strict=True))
    return side([c.before for c in changes]), side([c.after for c in changes])


# The two settings whose raising admits more work a step: when raising one leaves output level,
# admitting more no longer pays.
LIMIT_SETTINGS = ("max_num_seqs", "max_num_batched_tokens")


def _raised(change: SettingChange) -> bool:
    before, after = change.before, change.after
    return isinstance(before, int) and isinstance(after, int) and after > before


def _sweep_steps(ordered: Sequence[Verdict]) -> list[SweepStep]:
    """Steps along each axis: every config to the next one that differs from it in exactly one
    setting, once per setting, so a grid of several axes reads one axis at a time, each step
    naming where the others were held. A config no such step reaches (an explicit list whose
    configs differ in several settings at once) is joined to the config before it."""
    pairs: list[tuple[Verdict, Verdict, str]] = []
    for i, a in enumerate(ordered):
        along: dict[str, Verdict] = {}
        for b in ordered[i + 1 :]:
            changed = _changed(a, b)
            if len(changed) == 1 and changed[0] not in along:
                along[changed[0]] = b
        pairs += [(a, b, name) for name, b in along.items()]
    # A step names where the other stepped settings stood: none with a single axis.
    stepped = {name for _, _, name in pairs}
    axes = [name for name, _ in ordered[0].settings if name in stepped]
    steps = [_step(a, b, axes) for a, b, _ in pairs]
    reached = {key for a, b, _ in pairs for key in (a.key, b.key)}
    for a, b in pairwise(ordered):
        if b.key not in reached:
            steps.append(_step(a, b))
            reached |= {a.key, b.key}
    return steps


def _no_summary_reason(judged: Sequence[str], missing: Mapping[str, str]) -> str:
    """Why fewer than two engine configs have a verdict to compare."""
    unjudged = {label: why for label, why in missing.items() if label not in judged}
    if not unjudged:
        return "the sweep has one engine config: there is no change to summarize"
    reasons = "; ".join(f"{label}: {why}" for label, why in sorted(unjudged.items()))
    if not judged:
        return (
            f"no engine config has a bottleneck verdict ({reasons}), so there is no change "
            "to summarize"
        )
    return (
        f"only {judged[0]} has bottleneck verdicts ({reasons}): a change needs two engine configs "
        "with verdicts"
    )


def summarize_sweep_change(
    verdicts: Sequence[Verdict], missing: Mapping[str, str] | None = None
) -> SweepSummary:
    """What the sweep changed: "raising max_num_seqs from 256 to 1024 moved the bottleneck from
    the scheduler cap to saturation".

    Each config is represented by its verdict at its highest load level (the bottleneck under
    the most load; among repeats there, the lowest throughput, as capacity uses), taken among
    its points on the fewest replicas: a node run beside single-replica points would otherwise
    put a node's throughput against one engine's. Configs are ordered by their settings in
    EngineConfig's order (max_num_seqs first); steps go along one setting at a time
    (_sweep_steps) and overall joins the first config and the last.

    missing: the sweep's configs that have no verdict, each with why (config label -> reason),
    so a refusal names them instead of calling a two-config sweep a one-config one.
    """
    by_config: dict[str, Verdict] = {}
    for v in verdicts:
        held = by_config.get(v.config_label)
        if held is None or _represents(v) > _represents(held):
            by_config[v.config_label] = v
    if len(by_config) < 2:
        raise AnalysisError(_no_summary_reason(sorted(by_config), missing or {}))
    ordered = sorted(by_config.values(), key=config_order)
    steps = tuple(_sweep_steps(ordered))
    overall = steps[0] if len(steps) == 1 else _step(ordered[0], ordered[-1])
    return SweepSummary(steps=steps, overall=overall, sentence=overall.sentence)
