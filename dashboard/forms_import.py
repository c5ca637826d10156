"""The import form (/runs/import/), with an error on the field that is wrong."""

from __future__ import annotations

from typing import Any

import pydantic
from django import forms
from django.conf import settings
from django.core.exceptions import ValidationError
from django.template.defaultfilters import filesizeformat

from benchmarks.models import Runtime
from benchmarks.storage.imports import StatedFacts


class ImportForm(forms.Form):
    """The file, and what the engineer states about the run where the file does not say.

    Each stated value fills only what the file lacks (benchmarks.storage.imports.apply_stated).
    """

    file = forms.FileField(
        help_text="Headroom result lines (JSONL), a run's JSON download, a vllm bench serve "
        "result, an AIPerf, GuideLLM, inference-perf or llm-d-benchmark result file, or a .zip "
        "of a tool's output folder"
    )
    companion = forms.FileField(
        label="File that came with it",
        required=False,
        help_text="the server-side file the tool wrote beside the result: with AIPerf's "
        "profile_export.jsonl, its gpu_telemetry_export.jsonl (the GPUs' power, memory and "
        "energy); with an inference-perf stage_N_lifecycle_metrics.json, its "
        "stage_N_prometheus_metrics.json (the server's queue over the stage)",
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
        """refused: why the upload handler did not take the file (dashboard/uploads.py)."""
        super().__init__(*args, **kwargs)
        self.refused = refused
        file = self.fields["file"]
        if refused:
            file.required = False  # its error is the refusal, not "This field is required."
        # static/js/import.js refuses a larger file before sending it.
        file.widget.attrs["data-max-bytes"] = str(settings.HEADROOM_MAX_UPLOAD_BYTES)
        file.help_text = (
            f"{file.help_text}, at most {filesizeformat(settings.HEADROOM_MAX_UPLOAD_BYTES)} "
            "with the file that came with it"
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
