"""Percentages on the dashboard's pages, written by the judgement layer's one rule
(judgement.vocabulary.pct / percent: one decimal, two below 1%), so a +0.38% step never reads
as "+0%" and the template beside a sentence never rounds what the sentence states."""

from __future__ import annotations

from django import template

from judgement import vocabulary

register = template.Library()


@register.filter
def percent(value: float | None) -> str:
    """A level already in percent (a spread, a threshold): "0.38%", "73.1%"; "-" when missing."""
    return "-" if value is None else vocabulary.percent(float(value))


@register.filter
def change(value: float | None) -> str:
    """A signed change in percent: "+0.38%", "-3.0%"; "-" when missing."""
    return "-" if value is None else vocabulary.pct(float(value))


@register.filter
def share(value: float | None) -> str:
    """A 0-1 fraction (KV use, SLO attainment, scaling efficiency) in percent; "-" when missing."""
    return "-" if value is None else vocabulary.percent(float(value) * 100)
