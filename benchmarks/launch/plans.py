"""The dashboard's rows made into the runner's SweepPlan (runner.schema), the one thing it runs,
and the worker's check of a stored plan before it runs one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import pydantic

from benchmarks.launch import launch_rules
from benchmarks.models import Benchmark, Checkpoint, Endpoint, Node, Runtime, Workload
from runner.schema.engine_config import Checkpoint as CheckpointSpec
from runner.schema.engine_config import EngineConfig, EngineLaunch, LaunchStyle
from runner.schema.plan import Endpoint as EndpointKind
from runner.schema.plan import (
    LoadSpec,
    LoraShare,
    QualitySpec,
    StabilitySpec,
    SweepPlan,
    TraceLonger,
    WorkloadKind,
    WorkloadSpec,
)
from runner.schema.search_record import SearchSpec
from runner.sweep import plan_points


def workload_spec(workload: Workload) -> WorkloadSpec:
    extra_body: dict[str, Any] = {}
    if workload.endpoint == Workload.Endpoint.CHAT:
        # Qwen3-style switch; sent explicitly either way so the request says what it asked for.
        extra_body["chat_template_kwargs"] = {"enable_thinking": workload.thinking}
    # The model's choices are the schema's literals; WorkloadSpec checks the values again.
    return WorkloadSpec(
        kind=cast(WorkloadKind, workload.prompt_source),
        input_tokens_min=workload.input_tokens_min,
        input_tokens_max=workload.input_tokens_max,
        output_tokens=workload.output_tokens,
        temperature=workload.temperature,
        ignore_eos=workload.ignore_eos,
        endpoint=cast(EndpointKind, workload.endpoint),
        stream=workload.stream,
        extra_body=extra_body,
        dataset_path=workload.dataset_path or None,
        keep_outputs=workload.keep_outputs,
        trace_span_s=workload.trace_span_s,
        trace_longer=cast(TraceLonger, workload.trace_longer),
        conversation_turns_max=workload.conversation_turns_max,
        lora_split=lora_shares(workload),
    )


def lora_shares(workload: Workload) -> list[LoraShare]:
    return [LoraShare.model_validate(share) for share in workload.lora_split]


def load_specs(workload: Workload, levels: list[float]) -> list[LoadSpec]:
    """One LoadSpec per level. A level is the request count of a burst, the concurrency of a
    closed loop, the rate (requests/s) of an open loop, or the speed factor of a trace replay;
    the last three send request_count."""
    shape = workload.load_shape
    if shape == Workload.LoadShape.BURST:
        return [LoadSpec(shape="burst", num_requests=int(n)) for n in levels]
    if shape == Workload.LoadShape.CONCURRENCY:
        return [
            LoadSpec(
                shape="concurrency", num_requests=workload.request_count, concurrency=int(c)
            )
            for c in levels
        ]
    if shape == Workload.LoadShape.TRACE:
        return [
            LoadSpec(shape="trace", num_requests=workload.request_count, speed=speed)
            for speed in levels
        ]
    return [
        LoadSpec(shape="rate", num_requests=workload.request_count, rate=rate)
        for rate in levels
    ]


def engine_launch(node: Node, runtime: Runtime) -> EngineLaunch:
    image = None
    if runtime.image:
        image = f"{runtime.image}@{runtime.digest}" if runtime.digest else runtime.image
    gpus = list(range(node.gpu_count)) if node.gpu_count else None
    # The model's choices are LaunchStyle; EngineLaunch checks the value again.
    style = cast(LaunchStyle, node.launch_style)
    # The node's dcgm-exporter, for GPU telemetry where the worker has no NVML. Part of the
    # launch, so the worker's field-by-field check refuses a stored plan naming another address.
    dcgm = node.dcgm_exporter_url or None
    return EngineLaunch(style=style, image=image, gpus=gpus, dcgm_exporter_url=dcgm)


def checkpoint_spec(checkpoint: Checkpoint) -> CheckpointSpec:
    return CheckpointSpec(
        model=checkpoint.repo,
        revision=checkpoint.revision or None,
        precision=checkpoint.precision or None,
        trusted=checkpoint.trusted,
    )


def endpoint_launch(endpoint: Endpoint) -> EngineLaunch:
    """Attach to the endpoint's address: nothing is started, so no image, GPUs or environment."""
    return EngineLaunch(style="attach", base_url=endpoint.base_url)


