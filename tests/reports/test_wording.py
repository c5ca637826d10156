"""reports.wording.say: judgement's words written in the report's language, each msgid looked
up whole and its figures formatted as that language writes numbers."""

from __future__ import annotations

from django.utils import translation

from judgement.report_phrases import Figure, Phrase, change, joined, plural, seconds
from judgement.vocabulary import Sentence
from reports.wording import say

FELL = Phrase("Median request latency fell from %(before)s to %(after)s.",
              {"before": seconds(5000.0), "after": seconds(2500.0)})


def test_a_phrase_is_translated_whole_and_its_figures_formatted_in_each_language():
    with translation.override("en"):
        assert say(FELL) == "Median request latency fell from 5.0 s to 2.5 s."
    with translation.override("ko"):
        assert say(FELL) == "요청 지연 시간 중앙값이 5.0초에서 2.5초로 줄었습니다."


def test_a_plural_phrase_takes_the_form_its_count_picks():
    def layout(count: int) -> Phrase:
        return plural("%(count)s replica x tensor parallel %(tp)s",
                      "%(count)s replicas x tensor parallel %(tp)s", count,
                      count=str(count), tp="1")

    with translation.override("en"):
        assert [say(layout(1)), say(layout(2))] == ["1 replica x tensor parallel 1",
                                                    "2 replicas x tensor parallel 1"]
    with translation.override("ko"):
        assert say(layout(2)) == "복제본 2개 x 텐서 병렬 1"


def test_figures_read_as_the_run_page_writes_them_and_a_missing_one_as_a_dash():
    with translation.override("en"):
        assert say(Figure(41873.6)) == "41,874"
        assert say(change(109.37)) == "+109.4%"
        assert say(change(0.381)) == "+0.38%"
        assert say(Figure(2.0935, "ratio")) == "2.09x"
        assert say(Figure(None)) == "-" and say(seconds(None)) == "-"
        # An engine label as the customer may read it: no flag values.
        assert say(Figure("seqs=64,--chat-template=/srv/x.jinja", "engine")) == \
            "max_num_seqs 64, --chat-template (set)"


def test_joined_words_and_a_rules_sentence_are_written_in_place():
    sentence = Sentence("Median request latency stayed at %(before)s.", {"before": "3.0 s"})
    with translation.override("en"):
        assert say(joined([Phrase("Controlled."), sentence])) == \
            "Controlled. Median request latency stayed at 3.0 s."
