"""The rules a launch keeps: checked by the launch form as it is filled in, and by the node's
worker again before it runs a stored plan (benchmarks.launch.plans.launchable_plan).

A rule returns its problem rather than raising: a sentence, or a Problem whose `about` names the
field at fault (of the workload or the launch), so the form can put the message on its field and
the worker can refuse the plan with it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from django.conf import settings
from django.db.models import QuerySet

from benchmarks.models import Checkpoint, Endpoint, Node, Runtime, Workload
from runner.schema.engine_config import EngineConfig
from runner.schema.flags import check_code_loading, check_lora_sources, check_model_source
from runner.schema.plan import TOKEN_ID_KINDS, SweepPlan
from runner.workloads import conversations
from runner.workloads.prompts import WorkloadError
from runner.workloads.traces import check_source

# A workload of its own (not a preset) gives each of these.
CUSTOM_WORKLOAD_REQUIRED = (
    "prompt_source", "input_tokens_min", "input_tokens_max", "output_tokens", "request_count",
    "temperature", "endpoint", "load_shape",
)  # fmt: skip


class Problem(NamedTuple):
    """A rule a launch breaks: what is at fault, and the sentence that says why."""

    about: str
    message: str


def launchable_checkpoints() -> QuerySet[Checkpoint]:
    """Only an approved checkpoint is launched: its weights run on a GPU node."""
    return Checkpoint.objects.filter(approved=True)


def launchable_runtimes() -> QuerySet[Runtime]:
    """An approved vLLM runtime: the runner launches only vLLM; other engines' runs are imported."""
    return Runtime.objects.filter(approved=True, engine__in=Runtime.LAUNCHABLE)


def is_launchable_checkpoint(checkpoint: Checkpoint) -> bool:
    return launchable_checkpoints().filter(pk=checkpoint.pk).exists()


def is_launchable_runtime(runtime: Runtime) -> bool:
    return launchable_runtimes().filter(pk=runtime.pk).exists()


def model_source_problem(model: str) -> str | None:
    """The model must be one this deployment may load (HEADROOM_MODEL_DIRS)."""
    try:
        check_model_source(model, settings.HEADROOM_MODEL_DIRS)
    except ValueError as exc:
        return str(exc)
    return None


def code_loading_problem(configs: list[EngineConfig], *, trusted: bool) -> str | None:
    """Only a trusted checkpoint may run flags that load code or read files on the node, and
    LoRA adapters are read only from where models may be (HEADROOM_MODEL_DIRS, or the hub);
    the first config that breaks a rule is named."""
    for config in configs:
        try:
            check_code_loading(config.extra_args, trusted=trusted)
            check_lora_sources(config.extra_args, settings.HEADROOM_MODEL_DIRS)
        except ValueError as exc:
            return str(exc)
    return None


def node_problems(
    node: Node | None, runtime: Runtime | None, replicas: int | None
) -> list[Problem]:
    """The replicas must fit the node's GPUs, and a node that starts engines from an image needs
    a runtime with one."""
    problems: list[Problem] = []
    if node and replicas and replicas > node.max_replicas():
        most = node.max_replicas()
        problems.append(Problem("replicas", f"{node.queue} has {most} GPU(s): at most that many."))
    if node and runtime and node.launch_style == "docker" and not runtime.image:
        problems.append(
            Problem("runtime", f"{node.queue} starts engines from an image; pick one with it.")
        )
    return problems


def gpus_problem(
    node: Node | None, replicas: int | None, configs: list[EngineConfig]
) -> str | None:
    """Every config's replicas must fit the node: the widest tensor-parallel one decides."""
    tp = max(config.tensor_parallel_size for config in configs)
    if not node or not node.gpu_count or not replicas:
        return None
    if replicas * tp > node.gpu_count:
        return (
            f"{replicas} replica(s) x {tp} GPUs each need {replicas * tp} GPUs; "
            f"{node.queue} has {node.gpu_count}."
        )
    return None