def endpoint_checkpoint_spec(endpoint: Endpoint) -> CheckpointSpec:
    """The checkpoint the endpoint is registered as serving, under the name it answers to."""
    return checkpoint_spec(endpoint.checkpoint).model_copy(
        update={"served_model_name": endpoint.served_model}
    )


@dataclass(frozen=True, kw_only=True)
class LaunchRequest:
    """What a launch asks for once its fields are checked: the rows and the choices its plan
    is built from (build_plan), the launch form's one product."""

    name: str
    node: Node
    runtime: Runtime
    checkpoint: Checkpoint
    workload: Workload
    engine_configs: list[EngineConfig]
    load_levels: list[float]
    repeats: int
    replicas: int
    goodput: dict[str, float] = field(default_factory=dict)
    # A registered endpoint the run attaches to instead of starting engines.
    endpoint: Endpoint | None = None
    search: SearchSpec | None = None
    stability: StabilitySpec = field(default_factory=StabilitySpec)
    # The quality set's file name, checked by the form (None: no quality set).
    quality_path: str | None = None


def build_plan(request: LaunchRequest) -> SweepPlan:
    """Raises pydantic.ValidationError when the combination is not runnable.

    With an endpoint the plan attaches to it: its address, and its checkpoint under its served
    model name; the engine configs are the caller's (one blank config: the server runs its own
    settings, recorded as it reports them) and no KV dtype is added to them.
    """
    engine_configs, checkpoint = request.engine_configs, request.checkpoint
    if request.endpoint is None and checkpoint.kv_cache_dtype:
        # The checkpoint row says which KV dtype was served; every config runs with it.
        engine_configs = [
            c.model_copy(update={"kv_cache_dtype": c.kv_cache_dtype or checkpoint.kv_cache_dtype})
            for c in engine_configs
        ]
    plan = SweepPlan(
        name=request.name,
        checkpoint=(checkpoint_spec(checkpoint) if request.endpoint is None
                    else endpoint_checkpoint_spec(request.endpoint)),
        launch=(engine_launch(request.node, request.runtime) if request.endpoint is None
                else endpoint_launch(request.endpoint)),
        engine_configs=engine_configs,
        loads=load_specs(request.workload, request.load_levels),
        workload=workload_spec(request.workload),
        repeats=request.repeats,
        replicas=request.replicas,
        goodput=request.goodput,
        search=request.search,
        stability=request.stability,
    )
    if request.quality_path:
        plan = plan.model_copy(update={"quality": QualitySpec(path=request.quality_path)})
    return plan


def points_total(plan: SweepPlan) -> int:
    """The grid's points (control points included); a search measures at most the grid's, or
    its budget."""
    if plan.search is None:
        return len(plan_points(plan))
    grid = len(plan.engine_configs) * len(plan.loads) * plan.repeats
    budget = plan.search.point_budget if plan.search else None
    return min(grid, budget) if budget else grid


# ---------------------------------------------------------------------------------------------
# The worker's check of a stored plan
# ---------------------------------------------------------------------------------------------


class PlanRefused(Exception):
    """A stored plan this node's worker must not start; the message says why."""


