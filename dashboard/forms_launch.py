"""The launch form (/runs/new/), with an error on the field that is wrong."""

from __future__ import annotations

import shlex
from typing import Any

import pydantic
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from benchmarks.launch import estimates, launch_rules, plans
from benchmarks.launch.plans import LaunchRequest
from benchmarks.models import Benchmark, Endpoint, Node, Workload
from dashboard.form_fields import declared_field
from dashboard.launch_fields import (
    BOOL_AXIS,
    ENGINE_SETTINGS,
    MAX_CONFIGS,
    MAX_LEVELS,
    MAX_REPEATS,
    NO_EXTRA_FLAGS,
    WORKLOAD_FIELDS,
    WORKLOAD_PRESETS,
    WORKLOAD_ROW_FIELDS,
    ApprovedCheckpointField,
    LaunchableRuntimeField,
    NodeChoiceField,
    batch_defaults_note,
    engine_setting_field,
    parse_axis,
    parse_numbers,
    vllm_batch_defaults,
)
from dashboard.search_fields import SearchFields
from runner import grid
from runner.measure import quality
from runner.schema.engine_config import EngineConfig
from runner.schema.flags import parse_goodput
from runner.schema.plan import (
    MAX_CONVERGE_REPEATS,
    MAX_REDRAWS,
    QualitySpec,
    StabilitySpec,
    SweepPlan,
    parse_lora_split,
    unserved_adapters,
)
from runner.schema.result import DISTURBED_CORES
from runner.workloads.prompts import DatasetError, dataset_file, dataset_names


