"""Plan files in and out of the dashboard: a run's plan is the file `python -m runner sweep` runs.

Out: a stored plan (runner.schema.plan.SweepPlan, as the launch stored it) as the YAML file
runner.cli.commands.load_plan reads. In: a plan file uploaded on the launch page, read as the
CLI reads one and laid onto the launch form's fields for review, with a sentence for each part
of the file the form cannot express. Nothing here launches anything: the engineer submits the
form.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import pydantic
import yaml
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from benchmarks.launch import launch_rules, plans
from benchmarks.models import Endpoint, Workload
from dashboard.launch_fields import (
    BOOL_AXIS,
    ENGINE_SETTINGS,
    FILE_WORKLOAD_FIELDS,
    MAX_CONFIGS,
    MAX_LEVELS,
    NO_EXTRA_FLAGS,
    WORKLOAD_PRESETS,
)
from dashboard.search_fields import GRID
from runner import grid
from runner.cli.commands import CliError, validate_plan
from runner.engine.endpoint import normalize_base_url
from runner.plan_text import read_plan_data
from runner.schema.base import Schema
from runner.schema.engine_config import EngineConfig, EngineLaunch, EngineSetting
from runner.schema.plan import QualitySpec, SweepPlan, default_sample_interval, lora_split_text
from runner.schema.search_record import SearchSpec
from runner.workloads.prompts import dataset_names

# A plan is a few kilobytes even with twenty configs and twenty loads; a bigger file is not one.
PLAN_FILE_MAX_BYTES = 64 * 1024


def plan_yaml(stored: dict[str, Any]) -> str:
    """A stored plan as YAML, in the schema's field order; load_plan reads it back equal."""
    plan = SweepPlan.model_validate(stored)
    return yaml.safe_dump(plan.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def read_plan_text(text: str, file_name: str) -> SweepPlan:
    """A plan file's text as runner.cli.commands.load_plan reads a file (runner.plan_text: JSON
    or YAML, within bounds), then the schema's own validation. ValueError says what is wrong."""
    data = read_plan_data(text, file_name)
    try:
        return validate_plan(data, source=file_name)
    except CliError as exc:
        raise ValueError(str(exc)) from None


class PlanFileForm(forms.Form):
    """The launch page's plan upload. The view receives the file through
    dashboard.uploads.ResultFileUploadHandler with PLAN_FILE_MAX_BYTES as its limit, so a
    larger body is refused as it arrives; `refused` is that handler's reason."""

    plan_file = forms.FileField(
        label="Plan file",
        help_text=f"a plan for python -m runner sweep (YAML or JSON), at most "
        f"{filesizeformat(PLAN_FILE_MAX_BYTES)}: it fills the form below for review",
    )

    def __init__(self, *args: Any, refused: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refused = refused
        self.file_name = ""  # as the browser named it: shown, never used as a path
        if refused:
            self.fields["plan_file"].required = False  # its error is the refusal

    def clean_plan_file(self) -> SweepPlan:
        if self.refused:
            raise ValidationError(self.refused)
        upload = self.cleaned_data["plan_file"]
        self.file_name = upload.name or "plan.yaml"
        try:
            text = upload.read().decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError("A plan file is UTF-8 text (YAML or JSON).") from None
        try:
            return read_plan_text(text, self.file_name)
        except ValueError as exc:
            raise ValidationError(f"{exc}.") from None


# ---------------------------------------------------------------------------------------------
# A plan laid onto the launch form
# ---------------------------------------------------------------------------------------------


@dataclass
class PlanOnForm:
    """The launch form's initial values for a plan, and each part of it they do not carry."""

    initial: dict[str, Any] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

    def add(self, other: PlanOnForm) -> None:
        self.initial.update(other.initial)
        self.left_out.extend(other.left_out)


def plan_on_form(plan: SweepPlan) -> PlanOnForm:
    """Every form field the plan sets, then what the form would send back compared with the
    plan, part by part: whatever differs is named in left_out, so the review shows it."""
    result = PlanOnForm(initial={
        "name": plan.name,
        "repeats": plan.repeats,
        "replicas": plan.replicas,
        "redraw_disturbed": plan.stability.redraw_disturbed,
        "control_point": plan.stability.control_point,
        "end_control": "on" if plan.stability.end_control else "off",
        "converge_pct": plan.stability.converge_pct,
        "max_repeats": plan.stability.max_repeats,
        "goodput": " ".join(f"{name}:{_number(ms)}" for name, ms in plan.goodput.items()),
    })
    workload = _workload(plan)
    result.add(_workload_fields(plan, workload))
    result.add(_loads(plan, workload))
    result.add(_engine_configs(plan.engine_configs))
    result.add(_quality(plan.quality))
    result.add(_search(plan.search))
    endpoint = _registered_endpoint(plan)
    if endpoint is None:
        result.add(_checkpoint(plan))
        result.add(_runtime(plan.launch))
    else:  # the endpoint gives the checkpoint and runtime: nothing to look up
        result.add(_endpoint(plan, endpoint))
    result.left_out.extend(_not_on_the_form(plan, endpoint))
    return result


def _number(value: float) -> str:
    """500.0 -> '500', 2.5 -> '2.5': as a person types it, and parsed back to the same float."""
    return str(int(value)) if float(value).is_integer() else repr(value)


def _workload(plan: SweepPlan) -> Workload:
    """The Workload row the form would make for the plan (unsaved)."""
    spec, first = plan.workload, plan.loads[0]
    kwargs = spec.extra_body.get("chat_template_kwargs")
    thinking = isinstance(kwargs, dict) and kwargs.get("enable_thinking") is True
    return Workload(
        prompt_source=spec.kind,
        dataset_path=spec.dataset_path or "",
        input_tokens_min=spec.input_tokens_min,
        input_tokens_max=spec.input_tokens_max,
        output_tokens=spec.output_tokens,
        # A burst sends its level's count; the others send this many at every level.
        request_count=max(load.num_requests for load in plan.loads)
        if first.shape == "burst" else first.num_requests,
        temperature=spec.temperature,
        ignore_eos=spec.ignore_eos,
        thinking=thinking and spec.endpoint == "chat",
        endpoint=spec.endpoint,
        stream=spec.stream,
        load_shape=first.shape,
        keep_outputs=spec.keep_outputs,
        trace_span_s=spec.trace_span_s,
        trace_longer=spec.trace_longer,
        conversation_turns_max=spec.conversation_turns_max,
        lora_split=[share.model_dump(mode="json") for share in spec.lora_split],
    )


def _workload_fields(plan: SweepPlan, workload: Workload) -> PlanOnForm:
    values = {name: getattr(workload, name) for name in WORKLOAD_PRESETS["case-study"]}
    result = PlanOnForm(initial={"workload_preset": _preset_of(values), **values,
                                 "keep_outputs": workload.keep_outputs,
                                 "lora_split": lora_split_text(plan.workload.lora_split),
                                 **{name: getattr(workload, name)
                                    for name in FILE_WORKLOAD_FIELDS}})
    dataset = workload.dataset_path
    if dataset and dataset not in dataset_names(settings.HEADROOM_DATA_DIR):
        result.initial["dataset_path"] = ""
        result.left_out.append(f"workload.dataset_path {dataset}: not a file in the data "
                               "directory (HEADROOM_DATA_DIR); choose a dataset")
        return result
    sent = plans.workload_spec(workload).model_dump(mode="json")
    for name, value in plan.workload.model_dump(mode="json").items():
        if sent[name] != value:
            result.left_out.append(
                f"workload.{name} {json.dumps(value)}: the form sends {json.dumps(sent[name])}"
            )
    return result


def _preset_of(values: dict[str, Any]) -> str:
    """The preset these workload fields are, or custom. A burst's request count is its levels'."""
    for name, preset in WORKLOAD_PRESETS.items():
        if all(values[key] == value for key, value in preset.items()
               if not (key == "request_count" and values["load_shape"] == "burst")):
            return name
    return "custom"


def _loads(plan: SweepPlan, workload: Workload) -> PlanOnForm:
    """The load levels of the first load's shape, each once, as the form's list."""
    levels: list[float] = []
    for load in plan.loads:
        level = {"burst": load.num_requests, "concurrency": load.concurrency,
                 "rate": load.rate, "trace": load.speed}[load.shape]
        if load.shape == workload.load_shape and level is not None and level not in levels:
            levels.append(level)
    levels = levels[:MAX_LEVELS]
    result = PlanOnForm(initial={"load_levels": ", ".join(_number(v) for v in levels)})
    sent = {load.label() for load in plans.load_specs(workload, levels)}
    missing = [load.label() for load in plan.loads if load.label() not in sent]
    if missing:
        result.left_out.append(
            f"loads the form cannot send with these fields: {'; '.join(missing)} (one shape, "
            f"one request count, Poisson arrivals, no in-flight cap, at most {MAX_LEVELS})"
        )
    return result


def _engine_configs(configs: list[EngineConfig]) -> PlanOnForm:
    """The configs as the form's grid when they are exactly one (each setting's values crossed
    with the extra-flag lines), otherwise as its explicit list, one config per line."""
    # A setting given in some configs only makes a grid of other configs than the plan's; the
    # comparison below sends such a plan to the list.
    axes = {
        setting.name: _unique(
            getattr(c, setting.name) for c in configs if getattr(c, setting.name) is not None
        )
        for setting in ENGINE_SETTINGS
    }
    variants = _unique(config.extra_args for config in configs)
    try:
        expanded = grid.expand(axes, variants)
    except (grid.GridError, pydantic.ValidationError):
        return _config_list(configs)
    wanted = sorted(config.label() for config in configs)
    if sorted(config.label() for config in expanded.configs) != wanted:
        return _config_list(configs)
    initial: dict[str, Any] = {"engine_config_list": ""}
    for setting in ENGINE_SETTINGS:
        initial[setting.name] = _axis_initial(setting, axes[setting.name])
    lines = [shlex.join(v) if v else NO_EXTRA_FLAGS for v in variants]
    initial["extra_args"] = "" if variants == [[]] else "\n".join(lines)
    return PlanOnForm(initial=initial)


def _config_list(configs: list[EngineConfig]) -> PlanOnForm:
    shown = configs[:MAX_CONFIGS]
    initial: dict[str, Any] = {setting.name: "" for setting in ENGINE_SETTINGS}
    initial.update(
        extra_args="", engine_config_list="\n".join(grid.config_line(c) for c in shown)
    )
    result = PlanOnForm(initial=initial)
    if len(configs) > MAX_CONFIGS:
        result.left_out.append(
            f"engine configs past the first {MAX_CONFIGS}: "
            f"{'; '.join(c.label() for c in configs[MAX_CONFIGS:])} (at most {MAX_CONFIGS} "
            "per launch)"
        )
    return result


def _unique(values: Any) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def _axis_initial(setting: EngineSetting, values: list[Any]) -> str:
    """An axis as its form field shows it: '4, 16'; a bool axis by its choice."""
    if setting.kind is bool:
        return next(choice for choice, axis in BOOL_AXIS.items() if sorted(axis) == sorted(values))
    return ", ".join(_number(v) if isinstance(v, float) else str(v) for v in values)


def _checkpoint(plan: SweepPlan) -> PlanOnForm:
    """The approved checkpoint row the plan names (model, revision, precision, KV dtype)."""
    spec = plan.checkpoint
    rows = launch_rules.launchable_checkpoints().filter(
        repo=spec.model, revision=spec.revision or ""
    )
    if spec.precision:
        rows = rows.filter(precision=spec.precision)
    kv_dtypes = {config.kv_cache_dtype or "" for config in plan.engine_configs}
    found = list(rows[:2])
    if len(found) > 1 and len(kv_dtypes) == 1:
        # Rows that differ in their KV dtype only: the one the plan's configs ran with.
        found = list(rows.filter(kv_cache_dtype=next(iter(kv_dtypes)))[:2])
    named = f"{spec.model}{'@' + spec.revision if spec.revision else ''}"
    if len(found) != 1:
        why = "no approved checkpoint is" if not found else "several approved checkpoints are"
        return PlanOnForm(left_out=[f"checkpoint: {why} {named}; choose one (the catalog lists "
                                    "them, a fleet manager approves new ones)"])
    row = found[0]
    result = PlanOnForm(initial={"checkpoint": row.pk})
    sent = plans.checkpoint_spec(row).model_dump()
    for name, value in spec.model_dump().items():
        if sent[name] != value:
            result.left_out.append(f"checkpoint.{name} {json.dumps(value)}: the checkpoint "
                                   f"{row} gives {json.dumps(sent[name])}")
    if row.kv_cache_dtype and "" in kv_dtypes:
        result.left_out.append(f"engine configs without a KV-cache dtype run with the "
                               f"checkpoint's {row.kv_cache_dtype}")
    return result


def _runtime(launch: EngineLaunch) -> PlanOnForm:
    """The approved vLLM runtime whose image (and digest) the plan's launch names."""
    if launch.image is None:
        return PlanOnForm()
    rows = launch_rules.launchable_runtimes().exclude(image="")
    found = [r for r in rows if (f"{r.image}@{r.digest}" if r.digest else r.image) == launch.image]
    if len(found) != 1:
        return PlanOnForm(left_out=[f"launch.image {launch.image}: no single approved vLLM "
                                    "runtime has it; choose the runtime"])
    return PlanOnForm(initial={"runtime": found[0].pk})


def _registered_endpoint(plan: SweepPlan) -> Endpoint | None:
    """The registered endpoint an attach plan's base_url names (the one serving the plan's
    model name when several share the address); None for any other plan."""
    if plan.launch.style != "attach" or not plan.launch.base_url:
        return None
    try:
        address = normalize_base_url(plan.launch.base_url)
    except ValueError:
        return None
    rows = list(Endpoint.objects.filter(base_url=address))
    served = plan.checkpoint.served_model_name or plan.checkpoint.model
    named = [row for row in rows if row.served_model == served]
    if len(named) == 1:
        return named[0]
    return rows[0] if len(rows) == 1 else None


def _endpoint(plan: SweepPlan, endpoint: Endpoint) -> PlanOnForm:
    """The endpoint field, and what of the plan a run against the endpoint does otherwise."""
    result = PlanOnForm(initial={"registered_endpoint": endpoint.pk})
    sent = plans.endpoint_checkpoint_spec(endpoint)
    for name in ("model", "revision", "served_model_name"):
        if getattr(plan.checkpoint, name) != getattr(sent, name):
            result.left_out.append(
                f"checkpoint.{name} {json.dumps(getattr(plan.checkpoint, name))}: the endpoint "
                f"{endpoint.name} is registered with {json.dumps(getattr(sent, name))}"
            )
    if plan.engine_configs != [EngineConfig()]:
        result.left_out.append(f"engine configs: the endpoint {endpoint.name} runs its own "
                               "settings; a run against it has one blank config")
    if plan.replicas != 1:
        result.left_out.append(f"replicas {plan.replicas}: the endpoint {endpoint.name} is one "
                               "server")
    return result


def _quality(spec: QualitySpec | None) -> PlanOnForm:
    """The quality set as the form's choice of file; its answer limit has no field."""
    result = PlanOnForm(initial={"quality_path": ""})
    if spec is None:
        return result
    if spec.path not in dataset_names(settings.HEADROOM_DATA_DIR):
        result.left_out.append(f"quality.path {spec.path}: not a file in the data directory "
                               "(HEADROOM_DATA_DIR); choose a quality set")
        return result
    result.initial["quality_path"] = spec.path
    default = QualitySpec.model_fields["max_tokens"].default
    if spec.max_tokens != default:
        result.left_out.append(f"quality.max_tokens {spec.max_tokens}: not on the form; a launch "
                               f"uses the default {default}")
    return result


def _search(spec: SearchSpec | None) -> PlanOnForm:
    """The search fields; the knee rule's thresholds have none (a launch uses the defaults)."""
    if spec is None:
        return PlanOnForm(initial={"search": GRID})
    result = PlanOnForm(initial={
        "search": spec.objective,
        "search_tolerance_pct": spec.tolerance_pct,
        "search_point_budget": spec.point_budget,
        "search_time_budget_s": spec.time_budget_s,
        "search_limits": " ".join(f"{name}:{_number(ms)}" for name, ms in spec.limits.items()),
    })
    for name in ("method", "throughput_gain_pct", "latency_growth_pct"):
        default = SearchSpec.model_fields[name].default
        if getattr(spec, name) != default:
            result.left_out.append(f"search.{name}: not on the form; a launch uses the default "
                                   f"{_json(default)}")
    return result


def _not_on_the_form(plan: SweepPlan, endpoint: Endpoint | None = None) -> list[str]:
    """Parts of the plan the form has no field for, where they differ from the defaults a
    launch uses. The launch's style, image and GPUs come from the node and runtime chosen; an
    attach plan's address is a registered endpoint's, chosen on the form (endpoint)."""
    parts: list[tuple[Schema, str]] = [
        (plan, name) for name in ("client", "warmup_requests", "sample_interval_s")
    ]
    launch_parts: tuple[str, ...] = ("env", "startup_timeout_s", "cpu_kvcache_space_gib")
    if endpoint is None and plan.launch.style != "attach":
        launch_parts = ("base_url", *launch_parts)
    parts += [(plan.launch, name) for name in launch_parts]
    left_out = []
    for part, name in parts:
        default = type(part).model_fields[name].get_default(call_default_factory=True)
        if part is plan and name == "sample_interval_s":
            default = default_sample_interval(plan.launch.style)  # as a launch uses
        if getattr(part, name) != default:
            where = name if part is plan else f"launch.{name}"
            left_out.append(f"{where}: not on the form; a launch uses the default "
                            f"{_json(default)}")
    if plan.launch.style == "attach" and endpoint is None:
        left_out.append(f"launch.style attach to {plan.launch.base_url}: no registered endpoint "
                        "has this address (the catalog registers one); a launch without one "
                        "starts its own engines on the node")
    return left_out


def _json(value: Any) -> str:
    return json.dumps(value.model_dump(mode="json") if isinstance(value, Schema) else value)
