"""The launch form's own fields and limits: presets, engine-setting axes, approved rows."""

from __future__ import annotations

from typing import Any

import pydantic
from django import forms
from django.core.exceptions import ValidationError

from benchmarks.launch import launch_rules
from benchmarks.models import Node, Runtime
from runner.engine.vllm_defaults import BatchDefaults, batch_defaults
from runner.schema.engine_config import EngineConfig, EngineSetting

MAX_REPEATS = 10
MAX_LEVELS = 20
# Engine configs one launch may start, after the combinations vLLM refuses are left out: each
# is an engine start (minutes on a GPU) before its first point.
MAX_CONFIGS = 20

# Workload presets. "case-study" is the engagement Headroom was built from: about 2,000 requests
# queued at once, 63-66 input tokens, 256 output tokens forced with ignore_eos, temperature 0,
# thinking off. "reference-1k-1k" matches the vendors' published 1,000 in / 1,000 out spec.
WORKLOAD_PRESETS: dict[str, dict[str, Any]] = {
    "case-study": {
        "prompt_source": "case_study",
        "input_tokens_min": 63,
        "input_tokens_max": 66,
        "output_tokens": 256,
        "request_count": 2000,
        "temperature": 0.0,
        "ignore_eos": True,
        "thinking": False,
        "endpoint": "chat",
        "stream": True,
        "load_shape": "burst",
        "dataset_path": "",
    },
    "reference-1k-1k": {
        "prompt_source": "random",
        "input_tokens_min": 1000,
        "input_tokens_max": 1000,
        "output_tokens": 1000,
        "request_count": 1000,
        "temperature": 0.0,
        "ignore_eos": True,
        "thinking": False,
        "endpoint": "completions",
        "stream": True,
        "load_shape": "burst",
        "dataset_path": "",
    },
}
WORKLOAD_FIELDS = tuple(WORKLOAD_PRESETS["case-study"])
# The file workloads' own options, each blank (or its default) for every other source.
FILE_WORKLOAD_FIELDS = ("trace_span_s", "trace_longer", "conversation_turns_max")
# What a launch stores on its Workload row: the preset's fields, the switches that apply to any
# preset, and the file workloads' options.
WORKLOAD_ROW_FIELDS = (*WORKLOAD_FIELDS, "keep_outputs", "lora_split", *FILE_WORKLOAD_FIELDS)
# Every engine setting is a grid axis on the form: one value is shared by every config, several
# make one config per combination (runner.grid).
ENGINE_SETTINGS = EngineConfig.settings()
# A bool axis: unset, one state, or both (two configs).
BOTH = "both"
BOOL_AXIS = {"": [], "true": [True], "false": [False], BOTH: [True, False]}
# The extra-flags line that stands for "no extra flags" among several variants.
NO_EXTRA_FLAGS = "(none)"


class ApprovedChoiceField(forms.ModelChoiceField):
    """A choice among the rows that may be launched; another row gets a message saying why not.

    Rows an import created name what ran elsewhere; they wait for someone allowed to approve
    them, since a launched checkpoint's weights and runtime's image run on a GPU node.
    """

    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except ValidationError:
            other = self._any_row(value)
            if other is None:
                raise
            raise ValidationError(self.refusal(other), code="not_launchable") from None

    def _any_row(self, value: Any) -> Any:
        if self.queryset is None:
            return None
        try:
            return self.queryset.model.objects.filter(pk=int(value)).first()
        except (TypeError, ValueError):
            return None

    def refusal(self, row: Any) -> str:
        return (
            f"{row} is not approved for launching yet: someone allowed to manage "
            f"{row._meta.verbose_name_plural} approves it first."
        )


class ApprovedCheckpointField(ApprovedChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(queryset=launch_rules.launchable_checkpoints(), **kwargs)


class LaunchableRuntimeField(ApprovedChoiceField):
    """A runtime the launch rules allow (launch_rules.launchable_runtimes)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(queryset=launch_rules.launchable_runtimes(), **kwargs)

    def refusal(self, row: Any) -> str:
        if row.engine not in Runtime.LAUNCHABLE:
            return (
                f"{row} cannot be launched: Headroom launches only vLLM runtimes (import the "
                "results of other engines instead)."
            )
        return super().refusal(row)


def engine_setting_field(setting: EngineSetting) -> forms.Field:
    """A form field for one EngineConfig field, an axis of the grid: its flag as label, its
    description as help. Values are parsed and checked in LaunchForm._clean_axes."""
    common: dict[str, Any] = {"label": setting.flag, "required": False}
    if setting.kind is bool:
        # Unset leaves the engine's own default, which is not "off".
        choices = [("", "engine default"), ("true", "on"), ("false", "off"),
                   (BOTH, "on and off (two configs)")]
        return forms.ChoiceField(choices=choices, help_text=setting.description, **common)
    if setting.default is not None:
        common["initial"] = str(setting.default)
    return forms.CharField(
        max_length=300,
        help_text=f"{setting.description}; several values, one config each",
        **common,
    )


def parse_axis(setting: EngineSetting, text: str) -> list[Any]:
    """'4, 16 64' -> [4, 16, 64] for an int setting; words for a str one. Each value is checked
    alone against the setting's own rule; ValidationError names the value."""
    items = text.replace(",", " ").split()
    if len(items) > MAX_CONFIGS:
        raise ValidationError(f"At most {MAX_CONFIGS} values.")
    values: list[Any] = []
    for item in items:
        try:
            value = setting.kind(item)
        except ValueError:
            kind = {int: "a whole number", float: "a number"}.get(setting.kind, "a value")
            raise ValidationError(f"{item!r} is not {kind}.") from None
        try:
            EngineConfig(**{setting.name: value})
        except pydantic.ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ValidationError(f"{item}: {message}.") from None
        values.append(value)
    if len(set(values)) != len(values):
        raise ValidationError("Each value once, please.")
    return values


def vllm_batch_defaults(node: Node) -> BatchDefaults | None:
    """What vLLM would pick on this node (one engine, tensor parallel 1), the starting point of
    a max_num_seqs grid; None when the node's worker reported no GPU memory."""
    return batch_defaults(cpu_engine=node.launch_style == Node.LaunchStyle.CPU,
                          gpu_memory_mib=node.gpu_memory_mib, gpu_name=node.gpu_name)


def batch_defaults_note(node: Node) -> str:
    defaults = vllm_batch_defaults(node)
    if defaults is None:
        return f"{node.queue}: GPU memory not reported; blank settings leave vLLM's choice."
    return (
        f"{node.queue}: vLLM's own defaults there are --max-num-seqs {defaults.max_num_seqs}, "
        f"--max-num-batched-tokens {defaults.max_num_batched_tokens}."
    )


class NodeChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, node: Node) -> str:
        status = "" if node.is_alive() else " - no worker heartbeat"
        return f"{node.queue}: {node.hardware_label()}{status}"


def parse_numbers(text: str, *, integers: bool, limit: int) -> list[float]:
    """'256, 512 1024' -> [256, 512, 1024]; ValidationError names the bad item."""
    items = text.replace(",", " ").split()
    if not items:
        raise ValidationError("Enter at least one value.")
    if len(items) > limit:
        raise ValidationError(f"At most {limit} values.")
    values: list[float] = []
    for item in items:
        try:
            value = int(item) if integers else float(item)
        except ValueError:
            kind = "a whole number" if integers else "a number"
            raise ValidationError(f"{item!r} is not {kind}.") from None
        if value <= 0:
            raise ValidationError(f"{item} must be greater than zero.")
        values.append(value)
    if len(set(values)) != len(values):
        raise ValidationError("Each value once, please.")
    return values
