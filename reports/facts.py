"""An engine config's label and a point's key as the customer may read them.

A label's extra flags are shown by name only: a flag's value can be a local path or a
repository id. The provenance facts a report may print are judgement.public_provenance's.
"""

from __future__ import annotations

import re

from django.utils.translation import gettext as _

from runner.schema.engine_config import EngineConfig

# One engine flag token as runner.schema.flags.check_extra_args admits it: --name or --name=VALUE.
_FLAG = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9_-]*)(=.*)?")
# Where an engine label's extra flags begin: EngineConfig.label() writes its named settings
# ("seqs=64", never starting with "--") first, then the extra args joined by spaces.
_EXTRA_FLAGS = re.compile(r"(?:^|,)(?=--)")


# The label's short name of each engine setting (EngineConfig's "short": "seqs", "len") and the
# setting's own name, as vLLM's documentation and flags spell it (max_num_seqs, max_model_len).
SETTING_NAMES = {
    field.json_schema_extra["short"]: name
    for name, field in EngineConfig.model_fields.items()
    if isinstance(field.json_schema_extra, dict) and "short" in field.json_schema_extra
}
# EngineConfig.label() of a config that sets nothing.
DEFAULTS_LABEL = "defaults"


def public_engine_key(label: str) -> str:
    """An engine config's label as the customer may see its identity, settings as the label
    has them ("seqs=64"), extra flags by name only, "(set)" where a value was given, since a
    value can be a local path or a repository id ("--chat-template=/srv/x.jinja" ->
    "--chat-template (set)"): what a page's data attribute compares with the run page's
    label. Read by people, a label goes through public_engine_label.

    What is not a flag after the first one is a value and is left out, so a value written in
    any shape (with spaces, commas, quotes) cannot come through.
    """
    named, flags = _public_parts(label)
    return ",".join(part for part in (named, flags) if part)


def public_engine_label(label: str) -> str:
    """public_engine_key in words, for a customer to read: each named setting by vLLM's own
    name ("seqs=4,len=1024" -> "max_num_seqs 4, max_model_len 1024"), a switch on or off.
    Call it inside translation.override(language)."""
    named, flags = _public_parts(label)
    return ", ".join(part for part in (_settings_in_words(named) if named else "", flags)
                     if part)


def _public_parts(label: str) -> tuple[str, str]:
    """The label's named settings as they are, and its extra flags by name only."""
    found = _EXTRA_FLAGS.search(label)
    if found is None:
        return label, ""
    shown: list[str] = []
    for token in label[found.end():].split(" "):
        flag = _FLAG.fullmatch(token)
        if flag is not None:
            shown.append(flag[1] + (" (set)" if flag[2] else ""))
        elif shown and not shown[-1].endswith(" (set)"):
            shown[-1] += " (set)"  # the value of the flag before it
    return label[:found.start()], " ".join(shown)


def _settings_in_words(named: str) -> str:
    """"seqs=4,prefix=True" -> "max_num_seqs 4, enable_prefix_caching on"; a part that is no
    setting of the label's (a chart's ", 2 replicas") is kept as it is."""
    if named == DEFAULTS_LABEL:
        return _("engine defaults")
    words = []
    for part in (piece.strip() for piece in named.split(",")):
        short, equals, value = part.partition("=")
        if not equals or short not in SETTING_NAMES:
            words.append(part)
            continue
        setting = SETTING_NAMES[short]
        # A switch is one whole phrase per state, so a language may put its word first.
        if value == "True":
            words.append(_("%(setting)s on") % {"setting": setting})
        elif value == "False":
            words.append(_("%(setting)s off") % {"setting": setting})
        else:
            words.append(f"{setting} {value}")
    return ", ".join(word for word in words if word)


def public_point_key(key: str) -> str:
    """A point key ("<engine label>|<load>|r<repeat>", runner.schema.result.point_key) with its
    engine label as public_engine_label shows it."""
    label, separator, rest = key.partition("|")
    return public_engine_label(label) + separator + rest
