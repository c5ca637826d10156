"""How chart data reaches a page: json_script, with every string escaped for Plotly."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.html import json_script
from django.utils.safestring import SafeString

from judgement import charts

register = template.Library()


@register.filter
def chart_data(value: Any, element_id: str) -> SafeString:
    """json_script for data a Plotly chart draws. Plotly renders <a href>, <b> and <br> in
    names, hover text and labels, so each string goes in escaped (charts.plotly_data), here
    only: the figures in Python, and a published report's stored ones, hold the text as typed."""
    return json_script(charts.plotly_data(value), element_id)
