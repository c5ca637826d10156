"""The report's headline: what the two sides held fixed, each with the value a customer may
read."""

from __future__ import annotations

import pytest

from reports import publishing
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def test_held_fixed_lists_only_factors_with_a_value_to_show(sweep, owner):
    # Every point of the sweep ran on one host, whose name the public page hides: a bare
    # "host" would read as a value gone missing, so it is not listed.
    report = make_report(sweep, owner, language="en")
    headline = publishing.content_of(report.versions.get(), "en").headline
    labels = [label for label, _value in headline.held_fixed]
    assert "runtime version" in labels and "host" not in labels
    assert all(value for _label, value in headline.held_fixed), headline.held_fixed
