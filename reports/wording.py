"""How the report writes what the judgement layer decided, in the report's language.

judgement.report_view returns every sentence as Words (judgement.report_phrases): a msgid and
its values. say() looks the msgid up with gettext and fills in the values, numbers through
Django's formats (grouped thousands, the language's dates), engine labels as the customer may
read them (reports.facts). Call these inside translation.override(language).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from typing import Any

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from judgement.report_phrases import Figure, Joined, Phrase, Words
from judgement.vocabulary import Sentence, pct_decimals
from reports import facts


def num(value: float | None, decimals: int = 0) -> str:
    """A figure in the active language: grouped thousands, fixed decimals, '-' when missing."""
    if value is None:
        return "-"
    return formats.number_format(round(value, decimals), decimals, use_l10n=True,
                                 force_grouping=True)


def percent(value: float | None) -> str:
    """A share or level in percent (KV use, efficiency, spread), with the run page's
    decimals (pct_decimals) in the active language's number format."""
    return "-" if value is None else f"{num(value, pct_decimals(value))}%"


def pct(value: float | None) -> str:
    """A signed change in percent."""
    if value is None:
        return "-"
    sign = "+" if round(value, pct_decimals(value)) > 0 else ""
    return f"{sign}{percent(value)}"


def ratio(value: float) -> str:
    return f"{num(value, 2)}x"


def day(value: date | datetime | None) -> str:
    return formats.date_format(value, "DATE_FORMAT") if value else "-"


def seconds(ms: float | None) -> str:
    return "-" if ms is None else _("%(value)s s") % {"value": num(ms / 1000, 1)}


def tokens_per_s(value: float | None) -> str:
    return _("%(value)s output tokens/s") % {"value": num(value)}


# How each Figure style is written.
_STYLES: dict[str, Callable[[Any], str]] = {
    "num": num,
    "num1": lambda value: num(value, 1),
    "num2": lambda value: num(value, 2),
    "seconds": seconds,
    "percent": percent,
    "change": pct,
    "ratio": lambda value: "-" if value is None else ratio(value),
    "tokens_per_s": tokens_per_s,
    "day": day,
    "engine": facts.public_engine_label,
    "point_key": facts.public_point_key,
}


def say(words: Words) -> str:
    """Words in the active language: a msgid translated and filled, figures formatted."""
    if isinstance(words, str):
        return words
    if isinstance(words, Figure):
        return _STYLES[words.style](words.value)
    if isinstance(words, Joined):
        return words.separator.join(say(part) for part in words.parts)
    if isinstance(words, Sentence):
        return words.translated(_)
    return _phrase(words)


def _phrase(phrase: Phrase) -> str:
    template = (ngettext(phrase.msgid, phrase.plural, phrase.count) if phrase.plural
                else _(phrase.msgid))
    if not phrase.values:
        return template
    return template % {name: say(value) for name, value in phrase.values.items()}


def say_or_none(words: Words | None) -> str | None:
    return None if words is None else say(words)