def custom_workload_problems(values: dict[str, Any]) -> list[Problem]:
    """What a workload of its own must agree on, given every one of CUSTOM_WORKLOAD_REQUIRED."""
    problems: list[Problem] = []
    if values["input_tokens_max"] < values["input_tokens_min"]:
        problems.append(Problem("input_tokens_max", "Must be at least the minimum input tokens."))
    if values["thinking"] and values["endpoint"] != "chat":
        problems.append(
            Problem("thinking", "Thinking is a chat template switch: use the chat endpoint.")
        )
    if values["prompt_source"] == "dataset" and not values["dataset_path"]:
        problems.append(Problem("dataset_path",
                                "A dataset workload needs a JSONL file from the data directory."))
    return problems + file_workload_problems(values)


def file_workload_problems(values: dict[str, Any]) -> list[Problem]:
    """A trace or length log needs its file and sends token ids (completions); a conversation
    file is replayed on the chat endpoint; a trace load replays a trace's times."""
    problems: list[Problem] = []
    source = values["prompt_source"]
    if source in TOKEN_ID_KINDS:
        if not values["dataset_path"]:
            problems.append(Problem("dataset_path", "A trace or request-length log workload "
                                                    "needs its file from the data directory."))
        if values["endpoint"] != Workload.Endpoint.COMPLETIONS:
            problems.append(Problem("endpoint", "Trace and request-length prompts are token ids: "
                                                "use /v1/completions."))
    if source == Workload.PromptSource.CONVERSATION:
        if not values["dataset_path"]:
            problems.append(Problem("dataset_path", "A conversation workload needs its JSONL "
                                                    "file from the data directory."))
        if values["endpoint"] != Workload.Endpoint.CHAT:
            problems.append(Problem("endpoint", "Conversations are replayed as chat messages (the "
                                                "conversation so far, then the next user turn): "
                                                "use /v1/chat/completions."))
    if source != Workload.PromptSource.TRACE:
        if values["trace_span_s"] is not None:
            problems.append(Problem("trace_span_s", "A span is of a trace's time: leave this "
                                                    "blank, or choose a trace as the prompt "
                                                    "source."))
        if values["trace_longer"] != Workload.TraceLonger.TRUNCATE:
            problems.append(Problem("trace_longer", "Only a trace workload can be longer than a "
                                                    "load: leave the default."))
    turns_max = values["conversation_turns_max"]
    if turns_max is not None and source != Workload.PromptSource.CONVERSATION:
        problems.append(Problem("conversation_turns_max", "Turns are capped only in a "
                                                          "conversation workload: leave this "
                                                          "blank."))
    if values["load_shape"] == Workload.LoadShape.TRACE and source != "trace":
        problems.append(Problem("load_shape", "Trace replay sends at a trace's own times: choose "
                                              "a trace as the prompt source."))
    return problems


def parity_problem(workload: Workload) -> Problem | None:
    """Outputs kept for parity are compared only under greedy decoding."""
    if workload.keep_outputs and workload.temperature != 0:
        return Problem("keep_outputs", "Outputs are compared between points only at "
                                       "temperature 0 (greedy decoding).")
    return None


def source_problem(plan: SweepPlan) -> str | None:
    """A trace, length log or conversation file is read now, as the worker will read it (the
    node has the same data directory): a bad row or a file too short for a load is refused."""
    try:
        check_source(plan.workload, settings.HEADROOM_DATA_DIR, plan.loads)
        conversations.check_conversations(plan.workload, settings.HEADROOM_DATA_DIR, plan.loads)
    except WorkloadError as exc:
        return f"{exc}."
    return None


# -- a run against a registered endpoint --------------------------------------------------------


def endpoint_engine_configs() -> list[EngineConfig]:
    """An endpoint runs its own settings: one blank config (its own are recorded as it reports
    them)."""
    return [EngineConfig()]


# An endpoint is one server.
ENDPOINT_REPLICAS = 1


def endpoint_replicas_problem(endpoint: Endpoint, replicas: int | None) -> str | None:
    if replicas not in (None, ENDPOINT_REPLICAS):
        return f"{endpoint.name} is one server: 1 replica."
    return None
