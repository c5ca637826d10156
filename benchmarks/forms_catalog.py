"""The catalog's forms (/catalog/): checkpoints, runtimes and nodes' descriptions.

What a form offers follows who fills it in (the roles of benchmarks/migrations/0009): the
approved box only to someone allowed to change such rows (approving is changing the row, as in
the admin), the trusted box only to a trust_checkpoint holder. A box a person may not tick is
left out of the form, so the row keeps its value whatever the request sends.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator

from benchmarks.models import REVISION_REGEX, Checkpoint, Node, Runtime
from runner import schema

CHANGE_CHECKPOINT = "benchmarks.change_checkpoint"
TRUST_CHECKPOINT = "benchmarks.trust_checkpoint"
CHANGE_RUNTIME = "benchmarks.change_runtime"

# A docker image digest as `docker images --digests` prints it (the only algorithm in use).
DIGEST_REGEX = r"^sha256:[0-9a-f]{64}$"


class CheckpointForm(forms.ModelForm):
    """A checkpoint pinned to a commit. Checkpoint.clean (run by the ModelForm) refuses a repo
    vLLM would read as a flag and, once approved, one that is neither a hub id nor inside
    HEADROOM_MODEL_DIRS: the check the launch form and the worker make again."""

    revision = forms.CharField(
        required=False,
        validators=[RegexValidator(REVISION_REGEX, "A revision is a 40-hex commit id: a branch "
                                                   "or tag can move, a commit cannot.")],
        help_text="the 40-hex commit of the weights; blank only for a local folder",
    )
    kv_cache_dtype = forms.CharField(
        label="KV-cache dtype",
        required=False,
        help_text="as vLLM's --kv-cache-dtype, e.g. fp8; blank: auto (the checkpoint's dtype)",
    )

    class Meta:
        model = Checkpoint
        fields = ["repo", "revision", "precision", "kv_cache_dtype", "approved", "trusted"]

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not user.has_perm(CHANGE_CHECKPOINT):
            del self.fields["approved"]
        if not user.has_perm(TRUST_CHECKPOINT):
            del self.fields["trusted"]

    def clean_kv_cache_dtype(self) -> str:
        value: str = self.cleaned_data["kv_cache_dtype"]
        if value == "auto":
            return ""  # the same choice as blank, stored once so the unique constraint holds
        if value and value not in schema.KV_CACHE_DTYPES:
            raise ValidationError(
                f"vLLM has no KV-cache dtype {value!r}: it takes "
                f"{', '.join(schema.KV_CACHE_DTYPES)}."
            )
        return value

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        repo, revision = data.get("repo"), data.get("revision")
        # A hub id without a commit names whatever the branch holds on the day it is loaded.
        if repo and not revision and _is_hub_id(repo):
            self.add_error("revision", "A hub checkpoint needs its 40-hex commit.")
        return data


def _is_hub_id(repo: str) -> bool:
    """As runner.schema.check_model_source reads it: spelled org/name and not a local folder."""
    try:
        schema.check_model_source(repo, [])
    except ValueError:
        return False
    return True


class RuntimeForm(forms.ModelForm):
    """An engine, its version, and the image and digest it runs from (docker nodes)."""

    digest = forms.CharField(
        required=False,
        validators=[RegexValidator(DIGEST_REGEX, "A digest is sha256: and 64 hex digits, as "
                                                 "docker images --digests prints it.")],
        help_text="sha256:... of the image; pins the bytes a tag may later point elsewhere",
    )

    class Meta:
        model = Runtime
        fields = ["engine", "other_engine", "version", "image", "digest", "approved"]

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not user.has_perm(CHANGE_RUNTIME):
            del self.fields["approved"]
        else:
            self.fields["approved"].help_text = (
                "launchable: only a vLLM runtime can be launched (other engines' results are "
                "imported)"
            )

    def clean_image(self) -> str:
        image: str = self.cleaned_data["image"]
        if "@" in image:
            raise ValidationError("Give the digest in its own field, not after '@'.")
        try:
            schema.check_command_value(image, "image")  # it goes on docker's command line
        except ValueError as exc:
            raise ValidationError(f"{exc}.") from None
        if re.search(r"\s", image):
            raise ValidationError("An image name has no spaces.")
        return image

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        engine, other = data.get("engine"), data.get("other_engine")
        problem = Runtime.engine_naming_problem(engine, other)
        if problem:
            self.add_error("other_engine", problem)
        if data.get("digest") and not data.get("image"):
            self.add_error("digest", "A digest pins an image: give the image too.")
        if data.get("approved") and engine not in Runtime.LAUNCHABLE:
            self.add_error("approved", "Headroom launches only vLLM: only a vLLM runtime can be "
                                       "approved for launching.")
        return data


class NodeForm(forms.ModelForm):
    """Only what people write: the hardware is what the node's worker reported."""

    class Meta:
        model = Node
        fields = ["description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}
