"""Every sentence a Korean report looks up has a Korean translation in our own catalog."""

from __future__ import annotations

import gettext as gettext_module
import importlib
import re

import pytest
from django.conf import settings
from django.test import Client
from django.urls import get_resolver
from django.utils import translation
from django.utils.translation import trans_real

from benchmarks.models import ExternalReference
from judgement import report_method, report_phrases, report_references, report_sweep, report_view
from tests.judgement.helpers import make_capacity_plan
from tests.reports.helpers import drafting_lora_sides, make_report
from tests.rows import make_benchmark

pytestmark = pytest.mark.django_db


def _catalog() -> dict:
    """Our ko catalog alone: Django's own would hide a string we forgot behind one of its own."""
    found = gettext_module.translation("django", localedir=str(settings.LOCALE_PATHS[0]),
                                       languages=["ko"])
    return found._catalog  # type: ignore[attr-defined]


def _fragments(looked_up: list[str]) -> list[str]:
    """Msgids that begin with a separator: a clause glued onto a sentence translated apart
    from it (", %(gib)s GiB each"), which fixes English's word order for every language."""
    return sorted({m for m in looked_up if m[:1] in (" ", ",", ";", ".")})


@pytest.fixture
def looked_up(monkeypatch) -> list[str]:
    """Each msgid the page asks for (gettext, gettext_lazy, ngettext, the template tags)."""
    asked: list[str] = []

    def recording_gettext(message: str) -> str:
        asked.append(message)
        return trans_real.gettext(message)

    def recording_ngettext(singular: str, plural: str, number: int) -> str:
        asked.append(singular)
        return trans_real.ngettext(singular, plural, number)

    # Load every view first: a form's help text formatted at import time is not the page's.
    get_resolver().url_patterns  # noqa: B018
    monkeypatch.setattr(translation._trans, "gettext", recording_gettext)
    monkeypatch.setattr(translation._trans, "ngettext", recording_ngettext)
    return asked


def test_a_korean_report_with_every_item_has_no_untranslated_sentence(sweep, owner, looked_up):
    same_spec = ExternalReference.objects.create(
        source="Vendor", url="https://vendor.example/a", value=20000.0,
        recorded_on="2025-03-01", no_longer_listed_on="2025-06-01", gpu_name="NVIDIA H200",
        workload_spec="63-66 in / 256 out")
    other_spec = ExternalReference.objects.create(
        source="Vendor 1k", url="https://vendor.example/b", value=9000.0,
        recorded_on="2025-03-01", gpu_name="NVIDIA H200", workload_spec="1000 in / 1000 out")
    plan = make_capacity_plan(sweep, owner, rate=40.0, slos={"median_e2el_ms": 4000.0})
    report = make_report(sweep, owner, language="ko", references=[same_spec, other_spec],
                         capacity_plan=plan)
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert "귀사 설비에 주는 의미" in body and "이 트래픽에" in body
    assert looked_up, "the recorder saw no lookup: the test would pass on anything"
    assert _fragments(looked_up) == []
    catalog = _catalog()
    missing = sorted({m for m in looked_up if m not in catalog and (m, 0) not in catalog})
    assert missing == []


def test_a_korean_report_of_drafting_lora_engines_has_no_untranslated_sentence(
    owner, looked_up
):
    benchmark = make_benchmark(state="succeeded", created_by=owner)
    report = make_report(benchmark, owner, language="ko", **drafting_lora_sides(benchmark))
    body = Client().get(f"/r/{report.issued_token}/").content.decode()
    assert "추측 디코딩" in body and "LoRA 어댑터" in body
    assert _fragments(looked_up) == []
    catalog = _catalog()
    missing = sorted({m for m in looked_up if m not in catalog and (m, 0) not in catalog})
    assert missing == []


@pytest.mark.parametrize(("module", "templates"), [
    ("analysis.sentences", "OPERATING_POINT_TEMPLATES"), ("analysis.causes", "STORY_TEMPLATES"),
    ("analysis.sentences", "NOISE_TEMPLATES"),
    ("analysis.capacity_words", "CAPACITY_TEMPLATES"),
    ("judgement.request_timeline", "TIMELINE_TEMPLATES")])
def test_every_template_the_run_page_writes_has_a_korean_translation(module, templates):
    catalog = _catalog()
    written = getattr(importlib.import_module(module), templates)
    missing = [t for t in written if t not in catalog]
    assert missing == []
    for template in written:
        # The same placeholders, so the values fill the Korean as they fill the English.
        assert sorted(re.findall(r"%\((\w+)\)s", catalog[template])) == \
            sorted(re.findall(r"%\((\w+)\)s", template)), template


# The report's sentences that were clauses glued together, each now one msgid (named
# placeholders), so a translation may order its parts as its language does.
WHOLE_SENTENCES = (
    *report_phrases.SIDE_TITLES.values(), *report_phrases.LATENCY_SENTENCES.values(),
    *report_method.GPU_LINES.values(),
    *(label.msgid for label in report_view.CPU_SIDE_LABELS.values()),
    report_view.SCALING, report_view.SCALING_CPU, report_sweep.SELECTED,
    report_sweep.SELECTED_CPU, report_references.REFERENCE_LATENCY,
    report_references.REFERENCE_LATENCY_CHANGE,
    "%(hardware)s; the host has %(count)s GPUs", "CPU only (%(cpu)s), %(layout)s",
    "CPU only, %(layout)s", "%(engine)s %(version)s, image %(image)s",
    "%(setting)s on", "%(setting)s off",
)


@pytest.mark.parametrize("msgid", WHOLE_SENTENCES)
def test_every_whole_sentence_has_a_korean_translation_with_its_placeholders(msgid):
    catalog = _catalog()
    assert msgid in catalog
    assert sorted(re.findall(r"%\((\w+)\)s", catalog[msgid])) == \
        sorted(re.findall(r"%\((\w+)\)s", msgid))


def test_the_hardware_layout_is_one_plural_sentence_in_korean():
    catalog = _catalog()
    assert catalog[("%(count)s replica x tensor parallel %(tp)s", 0)] == \
        "복제본 %(count)s개 x 텐서 병렬 %(tp)s"


def test_a_knee_step_that_lost_throughput_reads_as_a_loss_in_korean():
    from analysis import sentences
    from analysis.types import KneeEvidence, KneeFound

    found = KneeFound(from_key="a", to_key="b", to_load="burst 128", throughput_before=100,
                      throughput_after=90.87, median_e2el_before_ms=100,
                      median_e2el_after_ms=149, throughput_gain_pct=-9.13,
                      latency_growth_pct=49.0)
    evidence = KneeEvidence(found=found, chosen_throughput=None, steps=(), excluded_invalid=())
    sentence = sentences.operating_point_sentence("knee", {}, evidence, "")
    with translation.override("ko"):
        korean = sentence.translated(translation.gettext)
    assert korean == ("운영 지점은 무릎(knee) 직전의 마지막 부하 수준입니다. burst 128(으)로 더 "
                      "올리면 출력 토큰/초는 9.1% 줄었고 지연 시간 중앙값은 +49.0% 늘었습니다.")
