"""The launch form (/runs/new/) and the import form, with an error on the field that is wrong."""

from __future__ import annotations

import shlex
from typing import Any, NamedTuple

import pydantic
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.template.defaultfilters import filesizeformat

from benchmarks import plans
from benchmarks.form_fields import declared_field
from benchmarks.imports import StatedFacts
from benchmarks.models import Benchmark, Checkpoint, Node, Runtime, Workload
from runner import schema, workloads

MAX_REPEATS = 10
MAX_LEVELS = 20
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
# The engine settings every config of a launch shares: all but the swept max_num_seqs.
SHARED_SETTINGS = tuple(s for s in schema.EngineConfig.settings() if s.name != "max_num_seqs")


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
        super().__init__(queryset=Checkpoint.objects.filter(approved=True), **kwargs)


class LaunchableRuntimeField(ApprovedChoiceField):
    """An approved vLLM runtime: the runner launches only vLLM; other engines' runs are imported."""

    def __init__(self, **kwargs: Any) -> None:
        launchable = Runtime.objects.filter(approved=True, engine__in=Runtime.LAUNCHABLE)
        super().__init__(queryset=launchable, **kwargs)

    def refusal(self, row: Any) -> str:
        if row.engine not in Runtime.LAUNCHABLE:
            return (
                f"{row} cannot be launched: Headroom launches only vLLM runtimes (import the "
                "results of other engines instead)."
            )
        return super().refusal(row)


def _whole(bound: float | None) -> int | None:
    """An integer field's bound (EngineSetting keeps every bound as a float)."""
    return None if bound is None else int(bound)


def engine_setting_field(setting: schema.EngineSetting) -> forms.Field:
    """A form field for one EngineConfig field: its flag as label, its description as help."""
    common: dict[str, Any] = {
        "label": setting.flag,
        "help_text": setting.description,
        "required": False,
    }
    if setting.default is not None:
        common["initial"] = setting.default
    if setting.kind is bool:
        # Three states: unset leaves the engine's own default, which is not "off".
        choices = [("", "engine default"), ("true", "on"), ("false", "off")]
        return forms.NullBooleanField(widget=forms.Select(choices=choices), **common)
    if setting.kind is int:
        low = setting.ge if setting.gt is None else int(setting.gt) + 1
        return forms.IntegerField(
            min_value=_whole(low), max_value=_whole(setting.le), **common
        )
    if setting.kind is float:
        # An exclusive bound (gt) has no form equivalent; EngineConfig refuses it on this field.
        return forms.FloatField(min_value=setting.ge, max_value=setting.le, **common)
    return forms.CharField(max_length=100, empty_value=None, **common)


class BatchDefaults(NamedTuple):
    max_num_seqs: int
    max_num_batched_tokens: int


# vLLM 0.32's own defaults for `vllm serve` (UsageContext.OPENAI_API_SERVER) when neither flag is
# given, as EngineArgs.get_batch_defaults in vllm/engine/arg_utils.py picks them by the total
# memory of one GPU: at least 160 GiB 1024 sequences / 16384 batched tokens; at least 70 GiB and
# not an A100 (larger budgets were slower there, vLLM PR #17885) 1024 / 8192; any other GPU
# 256 / 2048. Its CPU backend has its own: 128 / 2048 times tensor x pipeline parallel size.
def vllm_batch_defaults(node: Node) -> BatchDefaults | None:
    """What vLLM would pick on this node (one engine, tensor parallel 1), the starting point of
    a max_num_seqs grid; None when the node's worker reported no GPU memory."""
    if node.launch_style == Node.LaunchStyle.CPU:
        return BatchDefaults(max_num_seqs=128, max_num_batched_tokens=2048)
    if not node.gpu_memory_mib:
        return None
    gib = node.gpu_memory_mib / 1024  # nvidia-smi's MiB; vLLM compares bytes with GiB_bytes
    if gib >= 160:
        return BatchDefaults(max_num_seqs=1024, max_num_batched_tokens=16384)
    if gib >= 70 and "a100" not in node.gpu_name.lower():
        return BatchDefaults(max_num_seqs=1024, max_num_batched_tokens=8192)
    return BatchDefaults(max_num_seqs=256, max_num_batched_tokens=2048)


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


class LaunchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False, help_text="optional; a label for lists")
    node = NodeChoiceField(
        queryset=Node.objects.all(),
        help_text="runs on this node's worker",
        error_messages={"invalid_choice": "Unknown node: it is not registered (any more)."},
    )
    checkpoint = ApprovedCheckpointField()
    runtime = LaunchableRuntimeField()

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
        help_text="a JSONL file in the data directory (HEADROOM_DATA_DIR)",
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

    # The setting the sweep varies: one engine config per value. Every other EngineConfig field
    # gets its field in __init__ (SHARED_SETTINGS), shared by all the configs.
    max_num_seqs = forms.CharField(
        label="--max-num-seqs values",
        required=False,
        help_text="one engine config per value, e.g. 256, 512, 1024; blank = engine default",
    )
    extra_args = forms.CharField(
        label="Extra engine flags", required=False, help_text="e.g. --enforce-eager"
    )

    load_levels = forms.CharField(
        help_text="burst: request counts; concurrency: in-flight limits; rate: requests/s"
    )
    repeats = forms.IntegerField(min_value=1, max_value=MAX_REPEATS, initial=1)
    replicas = forms.IntegerField(min_value=1, max_value=64, initial=1)
    goodput = forms.CharField(
        label="Goodput SLOs",
        required=False,
        help_text="as vllm bench serve --goodput, in ms: e.g. ttft:500 tpot:50 e2el:20000",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for setting in SHARED_SETTINGS:
            self.fields[setting.name] = engine_setting_field(setting)
        for name, value in WORKLOAD_PRESETS["case-study"].items():
            self.fields[name].initial = value
        self.fields["load_levels"].initial = "2000"
        names = workloads.dataset_names(settings.HEADROOM_DATA_DIR)
        dataset_path = declared_field(self, "dataset_path", forms.ChoiceField)
        dataset_path.choices = [("", "none")] + [(name, name) for name in names]
        node = self._preselect_single_choices().get("node")
        defaults = vllm_batch_defaults(node) if isinstance(node, Node) else None
        if defaults is not None:
            self.fields["max_num_seqs"].initial = str(defaults.max_num_seqs)
            self.fields["max_num_batched_tokens"].initial = defaults.max_num_batched_tokens

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
        names = ["max_num_seqs", *(s.name for s in SHARED_SETTINGS), "extra_args"]
        return [self[name] for name in names]

    # -- field cleaning ---------------------------------------------------------------------

    def clean_max_num_seqs(self) -> list[int]:
        text = self.cleaned_data["max_num_seqs"]
        if not text.strip():
            return []
        return [int(v) for v in parse_numbers(text, integers=True, limit=MAX_CONFIGS)]

    def clean_goodput(self) -> dict[str, float]:
        try:
            return schema.parse_goodput(self.cleaned_data["goodput"].split())
        except ValueError as exc:
            raise ValidationError(f"{exc}.") from None

    def clean_dataset_path(self) -> str:
        """A name from the list, checked again: the file may have changed since it was listed."""
        name = self.cleaned_data["dataset_path"]
        if name:
            try:
                workloads.dataset_file(name, settings.HEADROOM_DATA_DIR)
            except workloads.DatasetError as exc:
                raise ValidationError(f"{exc}.") from None
        return name

    def clean_extra_args(self) -> list[str]:
        try:
            return shlex.split(self.cleaned_data["extra_args"])
        except ValueError as exc:
            raise ValidationError(f"Cannot split these flags: {exc}.") from None

    # -- cross-field checks -----------------------------------------------------------------

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        workload = self._clean_workload(data)
        if workload is None:
            return data
        data["workload"] = workload
        node = data.get("node")
        if node and data.get("replicas") and data["replicas"] > node.max_replicas():
            self.add_error(
                "replicas", f"{node.queue} has {node.max_replicas()} GPU(s): at most that many."
            )
        runtime = data.get("runtime")
        if node and runtime and node.launch_style == "docker" and not runtime.image:
            self.add_error(
                "runtime", f"{node.queue} starts engines from an image; pick one with it."
            )
        self._check_gpus(data)
        self._check_checkpoint(data)
        levels = self._clean_levels(data, workload)
        configs = self._clean_engine_configs(data)
        if levels is None or configs is None or self.errors:
            return data
        try:
            data["plan"] = plans.build_plan(
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
            )
        except pydantic.ValidationError as exc:
            self.add_error(None, plans.pydantic_message(exc))
        return data

    def _check_checkpoint(self, data: dict[str, Any]) -> None:
        """Its model must be one this deployment may load, and only a trusted one may run
        flags that load code or read files on the node."""
        checkpoint = data.get("checkpoint")
        if checkpoint is None:
            return
        try:
            schema.check_model_source(checkpoint.repo, settings.HEADROOM_MODEL_DIRS)
        except ValueError as exc:
            self.add_error("checkpoint", f"{exc}.")
        if "extra_args" not in data:
            return
        try:
            schema.check_code_loading(data["extra_args"], trusted=checkpoint.trusted)
        except ValueError as exc:
            self.add_error("extra_args", f"{exc}.")

    def _check_gpus(self, data: dict[str, Any]) -> None:
        node, replicas = data.get("node"), data.get("replicas")
        tp = data.get("tensor_parallel_size") or 1
        if not node or not node.gpu_count or not replicas or "replicas" in self.errors:
            return
        if replicas * tp > node.gpu_count:
            self.add_error(
                "tensor_parallel_size",
                f"{replicas} replica(s) x {tp} GPUs each need {replicas * tp} GPUs; "
                f"{node.queue} has {node.gpu_count}.",
            )

    def _clean_workload(self, data: dict[str, Any]) -> Workload | None:
        preset = data.get("workload_preset")
        if preset is None:
            return None
        if preset != "custom":
            return Workload(name=preset, **WORKLOAD_PRESETS[preset])
        values: dict[str, Any] = {name: data.get(name) for name in WORKLOAD_FIELDS}
        for name in ("prompt_source", "input_tokens_min", "input_tokens_max", "output_tokens",
                     "request_count", "temperature", "endpoint", "load_shape"):
            if values[name] in (None, "") and name not in self.errors:
                self.add_error(name, "Required for a custom workload.")
        if self.errors:
            return None
        if values["input_tokens_max"] < values["input_tokens_min"]:
            self.add_error("input_tokens_max", "Must be at least the minimum input tokens.")
        if values["thinking"] and values["endpoint"] != "chat":
            self.add_error("thinking", "Thinking is a chat template switch: use the chat endpoint.")
        if values["prompt_source"] == "dataset" and not values["dataset_path"]:
            self.add_error("dataset_path",
                           "A dataset workload needs a JSONL file from the data directory.")
        return None if self.errors else Workload(name="custom", **values)

    def _clean_levels(self, data: dict[str, Any], workload: Workload) -> list[float] | None:
        if "load_levels" not in data:
            return None
        try:
            return parse_numbers(
                data["load_levels"],
                integers=workload.load_shape != Workload.LoadShape.RATE,
                limit=MAX_LEVELS,
            )
        except ValidationError as exc:
            self.add_error("load_levels", exc)
            return None

    def _clean_engine_configs(self, data: dict[str, Any]) -> list[schema.EngineConfig] | None:
        if "max_num_seqs" not in data or "extra_args" not in data:
            return None
        # Unset settings are left out, so EngineConfig's own defaults apply.
        shared: dict[str, Any] = {
            setting.name: data[setting.name]
            for setting in SHARED_SETTINGS
            if data.get(setting.name) is not None
        }
        shared["extra_args"] = data["extra_args"]
        configs = []
        for seqs in data["max_num_seqs"] or [None]:
            try:
                configs.append(schema.EngineConfig(max_num_seqs=seqs, **shared))
            except pydantic.ValidationError as exc:
                for error in exc.errors():
                    name = str(error["loc"][0]) if error["loc"] else "max_num_batched_tokens"
                    field = name if name in self.fields else None
                    message = error["msg"].removeprefix("Value error, ")
                    shown = " ".join(str(e) for e in self.errors.get(field, [])) if field else ""
                    if field is None or message not in shown:
                        self.add_error(field, message)
                return None
        return configs

    def save(self, user: Any) -> Benchmark:
        """Create the workload and the queued benchmark in one transaction (no enqueue here)."""
        data = self.cleaned_data
        plan: schema.SweepPlan = data["plan"]
        workload: Workload = data["workload"]
        fields = {name: getattr(workload, name) for name in WORKLOAD_FIELDS}
        with transaction.atomic():
            workload, _ = Workload.objects.get_or_create(name=workload.name, **fields)
            return Benchmark.objects.create(
                name=plan.name,
                node=data["node"],
                hardware=data["node"].hardware_label(),
                runtime=data["runtime"],
                checkpoint=data["checkpoint"],
                workload=workload,
                plan=plan.model_dump(mode="json"),
                points_total=plans.points_total(plan),
                created_by=user if user.is_authenticated else None,
            )


class ImportForm(forms.Form):
    """The file, and what the engineer states about the run where the file does not say.

    Each stated value fills only what the file lacks (benchmarks.imports.apply_stated).
    """

    file = forms.FileField(
        help_text="A Headroom results file (JSONL) or vllm bench serve --save-result JSON"
    )
    name = forms.CharField(max_length=200, required=False)

    gpu_name = forms.CharField(
        label="GPU", max_length=200, required=False, help_text="e.g. NVIDIA H200"
    )
    gpu_count = forms.IntegerField(
        label="GPU count", min_value=1, required=False, help_text="GPUs on the host that served"
    )
    engine = forms.ChoiceField(
        label="Runtime",
        choices=[("", "not stated")] + Runtime.Engine.choices,
        required=False,
        help_text="the serving engine that ran",
    )
    other_engine = forms.CharField(
        label="Engine name", max_length=50, required=False, help_text="for another engine, e.g. tgi"
    )
    engine_version = forms.CharField(label="Runtime version", max_length=50, required=False)
    engine_image = forms.CharField(
        label="Runtime image",
        max_length=300,
        required=False,
        help_text="e.g. nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
    )
    checkpoint = forms.CharField(
        label="Checkpoint", max_length=300, required=False, help_text="Hub repo id"
    )
    revision = forms.CharField(
        label="Checkpoint revision", required=False, help_text="the 40-hex commit that ran"
    )
    precision = forms.CharField(
        label="Precision", max_length=50, required=False, help_text="e.g. bf16, FP8, NVFP4"
    )

    STATED_FIELDS = (
        "gpu_name", "gpu_count", "engine", "other_engine", "engine_version", "engine_image",
        "checkpoint", "revision", "precision",
    )

    def __init__(self, *args: Any, refused: str = "", **kwargs: Any) -> None:
        """refused: why the upload handler did not take the file (benchmarks/uploads.py)."""
        super().__init__(*args, **kwargs)
        self.refused = refused
        file = self.fields["file"]
        if refused:
            file.required = False  # its error is the refusal, not "This field is required."
        # static/js/import.js refuses a larger file before sending it.
        file.widget.attrs["data-max-bytes"] = str(settings.HEADROOM_MAX_UPLOAD_BYTES)
        file.help_text = (
            f"{file.help_text}, at most {filesizeformat(settings.HEADROOM_MAX_UPLOAD_BYTES)}"
        )

    def stated_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.STATED_FIELDS]

    def clean_file(self) -> Any:
        if self.refused:
            raise ValidationError(self.refused)
        return self.cleaned_data["file"]

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        engine, other = data.get("engine"), data.get("other_engine")
        problem = Runtime.engine_naming_problem(engine, other)
        if problem:
            self.add_error("other_engine", problem)
        if self.errors:
            return data
        values = {name: data.get(name) for name in self.STATED_FIELDS if name != "other_engine"}
        if engine == Runtime.Engine.OTHER:
            values["engine"] = other
        try:
            data["stated"] = StatedFacts(**values)
        except pydantic.ValidationError as exc:
            for error in exc.errors():
                name = str(error["loc"][0]) if error["loc"] else None
                field = "other_engine" if name == "engine" else name
                message = error["msg"].removeprefix("Value error, ")
                message = f"{message[:1].upper()}{message[1:]}."
                self.add_error(field if field in self.fields else None, message)
        return data
