"""Engine-config grids: axes of settings crossed into configs, and the configs vLLM would refuse.

A grid is one list of values per EngineConfig setting (an axis; one value is a setting every
config shares) and a list of extra-flag variants. Its configs are the cross product, in axis
order, the last axis varying fastest. vLLM checks some combinations only when an engine starts
(vllm/config/scheduler.py, SchedulerConfig.verify_max_model_len in vLLM 0.32), a minute or more
into each start on a GPU; `refusal` applies those checks before launch, so such a config is left
out with a sentence saying which rule, and the others run.
"""

from __future__ import annotations

import itertools
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pydantic

from runner.schema.engine_config import EngineConfig
from runner.schema.flags import engine_flag_name

# More combinations than this are not enumerated at all: a grid is meant to be read.
MAX_COMBINATIONS = 10_000


@dataclass(frozen=True)
class PrunedConfig:
    label: str
    reason: str

    def sentence(self) -> str:
        return f"{self.label}: not run, {self.reason}"


@dataclass(frozen=True)
class Grid:
    configs: list[EngineConfig]
    pruned: list[PrunedConfig]
    combinations: int  # the cross product's size, before pruning

    def notes(self) -> list[str]:
        return [p.sentence() for p in self.pruned]


class GridError(ValueError):
    """The grid cannot be expanded (too many combinations, or none vLLM would start)."""


def combinations(
    axes: Mapping[str, Sequence[Any]], extra_variants: Sequence[Sequence[str]]
) -> int:
    sizes = [max(len(values), 1) for values in axes.values()] + [max(len(extra_variants), 1)]
    return math.prod(sizes)


def expand(
    axes: Mapping[str, Sequence[Any]],
    extra_variants: Sequence[Sequence[str]] = ((),),
    *,
    default_max_num_seqs: int | None = None,
) -> Grid:
    """Every combination of the axes' values and the extra-flag variants, minus those vLLM
    refuses (PrunedConfig). An axis with no values is left unset (vLLM's default).

    default_max_num_seqs: what vLLM picks when max_num_seqs is not given, on the node the
    plan runs on (None: not known, and that case is not checked).
    Raises GridError past MAX_COMBINATIONS or when every combination is refused, and
    pydantic.ValidationError for a value EngineConfig refuses on its own.
    """
    variants = [list(v) for v in extra_variants] or [[]]
    total = combinations(axes, variants)
    if total > MAX_COMBINATIONS:
        raise GridError(f"{total:,} combinations: more than {MAX_COMBINATIONS:,} is not a grid")
    names = [name for name, values in axes.items() if values]
    configs: list[EngineConfig] = []
    pruned: list[PrunedConfig] = []
    for values in itertools.product(*(axes[name] for name in names), variants):
        settings = dict(zip(names, values[:-1], strict=True))
        extra = list(values[-1])
        try:
            config = EngineConfig(**settings, extra_args=extra)
        except pydantic.ValidationError as exc:
            if not _is_combination_error(exc):
                raise
            # Named as label() names a config: construct skips the check that refused it.
            unchecked = EngineConfig.model_construct(**settings, extra_args=extra)
            pruned.append(PrunedConfig(unchecked.label(), _first_message(exc)))
            continue
        reason = refusal(config, default_max_num_seqs=default_max_num_seqs)
        if reason:
            pruned.append(PrunedConfig(config.label(), reason))
        else:
            configs.append(config)
    if not configs:
        raise GridError(
            "vLLM would refuse every combination: " + "; ".join(p.sentence() for p in pruned)
        )
    return Grid(configs=configs, pruned=pruned, combinations=total)