class LaunchForm(SearchFields):
    name = forms.CharField(max_length=200, required=False, help_text="optional; a label for lists")
    node = NodeChoiceField(
        queryset=Node.objects.all(),
        help_text="runs on this node's worker",
        error_messages={"invalid_choice": "Unknown node: it is not registered (any more)."},
        required=False,  # given by a registered endpoint, else required (clean)
    )
    checkpoint = ApprovedCheckpointField(required=False)
    runtime = LaunchableRuntimeField(required=False)
    # A server that is already running (the catalog's endpoints): attach to it instead of
    # starting engines; node, checkpoint and runtime are then the endpoint's.
    registered_endpoint = forms.ModelChoiceField(
        queryset=Endpoint.objects.select_related("node", "checkpoint", "runtime"),
        required=False,
        label="Or: a registered endpoint",
        empty_label="none: start engines on the node",
        help_text="measure a server that is already running; its node, checkpoint and runtime "
        "are used, engine settings stay blank (the server's are recorded as it reports them)",
        error_messages={"invalid_choice": "Unknown endpoint: it is not registered (any more)."},
    )

    workload_preset = forms.ChoiceField(
        choices=[("case-study", "Case study: ~2,000 x (63-66 in / 256 out), burst")]
        + [("reference-1k-1k", "Reference spec: 1,000 in / 1,000 out")]
        + [("custom", "Custom (fields below)")],
        initial="case-study",
    )
    prompt_source = forms.ChoiceField(choices=Workload.PromptSource.choices, required=False)
    # Choices: the files in HEADROOM_DATA_DIR, listed in __init__ (the node has the same folder).
    dataset_path = forms.ChoiceField(
        label="Dataset", required=False,
        help_text="a file in the data directory (HEADROOM_DATA_DIR): a JSONL dataset, a trace "
        "(Mooncake JSONL, BurstGPT CSV, or timestamp_s,input_tokens,output_tokens CSV), a "
        "request-length log (input and output token counts, CSV or JSONL) or conversations "
        "(ShareGPT or OpenAI messages JSONL, several turns a line)",
        error_messages={"invalid_choice": "%(value)s is not a file in the data directory."},
    )
    # A small evaluation file scored beside every point (runner.measure.quality), of any workload;
    # choices as for dataset_path.
    quality_path = forms.ChoiceField(
        label="Quality set", required=False,
        help_text="optional: a JSONL file in the data directory of at most 200 items {prompt, "
        "expected, rule: exact | contains}, each sent alone at temperature 0 after every point "
        "and scored",
        error_messages={"invalid_choice": "%(value)s is not a file in the data directory."},
    )
    input_tokens_min = forms.IntegerField(min_value=1, required=False)
    input_tokens_max = forms.IntegerField(min_value=1, required=False)
    output_tokens = forms.IntegerField(min_value=1, required=False)
    request_count = forms.IntegerField(min_value=1, max_value=1_000_000, required=False)
    temperature = forms.FloatField(min_value=0, required=False)
    ignore_eos = forms.BooleanField(required=False, initial=True)
    thinking = forms.BooleanField(required=False)
    endpoint = forms.ChoiceField(choices=Workload.Endpoint.choices, required=False)
    stream = forms.BooleanField(required=False, initial=True)
    load_shape = forms.ChoiceField(choices=Workload.LoadShape.choices, required=False)
    trace_span_s = forms.FloatField(
        label="Trace span, seconds", min_value=0.001, required=False,
        help_text="traces only: replay only the trace's first this many seconds of trace time "
        "(before any speed factor); blank: all of it",
    )  # fmt: skip
    trace_longer = forms.ChoiceField(
        label="A trace longer than a load", choices=Workload.TraceLonger.choices,
        initial=Workload.TraceLonger.TRUNCATE, required=False,
        help_text="traces only: a load level of fewer requests than the trace (or its span) "
        "holds",
    )  # fmt: skip
    conversation_turns_max = forms.IntegerField(
        label="Turns per conversation, at most", min_value=1, max_value=10_000, required=False,
        help_text="conversations only: replay each conversation's first N user turns; blank: "
        "all of them",
    )  # fmt: skip
    # Applies to a preset as much as to a custom workload: a tuning is checked on the prompts it
    # was tuned for.
    keep_outputs = forms.BooleanField(
        label="Keep outputs for parity", required=False,
        help_text="ask for every response's token ids and keep them, so a comparison can say "
        "whether the tuning changed any output (temperature 0 only; responses get a little "
        "larger)",
    )

    lora_split = forms.CharField(
        label="LoRA traffic split", required=False,
        help_text="spread the requests over LoRA adapters by weight, NAME:WEIGHT each, e.g. "
        "sql-lora:3 chat-lora:1; every engine config must serve them (--enable-lora "
        "--lora-modules NAME=PATH in the extra engine flags)",
    )  # fmt: skip

    # Every EngineConfig field gets its axis field in __init__ (ENGINE_SETTINGS); these two
    # complete the grid, or replace it with an explicit list.
    extra_args = forms.CharField(
        label="Extra engine flags",
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text=f"e.g. --enforce-eager; several lines are an axis, one config per line "
        f"({NO_EXTRA_FLAGS} for a line without flags)",
    )
    engine_config_list = forms.CharField(
        label="Or: engine configs, one per line",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="as vLLM flags, e.g. --max-num-seqs 256 --max-num-batched-tokens 8192; "
        "instead of the grid above",
    )

    load_levels = forms.CharField(
        help_text="burst: request counts; concurrency: in-flight limits; rate: requests/s; "
        "trace: speed factors (1 = the trace's own times, 2 = twice as fast)"
    )
    repeats = forms.IntegerField(min_value=1, max_value=MAX_REPEATS, initial=1)
    replicas = forms.IntegerField(min_value=1, max_value=64, initial=1)
    redraw_disturbed = forms.IntegerField(
        label="Redraw disturbed points", min_value=0, max_value=MAX_REDRAWS, initial=1,
        required=False,
        help_text="extra draws of a point while other processes on the host take more than "
        f"{DISTURBED_CORES:g} of a core (0: none); the least disturbed draw is kept")
    control_point = forms.BooleanField(
        label="Control point", required=False, initial=True,
        help_text="measure each engine config's first load level again after its last, on the "
        "same engine: how far the host drifted (one point more per config)")
    end_control = forms.TypedChoiceField(
        label="End control", required=False, empty_value=None, coerce=lambda value: value == "on",
        choices=[("", "by engine: on for a CPU engine, off on GPUs"), ("on", "on"),
                 ("off", "off")],
        help_text="measure the first engine config's first load level again after the last "
        "config (a search: its answer point after its last point), on a fresh engine start: how "
        "far the host drifted over the whole sweep (one engine start and one point more, for a "
        "search or two or more configs)")
    converge_pct = forms.FloatField(
        label="Converge to (±%)", required=False, min_value=0.1, max_value=50,
        help_text="repeat each config's deciding load levels (the knee's operating point and its "
        "neighbours) until their 95% interval is this narrow; blank: off")
    max_repeats = forms.IntegerField(
        label="Draws of a deciding level at most", required=False, min_value=1,
        max_value=MAX_CONVERGE_REPEATS, initial=5,
        help_text="with convergence: where a noisy host stops it")
    goodput = forms.CharField(
        label="Goodput SLOs",
        required=False,
        help_text="as vllm bench serve --goodput, in ms: e.g. ttft:500 tpot:50 e2el:20000",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for setting in ENGINE_SETTINGS:
            self.fields[setting.name] = engine_setting_field(setting)
        for name, value in WORKLOAD_PRESETS["case-study"].items():
            self.fields[name].initial = value
        self.fields["load_levels"].initial = "2000"
        names = dataset_names(settings.HEADROOM_DATA_DIR)
        dataset_path = declared_field(self, "dataset_path", forms.ChoiceField)
        dataset_path.choices = [("", "none")] + [(name, name) for name in names]
        declared_field(self, "quality_path", forms.ChoiceField).choices = dataset_path.choices
        node = self._preselect_single_choices().get("node")
        defaults = vllm_batch_defaults(node) if isinstance(node, Node) else None
        if defaults is not None:
            self.fields["max_num_seqs"].initial = str(defaults.max_num_seqs)
            self.fields["max_num_batched_tokens"].initial = str(defaults.max_num_batched_tokens)

    def _preselect_single_choices(self) -> dict[str, Any]:
        """A select with one row to choose starts on it; returns those rows by field name."""
        single: dict[str, Any] = {}
        for name in ("node", "checkpoint", "runtime"):
            field = self.fields[name]
            queryset = field.queryset if isinstance(field, forms.ModelChoiceField) else None
            rows = list(queryset[:2]) if queryset is not None else []
            if len(rows) == 1:
                field.initial = rows[0].pk
                single[name] = rows[0]
        return single

    def batch_defaults_notes(self) -> list[str]:
        """Each node's vLLM defaults, for the engine settings' hint (the grid starts there)."""
        return [batch_defaults_note(node) for node in Node.objects.all()]

    def engine_fields(self) -> list[forms.BoundField]:
        """The engine settings in EngineConfig's order, for the template to list."""
        names = [*(s.name for s in ENGINE_SETTINGS), "extra_args", "engine_config_list"]
        return [self[name] for name in names]

    # -- field cleaning ---------------------------------------------------------------------

    def clean_goodput(self) -> dict[str, float]:
        try:
            return parse_goodput(self.cleaned_data["goodput"].split())
        except ValueError as exc:
            raise ValidationError(f"{exc}.") from None

    def clean_lora_split(self) -> list[dict[str, Any]]:
        try:
            shares = parse_lora_split(self.cleaned_data["lora_split"])
        except ValueError as exc:
            raise ValidationError(f"{exc}.") from None
        return [share.model_dump(mode="json") for share in shares]

    def clean_dataset_path(self) -> str:
        """A name from the list, checked again: the file may have changed since it was listed."""
        name = self.cleaned_data["dataset_path"]
        if name:
            try:
                dataset_file(name, settings.HEADROOM_DATA_DIR)
            except DatasetError as exc:
                raise ValidationError(f"{exc}.") from None
        return name

    def clean_quality_path(self) -> str:
        """A name from the list, read now as the worker will read it: a bad line is refused
        here, naming file:line."""
        name = self.cleaned_data["quality_path"]
        if name:
            try:
                quality.load_quality(QualitySpec(path=name), settings.HEADROOM_DATA_DIR)
            except DatasetError as exc:
                raise ValidationError(f"{exc}.") from None
        return name

    def clean_extra_args(self) -> list[list[str]]:
        """One variant per line (a line of NO_EXTRA_FLAGS is none); no lines: no flags."""
        variants: list[list[str]] = []
        for line in self.cleaned_data["extra_args"].splitlines():
            if not line.strip():
                continue
            try:
                variant = [] if line.strip() == NO_EXTRA_FLAGS else shlex.split(line)
            except ValueError as exc:
                raise ValidationError(f"Cannot split {line.strip()!r}: {exc}.") from None
            if variant in variants:
                raise ValidationError("Each line once, please.")
            variants.append(variant)
        if len(variants) > MAX_CONFIGS:
            raise ValidationError(f"At most {MAX_CONFIGS} lines.")
        return variants or [[]]

    def clean_engine_config_list(self) -> list[EngineConfig]:
        configs: list[EngineConfig] = []
        for number, line in enumerate(self.cleaned_data["engine_config_list"].splitlines(), 1):
            if not line.strip():
                continue
            try:
                config = grid.parse_config_line(line)
            except ValueError as exc:
                raise ValidationError(f"Line {number}: {exc}.") from None
            if config in configs:
                raise ValidationError(f"Line {number} repeats an earlier config.")
            configs.append(config)
        if len(configs) > MAX_CONFIGS:
            raise ValidationError(f"{len(configs)} configs: at most {MAX_CONFIGS}.")
        return configs

    # -- cross-field checks -----------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        endpoint = self._clean_launch_rows(data)
        workload = self._clean_workload(data)
        if workload is None:
            return data
        data["workload"] = workload
        data["search_spec"] = self.search_spec(data)
        request = (self._endpoint_request(data, endpoint, workload) if endpoint is not None
                   else self._engine_request(data, workload))
        if request is not None:
            self._build_plan(data, request)
        return data

    def _engine_request(self, data: dict[str, Any], workload: Workload) -> LaunchRequest | None:
        """The launch that starts engines on the node; None after a field error."""
        for problem in launch_rules.node_problems(
            data.get("node"), data.get("runtime"), data.get("replicas")
        ):
            self.add_error(problem.about, problem.message)
        self._check_checkpoint(data)
        levels = self._clean_levels(data, workload)
        configs = self._clean_engine_configs(data)
        if configs is not None:
            self._check_gpus(data, configs)
            self._check_code_loading(data, configs)
            self._check_lora_served(workload, configs)
        if levels is None or configs is None or self.errors:
            return None
        return LaunchRequest(
            name=data.get("name") or f"{data['checkpoint'].repo} on {data['node'].queue}",
            node=data["node"],
            runtime=data["runtime"],
            checkpoint=data["checkpoint"],
            workload=workload,
            engine_configs=configs,
            load_levels=levels,
            repeats=data["repeats"],
            replicas=data["replicas"],
            goodput=data.get("goodput") or {},
            search=data["search_spec"],
            stability=_stability(data),
            quality_path=data.get("quality_path") or None,
        )

    def _build_plan(self, data: dict[str, Any], request: LaunchRequest) -> None:
        """The one call that turns the checked launch into its plan (data["plan"])."""
        try:
            data["plan"] = plans.build_plan(request)
        except pydantic.ValidationError as exc:
            self.add_error(None, plans.pydantic_message(exc))
            return
        data["launch"] = request
        self._check_source(data["plan"])

    def _check_source(self, plan: SweepPlan) -> None:
        problem = launch_rules.source_problem(plan)
        if problem:
            self.add_error("dataset_path", problem)

    def _clean_launch_rows(self, data: dict[str, Any]) -> Endpoint | None:
        """The registered endpoint, whose node, checkpoint and runtime the run takes; without
        one, the node, checkpoint and runtime fields are required."""
        endpoint: Endpoint | None = data.get("registered_endpoint")
        if endpoint is not None:
            data.update(node=endpoint.node, checkpoint=endpoint.checkpoint,
                        runtime=endpoint.runtime)
            return endpoint
        for name in ("node", "checkpoint", "runtime"):
            if data.get(name) is None and name not in self.errors:
                self.add_error(name, self.fields[name].error_messages["required"])
        return None

    def _endpoint_request(
        self, data: dict[str, Any], endpoint: Endpoint, workload: Workload
    ) -> LaunchRequest | None:
        """The launch that attaches to a registered endpoint: one blank engine config (the server
        runs its own settings), one replica, the endpoint's address and served model name.

        An engine setting typed in is an error on its field rather than silently dropped; one
        still at the value the form itself proposed (a node's vLLM defaults) was not asked for
        and is left out.
        """
        for bound in self.engine_fields():
            typed = str(bound.data or "").strip()
            if typed and bound.name in self.changed_data and bound.name not in self.errors:
                self.add_error(bound.name, "A registered endpoint runs its own settings: leave "
                                           "this blank (the server's are recorded as it reports "
                                           "them).")
        replicas_problem = launch_rules.endpoint_replicas_problem(endpoint, data.get("replicas"))
        if replicas_problem:
            self.add_error("replicas", replicas_problem)
        levels = self._clean_levels(data, workload)
        if levels is None or self.errors:
            return None
        data["plan_notes"] = []
        return LaunchRequest(
            name=data.get("name") or f"{endpoint.served_model} at {endpoint.name}",
            node=endpoint.node,
            runtime=endpoint.runtime,
            checkpoint=endpoint.checkpoint,
            workload=workload,
            engine_configs=launch_rules.endpoint_engine_configs(),
            load_levels=levels,
            repeats=data["repeats"],
            replicas=launch_rules.ENDPOINT_REPLICAS,
            goodput=data.get("goodput") or {},
            endpoint=endpoint,
            search=data["search_spec"],
            stability=_stability(data),
            quality_path=data.get("quality_path") or None,
        )

    def _check_checkpoint(self, data: dict[str, Any]) -> None:
        checkpoint = data.get("checkpoint")
        problem = launch_rules.model_source_problem(checkpoint.repo) if checkpoint else None
        if problem:
            self.add_error("checkpoint", f"{problem}.")

    def _check_code_loading(
        self, data: dict[str, Any], configs: list[EngineConfig]
    ) -> None:
        checkpoint = data.get("checkpoint")
        if checkpoint is None:
            return
        field = "engine_config_list" if data.get("engine_config_list") else "extra_args"
        problem = launch_rules.code_loading_problem(configs, trusted=checkpoint.trusted)
        if problem:
            self.add_error(field, f"{problem}.")

    def _check_lora_served(self, workload: Workload, configs: list[EngineConfig]) -> None:
        """The plan refuses it too; here the error goes on the split's field."""
        problem = unserved_adapters(plans.lora_shares(workload), configs)
        if problem:
            self.add_error("lora_split", f"{problem[:1].upper()}{problem[1:]}.")

    def _check_gpus(self, data: dict[str, Any], configs: list[EngineConfig]) -> None:
        if "replicas" in self.errors:
            return
        problem = launch_rules.gpus_problem(data.get("node"), data.get("replicas"), configs)
        if problem:
            field = "engine_config_list" if data.get("engine_config_list") else (
                "tensor_parallel_size"
            )
            self.add_error(field, problem)

    def _clean_workload(self, data: dict[str, Any]) -> Workload | None:
        preset = data.get("workload_preset")
        if preset is None:
            return None
        # Both apply to a preset as much as to a custom workload.
        switches = {"keep_outputs": bool(data.get("keep_outputs")),
                    "lora_split": data.get("lora_split") or []}
        if "lora_split" in self.errors:
            return None
        if preset != "custom":
            workload = Workload(name=preset, **WORKLOAD_PRESETS[preset], **switches)
            return self._check_parity(workload)
        values: dict[str, Any] = {name: data.get(name) for name in WORKLOAD_FIELDS}
        values["conversation_turns_max"] = data.get("conversation_turns_max")
        values["trace_span_s"] = data.get("trace_span_s")
        values["trace_longer"] = data.get("trace_longer") or Workload.TraceLonger.TRUNCATE
        for name in launch_rules.CUSTOM_WORKLOAD_REQUIRED:
            if values[name] in (None, "") and name not in self.errors:
                self.add_error(name, "Required for a custom workload.")
        if self.errors:
            return None
        for problem in launch_rules.custom_workload_problems(values):
            self.add_error(problem.about, problem.message)
        if self.errors:
            return None
        return self._check_parity(Workload(name="custom", **values, **switches))

    def _check_parity(self, workload: Workload) -> Workload | None:
        problem = launch_rules.parity_problem(workload)
        if problem is not None:
            self.add_error(problem.about, problem.message)
            return None
        return workload

    def _clean_levels(self, data: dict[str, Any], workload: Workload) -> list[float] | None:
        if "load_levels" not in data:
            return None
        try:
            return parse_numbers(
                data["load_levels"],
                # Rates and trace speed factors may be fractions; the others count requests.
                integers=workload.load_shape
                not in (Workload.LoadShape.RATE, Workload.LoadShape.TRACE),
                limit=MAX_LEVELS,
            )
        except ValidationError as exc:
            self.add_error("load_levels", exc)
            return None

    def _clean_engine_configs(self, data: dict[str, Any]) -> list[EngineConfig] | None:
        """The configs to run: the explicit list, or the grid's combinations that vLLM would
        start (data["plan_notes"] names the others and why). None after a field error."""
        if "extra_args" not in data or "engine_config_list" not in data:
            return None
        axes = self._clean_axes(data)
        if axes is None:
            return None
        listed = data["engine_config_list"]
        if listed:
            grid_fields = [name for name, values in axes.items() if values]
            if grid_fields or data["extra_args"] != [[]]:
                shown = ", ".join(str(self.fields[name].label or name) for name in grid_fields)
                self.add_error(
                    "engine_config_list",
                    "Give the configs either as the grid above or as this list, not both "
                    f"(the grid sets {shown or 'extra engine flags'}).",
                )
                return None
            data["plan_notes"] = []
            return list(listed)
        node = data.get("node")
        defaults = vllm_batch_defaults(node) if isinstance(node, Node) else None
        try:
            expanded = grid.expand(
                axes,
                data["extra_args"],
                default_max_num_seqs=defaults.max_num_seqs if defaults else None,
            )
        except grid.GridError as exc:
            self.add_error(None, f"{exc}.")
            return None
        except pydantic.ValidationError as exc:
            self.add_error("extra_args", plans.pydantic_message(exc))
            return None
        if len(expanded.configs) > MAX_CONFIGS:
            pruned = f", {len(expanded.pruned)} left out as vLLM would refuse them" if (
                expanded.pruned
            ) else ""
            self.add_error(
                None,
                f"This grid is {self._grid_size_text(axes, data['extra_args'])} = "
                f"{expanded.combinations} combinations ({len(expanded.configs)} to run"
                f"{pruned}): at most {MAX_CONFIGS} engine configs per launch. Narrow an axis "
                "or list the configs.",
            )
            return None
        data["plan_notes"] = expanded.notes()
        return expanded.configs

    def _clean_axes(self, data: dict[str, Any]) -> dict[str, list[Any]] | None:
        """Each engine setting's values (an empty list: unset), or None after a field error."""
        axes: dict[str, list[Any]] = {}
        for setting in ENGINE_SETTINGS:
            raw = data.get(setting.name) or ""
            try:
                if setting.kind is bool:
                    axes[setting.name] = list(BOOL_AXIS[raw])
                else:
                    axes[setting.name] = parse_axis(setting, raw)
            except ValidationError as exc:
                self.add_error(setting.name, exc)
        return None if any(s.name in self.errors for s in ENGINE_SETTINGS) else axes

    def _grid_size_text(self, axes: dict[str, list[Any]], variants: list[list[str]]) -> str:
        """'2 --max-num-seqs x 3 --max-num-batched-tokens': each axis of more than one value."""
        sizes = [f"{len(v)} {self.fields[name].label}" for name, v in axes.items() if len(v) > 1]
        if len(variants) > 1:
            sizes.append(f"{len(variants)} extra-flag lines")
        return " x ".join(sizes) or "1"

    def estimate(self) -> estimates.Estimate:
        """What this launch is expected to take (benchmarks/launch/estimates.py), worked out from
        the node's earlier runs at the moment it is asked."""
        data = self.cleaned_data
        return estimates.estimate_launch(
            data["plan"], node=data["node"], checkpoint=data["checkpoint"],
            endpoint=data.get("registered_endpoint"),
        )  # fmt: skip

    def save(self, user: Any, estimate: estimates.Estimate | None = None) -> Benchmark:
        """Create the workload and the queued benchmark, with its estimate (the one the
        confirmation page showed, or worked out now), in one transaction (no enqueue here)."""
        data = self.cleaned_data
        estimate = estimate or self.estimate()
        plan: SweepPlan = data["plan"]
        workload: Workload = data["workload"]
        fields = {name: getattr(workload, name) for name in WORKLOAD_ROW_FIELDS}
        with transaction.atomic():
            workload, _ = Workload.objects.get_or_create(name=workload.name, **fields)
            endpoint: Endpoint | None = data.get("registered_endpoint")
            return Benchmark.objects.create(
                name=plan.name,
                node=data["node"],
                # An endpoint's own hardware is not known here; the node only sends the load.
                hardware=f"endpoint {endpoint.name}" if endpoint else data["node"].hardware_label(),
                runtime=data["runtime"],
                checkpoint=data["checkpoint"],
                endpoint=endpoint,
                workload=workload,
                plan=plan.model_dump(mode="json"),
                plan_notes=data.get("plan_notes", []),
                estimated_wall_s=estimate.wall_s,
                estimated_gpu_hours=estimate.gpu_hours,
                estimate_basis=estimate.basis,
                points_total=plans.points_total(plan),
                created_by=user if user.is_authenticated else None,
            )


def _stability(data: dict[str, Any]) -> StabilitySpec:
    """What the sweep does about a noisy host, from its fields (a form posted without them takes
    the defaults). The end control left "by engine" is left unset: the plan sets it by its
    launch style (SweepPlan)."""
    defaults = StabilitySpec()
    redraws, cap = data.get("redraw_disturbed"), data.get("max_repeats")
    end_control = data.get("end_control")
    return StabilitySpec(
        redraw_disturbed=defaults.redraw_disturbed if redraws is None else redraws,
        control_point=bool(data.get("control_point")),
        converge_pct=data.get("converge_pct"),
        max_repeats=defaults.max_repeats if cap is None else cap,
        **({} if end_control is None else {"end_control": end_control}),
    )