def launchable_plan(benchmark: Benchmark, *, launch_style: str) -> SweepPlan:
    """The benchmark's stored plan, parsed and checked again on the node before anything starts.

    The plan is data in the database, not a decision: whoever can write it could otherwise pick
    the model, the flags, the image and the engines' environment on this GPU node. So it must
    parse (the schema refuses flags, environment and model ids it would not accept from the
    form), its checkpoint and runtime must still be approved, a code-loading flag needs the
    checkpoint to be trusted now, and the launch must be what this node and the approved
    runtime give (style, image, environment). Raises PlanRefused naming the first problem.

    A run against a registered endpoint is checked as an attach plan (attach_plan); an attach
    plan without one is refused: it would point this node's worker at an address nobody
    registered.
    """
    if benchmark.endpoint_id is not None:
        return attach_plan(benchmark)
    if _stored_style(benchmark.plan) == "attach":
        raise PlanRefused("the stored plan attaches to a server, but the run names no registered "
                          "endpoint: only a registered endpoint is measured without an engine")
    checkpoint, runtime, node = benchmark.checkpoint, benchmark.runtime, benchmark.node
    if checkpoint is None or not launch_rules.is_launchable_checkpoint(checkpoint):
        raise PlanRefused(f"checkpoint {checkpoint} is not approved for launching")
    if runtime is None or not launch_rules.is_launchable_runtime(runtime):
        raise PlanRefused(f"runtime {runtime} is not an approved vLLM runtime")
    if node is None:
        raise PlanRefused("the run names no node")
    try:
        plan = SweepPlan.model_validate(benchmark.plan)
        expected = engine_launch(node, runtime).model_copy(update={"style": launch_style})
    except pydantic.ValidationError as exc:
        raise PlanRefused(f"the stored plan is not valid: {pydantic_message(exc)}") from None
    except ValueError as exc:
        raise PlanRefused(str(exc)) from None
    problem = launch_rules.model_source_problem(plan.checkpoint.model) or (
        launch_rules.code_loading_problem(plan.engine_configs, trusted=checkpoint.trusted)
    )
    if problem:
        raise PlanRefused(problem)
    _check_same_checkpoint(plan.checkpoint, checkpoint_spec(checkpoint))
    _check_same_launch(plan.launch, expected)
    return plan


def _stored_style(plan: Any) -> Any:
    """The launch style a stored plan asks for, read before the plan is validated."""
    launch = plan.get("launch") if isinstance(plan, dict) else None
    return launch.get("style") if isinstance(launch, dict) else None


def attach_plan(benchmark: Benchmark) -> SweepPlan:
    """The stored plan of a run against a registered endpoint, checked before anything is sent.

    No weights are loaded and no engine starts, so the checkpoint and runtime need no approval
    (they record what the endpoint is registered as serving). What must hold is that the plan
    does exactly what the registration says: attach to the endpoint's current address (an
    address changed since the launch refuses the run), from the endpoint's node, one replica,
    one blank engine config, the endpoint's checkpoint under its served model name.
    """
    endpoint = benchmark.endpoint
    assert endpoint is not None
    if benchmark.node_id != endpoint.node_id:
        raise PlanRefused(f"the run's node is not {endpoint.node.queue}, the node registered as "
                          f"reaching the endpoint {endpoint.name}")
    try:
        plan = SweepPlan.model_validate(benchmark.plan)
    except pydantic.ValidationError as exc:
        raise PlanRefused(f"the stored plan is not valid: {pydantic_message(exc)}") from None
    expected = endpoint_launch(endpoint)
    if plan.launch != expected:
        raise PlanRefused(f"the stored plan's launch is not attach to {endpoint.base_url}, the "
                          f"address registered for the endpoint {endpoint.name}")
    if plan.replicas != launch_rules.ENDPOINT_REPLICAS:
        raise PlanRefused("an endpoint is one server: the plan has one replica")
    if plan.engine_configs != launch_rules.endpoint_engine_configs():
        raise PlanRefused("an endpoint runs its own settings: the plan's one engine config is "
                          "blank")
    approved = endpoint_checkpoint_spec(endpoint)
    _check_same_checkpoint(plan.checkpoint, approved)
    asked = plan.checkpoint.served_model_name
    if asked != approved.served_model_name:
        raise PlanRefused(f"the stored plan asks for the model {asked!r}, not "
                          f"{approved.served_model_name!r}, the endpoint's served model")
    return plan


def _check_same_checkpoint(stored: CheckpointSpec, approved: CheckpointSpec) -> None:
    for name in ("model", "revision"):
        if getattr(stored, name) != getattr(approved, name):
            raise PlanRefused(
                f"the stored plan's checkpoint {name} {getattr(stored, name)!r} is not the "
                f"approved checkpoint's {getattr(approved, name)!r}"
            )


def _check_same_launch(stored: EngineLaunch, expected: EngineLaunch) -> None:
    # gpus follow the node's GPU count at launch time and only choose among this node's GPUs.
    for name in EngineLaunch.model_fields:
        if name != "gpus" and getattr(stored, name) != getattr(expected, name):
            raise PlanRefused(
                f"the stored plan's launch {name} {getattr(stored, name)!r} is not this node's "
                f"{getattr(expected, name)!r} (from the node and the approved runtime)"
            )


def pydantic_message(exc: pydantic.ValidationError) -> str:
    """Every error of a validation, as 'where: message; ...'."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)