def refusal(config: EngineConfig, *, default_max_num_seqs: int | None = None) -> str | None:
    """Why vLLM 0.32 would refuse to start with this config, or None.

    These are SchedulerConfig.verify_max_model_len's checks that can be made from the config
    alone (max_model_len unset means the model's own, not known here, so those checks need it
    set). max_num_batched_tokens >= max_num_seqs when both are set is EngineConfig's own rule.
    """
    seqs, tokens, length = (
        config.max_num_seqs, config.max_num_batched_tokens, config.max_model_len
    )
    default_seqs = default_max_num_seqs if seqs is None else None  # what vLLM will run
    if tokens is not None and default_seqs is not None and tokens < default_seqs:
        return (
            f"max_num_batched_tokens {tokens} is below the {default_seqs} "
            "sequences vLLM runs by default on this node, and vLLM refuses a token budget "
            "smaller than max_num_seqs; set max_num_seqs too"
        )
    flags = _flag_values(config.extra_args)
    chunked_off = "--no-enable-chunked-prefill" in flags
    if tokens is not None and length is not None and chunked_off and tokens < length:
        return (
            f"max_num_batched_tokens {tokens} is below max_model_len {length} with chunked "
            "prefill off, which vLLM refuses (a prompt could never be scheduled whole)"
        )
    threshold = flags.get("--long-prefill-token-threshold")
    if threshold is not None and length is not None and _int(threshold) > length:
        return (
            f"--long-prefill-token-threshold {threshold} is above max_model_len {length}, "
            "which vLLM refuses"
        )
    return None


def parse_config_line(line: str) -> EngineConfig:
    """One config written as vLLM flags: '--max-num-seqs 4 --max-num-batched-tokens 256
    --enforce-eager'. Named settings go to their fields, anything else to extra_args (checked
    against the allow-list there). ValueError names the problem."""
    try:
        tokens = shlex.split(line)
    except ValueError as exc:
        raise ValueError(f"cannot split {line!r}: {exc}") from None
    by_flag = {setting.flag: setting for setting in EngineConfig.settings()}
    settings: dict[str, Any] = {}
    extra: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        name = engine_flag_name(token) if token.startswith("--") else ""
        setting = by_flag.get(name)
        negated = by_flag.get("--" + name[len("--no-"):]) if name.startswith("--no-") else None
        if negated is not None and negated.kind is bool:
            settings[negated.name] = False
        elif setting is not None and setting.kind is bool and "=" not in token:
            settings[setting.name] = True
        elif setting is not None:
            value, i = _flag_value(tokens, i)
            if value is None:
                raise ValueError(f"{setting.flag} needs a value")
            settings[setting.name] = value
        else:
            extra.append(token)
        i += 1
    try:
        return EngineConfig(**settings, extra_args=extra)
    except pydantic.ValidationError as exc:
        raise ValueError(_first_message(exc)) from None


def config_line(config: EngineConfig) -> str:
    """A config as parse_config_line reads it back equal: its set settings as flags, then its
    extra flags."""
    parts: list[str] = []
    for setting in EngineConfig.settings():
        value = getattr(config, setting.name)
        if value is None or value == setting.default:
            continue
        if setting.kind is bool:
            parts.append(setting.flag if value else f"--no-{setting.flag[2:]}")
        else:
            parts += [setting.flag, str(value)]
    return shlex.join([*parts, *config.extra_args])


def _flag_value(tokens: list[str], i: int) -> tuple[str | None, int]:
    token = tokens[i]
    if "=" in token:
        return token.split("=", 1)[1], i
    if i + 1 < len(tokens) and not tokens[i + 1].startswith("-"):
        return tokens[i + 1], i + 1
    return None, i


def _flag_values(args: list[str]) -> dict[str, str | None]:
    """'--x 5 --y --z=3' -> {'--x': '5', '--y': None, '--z': '3'} (extra_args is checked)."""
    values: dict[str, str | None] = {}
    last = ""
    for token in args:
        if token.startswith("--"):
            last = engine_flag_name(token)
            values[last] = token.split("=", 1)[1] if "=" in token else None
        elif last and values.get(last) is None:
            values[last] = token
    return values


def _int(text: str | None) -> int:
    try:
        return int(text or "")
    except ValueError:
        return 0  # vLLM's parser refuses it at start; the threshold check has nothing to say


def _is_combination_error(exc: pydantic.ValidationError) -> bool:
    """Whether EngineConfig refused how values combine (its model validator), not one value."""
    return all(not error["loc"] for error in exc.errors())


def _first_message(exc: pydantic.ValidationError) -> str:
    error = exc.errors()[0]
    message = error["msg"].removeprefix("Value error, ")
    where = ".".join(str(part) for part in error["loc"])
    return f"{where}: {message}" if where else message
