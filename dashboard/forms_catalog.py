"""The catalog's forms (/catalog/): checkpoints, runtimes, nodes' descriptions and endpoints.

What a form offers follows who fills it in (the roles of benchmarks/migrations/0009): the
approved box only to someone allowed to change such rows (approving is changing the row, as in
the admin), the trusted box only to a trust_checkpoint holder. A box a person may not tick is
left out of the form, so the row keeps its value whatever the request sends.
"""

from __future__ import annotations

import re
from typing import Any

import pydantic
from django import forms
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.utils import timezone

from benchmarks.models import Checkpoint, Endpoint, Node, Runtime
from benchmarks.models.catalog import REVISION_REGEX
from benchmarks.security import outbound, vault
from dashboard.access import CHANGE_CHECKPOINT, CHANGE_RUNTIME, TRUST_CHECKPOINT
from runner.engine.endpoint import Credentials, check_header, normalize_base_url, origin
from runner.schema.engine_config import EngineLaunch
from runner.schema.flags import KV_CACHE_DTYPES, check_command_value, check_model_source

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
        if value and value not in KV_CACHE_DTYPES:
            raise ValidationError(
                f"vLLM has no KV-cache dtype {value!r}: it takes "
                f"{', '.join(KV_CACHE_DTYPES)}."
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
    """As runner.schema.flags.check_model_source reads it: org/name, not a local folder."""
    try:
        check_model_source(repo, [])
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
            check_command_value(image, "image")  # it goes on docker's command line
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


class CurrencyField(forms.CharField):
    """An ISO 4217 code, read in capitals: "usd" is USD; "US$" or "dollar" is refused."""

    def to_python(self, value: Any) -> str:
        return str(super().to_python(value)).upper()


# The node_price_complete constraint's own rule, said field by field before the database.
PRICE_NEEDS = {
    "price_currency": "A price needs its currency (ISO 4217, e.g. USD).",
    "price_as_of": "A price needs the date it held: GPU-hour prices change.",
}


class NodeForm(forms.ModelForm):
    """Only what people write: the description, and the GPU-hour price with its currency and
    the date it held (every point's cost per million output tokens comes from it). The
    hardware is what the node's worker reported."""

    gpu_hour_price = forms.DecimalField(
        label="GPU-hour price",
        required=False,
        min_value=0,
        max_digits=10,
        decimal_places=4,
        help_text="what one GPU of this node costs per hour; blank: not priced",
    )
    price_currency = CurrencyField(
        label="Currency",
        required=False,
        max_length=3,
        validators=[RegexValidator(r"^[A-Z]{3}$", "A currency is its ISO 4217 code: three "
                                                  "letters, e.g. USD, EUR, KRW.")],
        help_text="ISO 4217 code, e.g. USD",
    )
    price_as_of = forms.DateField(
        label="Price as of",
        required=False,
        widget=forms.DateInput(format="%Y-%m-%d", attrs={"type": "date"}),
        help_text="the date the price held (YYYY-MM-DD)",
    )

    class Meta:
        model = Node
        fields = [
            "description", "gpu_hour_price", "price_currency", "price_as_of", "dcgm_exporter_url"
        ]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}
        labels = {"dcgm_exporter_url": "dcgm-exporter URL"}

    def clean_dcgm_exporter_url(self) -> str:
        """Checked as the plan checks it (runner.schema.engine_config.EngineLaunch): the address
        goes into every plan launched on this node, which is stored and downloadable. One typed
        as a number must lie where the dashboard may send requests, as an endpoint's must."""
        url: str = self.cleaned_data["dcgm_exporter_url"].strip()
        if url:
            try:
                EngineLaunch(dcgm_exporter_url=url)
            except pydantic.ValidationError as exc:
                message = exc.errors()[0]["msg"].removeprefix("Value error, ")
                raise ValidationError(
                    f"The address {message.removeprefix('dcgm_exporter_url ')}."
                ) from None
            _check_typed_address(url)
        return url

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if data.get("price_as_of") and data["price_as_of"] > timezone.localdate():
            self.add_error("price_as_of", "The date is in the future: give the day the price "
                                          "was quoted.")
        if self.has_error("gpu_hour_price"):
            return data
        if data.get("gpu_hour_price") is None:
            if data.get("price_currency") or data.get("price_as_of"):
                self.add_error("gpu_hour_price", "A currency or date without a price: give the "
                                                 "price, or clear all three.")
            return data
        for name, message in PRICE_NEEDS.items():
            if not data.get(name) and not self.has_error(name):
                self.add_error(name, message)
        return data

    def written_fields(self) -> dict[str, Any]:
        """What people write, to save over the row without touching the worker's fields."""
        return {name: self.cleaned_data[name] for name in self.Meta.fields}


