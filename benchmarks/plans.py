"""Turn the dashboard's rows into the runner's SweepPlan (runner.schema), the one thing it runs."""

from __future__ import annotations

from typing import Any

from benchmarks.models import Checkpoint, Node, Runtime, Workload
from runner import schema


def workload_spec(workload: Workload) -> schema.WorkloadSpec:
    extra_body: dict[str, Any] = {}
    if workload.endpoint == Workload.Endpoint.CHAT:
        # Qwen3-style switch; sent explicitly either way so the request says what it asked for.
        extra_body["chat_template_kwargs"] = {"enable_thinking": workload.thinking}
    return schema.WorkloadSpec(
        kind=workload.prompt_source,
        input_tokens_min=workload.input_tokens_min,
        input_tokens_max=workload.input_tokens_max,
        output_tokens=workload.output_tokens,
        temperature=workload.temperature,
        ignore_eos=workload.ignore_eos,
        endpoint=workload.endpoint,
        stream=workload.stream,
        extra_body=extra_body,
        dataset_path=workload.dataset_path or None,
    )


def load_specs(workload: Workload, levels: list[float]) -> list[schema.LoadSpec]:
    """One LoadSpec per level. A level is the request count of a burst, the concurrency of a
    closed loop, or the rate (requests/s) of an open loop; the last two send request_count."""
    shape = workload.load_shape
    if shape == Workload.LoadShape.BURST:
        return [schema.LoadSpec(shape="burst", num_requests=int(n)) for n in levels]
    if shape == Workload.LoadShape.CONCURRENCY:
        return [
            schema.LoadSpec(
                shape="concurrency", num_requests=workload.request_count, concurrency=int(c)
            )
            for c in levels
        ]
    return [
        schema.LoadSpec(shape="rate", num_requests=workload.request_count, rate=rate)
        for rate in levels
    ]


def engine_launch(node: Node, runtime: Runtime) -> schema.EngineLaunch:
    image = None
    if runtime.image:
        image = f"{runtime.image}@{runtime.digest}" if runtime.digest else runtime.image
    gpus = list(range(node.gpu_count)) if node.gpu_count else None
    return schema.EngineLaunch(style=node.launch_style, image=image, gpus=gpus)


def build_plan(
    *,
    name: str,
    node: Node,
    runtime: Runtime,
    checkpoint: Checkpoint,
    workload: Workload,
    engine_configs: list[schema.EngineConfig],
    load_levels: list[float],
    repeats: int,
    replicas: int,
    goodput: dict[str, float] | None = None,
) -> schema.SweepPlan:
    """Raises pydantic.ValidationError when the combination is not runnable."""
    if checkpoint.kv_cache_dtype:
        # The checkpoint row says which KV dtype was served; every config runs with it.
        engine_configs = [
            c.model_copy(update={"kv_cache_dtype": c.kv_cache_dtype or checkpoint.kv_cache_dtype})
            for c in engine_configs
        ]
    return schema.SweepPlan(
        name=name,
        checkpoint=schema.Checkpoint(
            model=checkpoint.repo,
            revision=checkpoint.revision or None,
            precision=checkpoint.precision or None,
        ),
        launch=engine_launch(node, runtime),
        engine_configs=engine_configs,
        loads=load_specs(workload, load_levels),
        workload=workload_spec(workload),
        repeats=repeats,
        replicas=replicas,
        goodput=goodput or {},
    )


def points_total(plan: schema.SweepPlan) -> int:
    return len(plan.engine_configs) * len(plan.loads) * plan.repeats
