"""Percentages on the dashboard's pages, written by the judgement layer's one rule
(judgement.vocabulary.pct / percent: one decimal, two below 1%), so a +0.38% step never reads
as "+0%" and the template beside a sentence never rounds what the sentence states."""

from __future__ import annotations

from django import template

from judgement import vocabulary

register = template.Library()


# What a filter may be given: a stored figure, None, or "" (Django's string_if_invalid) where
# the template names a key the stored dict does not hold, as a summary file's empty
# slo_attainment has no "all"; each of these reads as missing ("-"), never as a failed page.
Figure = float | int | str | None


def _number(value: Figure) -> float | None:
    return None if value is None or isinstance(value, str) else float(value)


@register.filter
def percent(value: Figure) -> str:
    """A level already in percent (a spread, a threshold): "0.38%", "73.1%"; "-" when missing."""
    number = _number(value)
    return "-" if number is None else vocabulary.percent(number)


@register.filter
def change(value: Figure) -> str:
    """A signed change in percent: "+0.38%", "-3.0%"; "-" when missing."""
    number = _number(value)
    return "-" if number is None else vocabulary.pct(number)


@register.filter
def share(value: Figure) -> str:
    """A 0-1 fraction (KV use, SLO attainment, scaling efficiency) in percent; "-" when missing."""
    number = _number(value)
    return "-" if number is None else vocabulary.percent(number * 100)