# -- endpoints --------------------------------------------------------------------------------


class SecretTextarea(forms.Textarea):
    """A textarea that never writes a value back into the page: the headers it takes are
    secrets, and a page redisplayed after an error must not echo them (as PasswordInput with
    render_value=False does for the key)."""

    def format_value(self, value: Any) -> str | None:
        return None


def _sentence(text: str) -> str:
    """A runner message as a form error: capitalized, with a full stop."""
    return f"{text[:1].upper()}{text[1:]}."


def _check_typed_address(url: str) -> None:
    try:
        outbound.check_typed(url)
    except ValueError as exc:
        raise ValidationError(_sentence(str(exc))) from None


def parse_header_lines(text: str) -> dict[str, str]:
    """'Name: value' lines -> {name: value}; ValidationError naming the line, never a value."""
    headers: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not name:
            raise ValidationError(f'Line {number} is not "Name: value".')
        if name.lower() in (known.lower() for known in headers):
            raise ValidationError(f"Header {name} is given twice.")
        try:
            check_header(name, value)
        except ValueError as exc:
            raise ValidationError(f"Line {number}: {exc}.") from None
        headers[name] = value
    return headers


class EndpointForm(forms.ModelForm):
    """An OpenAI-compatible server that is already running, and what it needs to be measured.

    The API key and the extra headers are write-only: never rendered back (not even after an
    error), stored encrypted (benchmarks/security/vault.py). Editing, a blank field keeps what is
    stored and a box removes it. Only the header names are kept in the clear, to be listed.

    A secret is bound to the server it was entered for: a base URL with another scheme, host or
    port removes the stored ones (the form asks for them again). Otherwise anyone who may edit
    the endpoint could point it at a server of their own and have the secrets sent there.
    """

    api_key = forms.CharField(
        label="API key", required=False, strip=True,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text="sent as Authorization: Bearer KEY; stored encrypted, never shown again",
    )  # fmt: skip
    clear_api_key = forms.BooleanField(label="Remove the stored API key", required=False)
    extra_headers = forms.CharField(
        required=False, strip=False,
        widget=SecretTextarea(attrs={"rows": 3, "autocomplete": "off", "spellcheck": "false"}),
        help_text='one "Name: value" per line, e.g. X-Tenant: acme; sent with every request; '
        "values are stored encrypted and never shown again, only the names",
    )  # fmt: skip
    clear_extra_headers = forms.BooleanField(label="Remove the stored headers", required=False)

    class Meta:
        model = Endpoint
        fields = ["name", "base_url", "served_model", "node", "checkpoint", "runtime",
                  "description"]
        widgets = {"description": forms.Textarea(attrs={"rows": 3})}
        help_texts = {
            "node": "the worker node whose host can reach the endpoint: its worker sends the "
                    "load (the dashboard's host may not reach it at all)",
            "checkpoint": "what the endpoint is registered as serving (no weights are loaded: "
                          "it need not be approved for launching)",
            "runtime": "the vLLM version it is registered as running; the server's own /version "
                       "is recorded with every point",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        runtime = self.fields["runtime"]
        assert isinstance(runtime, forms.ModelChoiceField)
        # Headroom reads vLLM's /metrics, /version and /tokenize: only a vLLM server fits.
        runtime.queryset = Runtime.objects.filter(engine__in=Runtime.LAUNCHABLE)
        self.fields["base_url"].help_text = (
            "http(s)://host:port of the server, without /v1 (dropped if given); no "
            "user:password@"
        )
        stored = self.instance
        self.stored_url = stored.base_url  # validation writes the new one onto the instance
        self.dropped: list[str] = []
        if stored.pk is None:
            del self.fields["clear_api_key"], self.fields["clear_extra_headers"]
            return
        if stored.has_api_key:
            self.fields["api_key"].help_text = (
                "a key is stored: leave blank to keep it (another scheme, host or port in the "
                "base URL removes it)"
            )
        else:
            del self.fields["clear_api_key"]
        if stored.extra_header_names:
            self.fields["extra_headers"].help_text = (
                f"stored: {stored.extra_header_names} (values hidden); leave blank to keep them, "
                "or give every header again to replace them (another scheme, host or port in "
                "the base URL removes them)"
            )
        else:
            del self.fields["clear_extra_headers"]

    def clean_base_url(self) -> str:
        try:
            url = normalize_base_url(self.cleaned_data["base_url"])
        except ValueError as exc:
            raise ValidationError(_sentence(str(exc))) from None
        _check_typed_address(url)
        return url

    def clean_served_model(self) -> str:
        name: str = self.cleaned_data["served_model"].strip()
        if not name or any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in name):
            raise ValidationError("A model name on one line, as the server's /v1/models lists it.")
        return name

    def clean_api_key(self) -> str:
        key: str = self.cleaned_data["api_key"]
        try:
            Credentials(api_key=key)
        except ValueError as exc:
            raise ValidationError(_sentence(str(exc))) from None
        return key

    def clean_extra_headers(self) -> dict[str, str]:
        return parse_header_lines(self.cleaned_data["extra_headers"])

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        key, headers = data.get("api_key") or "", data.get("extra_headers") or {}
        if key and data.get("clear_api_key"):
            self.add_error("clear_api_key", "Give a new key or remove the stored one, not both.")
        if headers and data.get("clear_extra_headers"):
            self.add_error("clear_extra_headers",
                           "Give new headers or remove the stored ones, not both.")
        if "api_key" in self.errors or "extra_headers" in self.errors:
            return data
        stored_names = self._stored_header_names()
        sends_key = bool(key) or self._keeps(self.instance.has_api_key, "clear_api_key")
        names = list(headers) or (
            stored_names if self._keeps(bool(stored_names), "clear_extra_headers") else []
        )
        if sends_key and any(name.lower() == "authorization" for name in names):
            self.add_error("extra_headers", "The API key is sent as the Authorization header: "
                                            "give one or the other.")
        return data

    def _stored_header_names(self) -> list[str]:
        stored = self.instance.extra_header_names
        return [name.strip() for name in stored.split(",") if name.strip()]

    def moved(self) -> bool:
        """Whether the new base URL reaches another server than the stored one."""
        url = self.cleaned_data.get("base_url")
        if self.instance.pk is None or not url:
            return False
        return origin(url) != origin(self.stored_url)

    def _keeps(self, stored: bool, clear_field: str) -> bool:
        """Whether a stored secret stays: neither its box nor a move to another server removes
        it."""
        return stored and not self.cleaned_data.get(clear_field) and not self.moved()

    def _dropped_by_move(self) -> list[str]:
        """The stored secrets this save removes only because the endpoint moved to another
        server: neither replaced nor removed by their box."""
        if not self.moved():
            return []
        data = self.cleaned_data
        dropped = []
        if self.instance.has_api_key and not (data.get("api_key") or data.get("clear_api_key")):
            dropped.append("API key")
        if self.instance.extra_header_names and not (
            data.get("extra_headers") or data.get("clear_extra_headers")
        ):
            dropped.append("headers")
        return dropped

    def secret_changes(self) -> list[str]:
        """What this save does to the secrets, in words that name no value (for the audit)."""
        data = self.cleaned_data
        changes = []
        if data.get("api_key"):
            changes.append("API key replaced" if self.instance.has_api_key else "API key set")
        elif data.get("clear_api_key"):
            changes.append("API key removed")
        if data.get("extra_headers"):
            changes.append(f"headers set: {', '.join(sorted(data['extra_headers']))}")
        elif data.get("clear_extra_headers"):
            changes.append("headers removed")
        dropped = self._dropped_by_move()
        if dropped:
            changes.append(f"{' and '.join(dropped)} removed: entered for "
                           f"{origin(self.stored_url)}, not the new address")
        return changes

    def save(self, commit: bool = True) -> Endpoint:
        """The row with its secrets encrypted; `changes` then says what happened to them."""
        data = self.cleaned_data
        # Both before the row's stored secrets are replaced.
        self.changes, self.dropped = self.secret_changes(), self._dropped_by_move()
        moved = self.moved()
        endpoint: Endpoint = super().save(commit=False)
        if data.get("api_key"):
            endpoint.api_key_encrypted = vault.encrypt(data["api_key"])
        elif data.get("clear_api_key") or moved:
            endpoint.api_key_encrypted = ""
        headers: dict[str, str] = data.get("extra_headers") or {}
        if headers:
            endpoint.extra_headers_encrypted = vault.encrypt_headers(headers)
            endpoint.extra_header_names = ", ".join(sorted(headers))[:500]
        elif data.get("clear_extra_headers") or moved:
            endpoint.extra_headers_encrypted = endpoint.extra_header_names = ""
        if commit:
            endpoint.save()
        return endpoint
