"""The customer report states what the tuning is worth, as the comparison page does, in English
and in Korean, with every cost sentence held to a Korean translation."""

from __future__ import annotations

import datetime
import gettext as gettext_module
import html
import re
from decimal import Decimal

import pytest
from django.conf import settings
from django.test import Client
from django.utils import timezone

from analysis import cost
from benchmarks.models import Node
from tests.reports.conftest import make_sweep
from tests.reports.helpers import make_report

pytestmark = pytest.mark.django_db


def _catalog() -> dict:
    """Our ko catalog alone (Django's own would hide a string we forgot)."""
    found = gettext_module.translation("django", localedir=str(settings.LOCALE_PATHS[0]),
                                       languages=["ko"])
    return found._catalog  # type: ignore[attr-defined]


def _worth_section(report) -> str:
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    match = re.search(r'<section id="worth">.*?</section>', body, re.DOTALL)
    assert match, "the report has no worth section"
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match.group(0))))


def test_every_cost_template_has_a_korean_translation_with_the_same_placeholders():
    catalog = _catalog()
    assert [t for t in cost.COST_TEMPLATES if t not in catalog] == []
    for template in cost.COST_TEMPLATES:
        assert sorted(re.findall(r"%\((\w+)\)s", catalog[template])) == \
            sorted(re.findall(r"%\((\w+)\)s", template)), template
    assert "What the tuning is worth" in catalog


@pytest.fixture
def priced_gpu_sweep(owner):
    """The report conftest's sweep on one H200 per point, its 8-GPU node priced at 2.50 USD
    per GPU-hour ten days before today (recent: no age note)."""
    benchmark = make_sweep(owner, "serve")
    as_of = timezone.localdate() - datetime.timedelta(days=10)
    Node.objects.filter(pk=benchmark.node.pk).update(
        gpu_hour_price=Decimal("2.50"), price_currency="USD", price_as_of=as_of)
    return benchmark, as_of


def test_the_report_states_the_worth_with_the_prices_date(priced_gpu_sweep, owner):
    benchmark, as_of = priced_gpu_sweep
    report = make_report(benchmark, owner)
    # Before: seqs=8 at 18,012.4 tok/s; after: seqs=64, whose two repeats (41,873.6 and
    # 41,600) make a capacity of 41,600. At 2.50 USD per GPU-hour on one GPU each:
    #   2.5 / (18,012.4 x 3600) x 1e6 = 0.038554 -> 0.0386 USD
    #   2.5 / (41,600 x 3600) x 1e6 = 0.016693 -> 0.0167 USD
    #   8 x (41,600 / 18,012.4 - 1) = 10.476 -> 10.5 GPUs
    section = _worth_section(report)
    assert ("The tuned setting serves this queue at 0.0167 USD per million output tokens "
            "instead of 0.0386 USD; on this 8-GPU node that is the capacity of 10.5 additional "
            "GPUs.") in section
    assert f"GPU-hour price: 2.50 USD, as of {as_of.isoformat()}." in section
    assert "(1 for the baseline, 2 for the candidate)" in section


def test_the_korean_report_says_the_same_worth_in_korean(priced_gpu_sweep, owner):
    benchmark, as_of = priced_gpu_sweep
    section = _worth_section(make_report(benchmark, owner, language="ko"))
    assert ("조정한 설정은 이 대기열을 출력 토큰 백만 개당 0.0386 USD 대신 0.0167 USD에 "
            "처리합니다. 이 8-GPU 노드에서는 GPU 10.5개를 더한 것과 같은 처리 용량입니다.") in section
    assert f"GPU 시간당 가격: 2.50 USD ({as_of.isoformat()} 기준)." in section
    assert "The tuned setting" not in section


def test_a_cpu_report_says_there_is_no_cost_or_gpu_figure(sweep, owner):
    section = _worth_section(make_report(sweep, owner))
    assert section.strip().endswith(cost.NO_FIGURE_CPU)


def test_a_report_of_the_curve_alone_has_no_worth_section(priced_gpu_sweep, owner):
    benchmark, _as_of = priced_gpu_sweep
    report = make_report(benchmark, owner, items=["curves"], scaling_point=None,
                         scaling_reference=None)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert 'id="worth"' not in body
