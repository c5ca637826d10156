"""Ground truth from real engines: one sweep per bottleneck class, each set up so that one limit
binds by construction (issue 27, item 7).

Every class here is the one definition its recorder (record.py), its live test
(tests/runner/test_ground_truth_engine.py) and any accuracy test read: the plan's pieces, the
CPUs to keep busy, and the verdict kind expected at each (engine config label, load label)
point. A point labelled None is a companion whose verdict is not known by construction; it is
measured, never scored.

The engines serve the tiny model on vLLM's CPU backend, whose KV blocks hold 128 tokens. Three
classes run on the config many engine tests already start (SHARED_CONFIG), so a test session
attaches to one engine for them; the token budget, the KV cache and the step time need engines
of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

from analysis.convert import at_cap_share, load_fell_short
from runner.schema.engine_config import Checkpoint, EngineConfig, EngineLaunch
from runner.schema.plan import ClientSpec, LoadSpec, StabilitySpec, SweepPlan, WorkloadSpec
from runner.schema.result import PointResult

# The kinds a ground-truth point may be labelled with: the limits a class builds to bind.
KINDS = ("scheduler_cap", "token_budget", "kv_capacity", "step_time", "underloaded",
         "client_bound")

SHARED_CONFIG = EngineConfig(max_num_seqs=4, max_model_len=1024)
SAMPLE_INTERVAL_S = 0.1
CLIENT = ClientSpec(request_timeout_s=180, stall_timeout_s=90)


@dataclass(frozen=True)
class GroundTruthClass:
    """One class: a sweep whose labelled points a known limit binds, and a short live version.

    labels: (config label, load label) -> expected kind, or None for an unscored companion.
    live_loads: the loads the live test runs on the first config, a subset of loads.
    hog_cpus: CPUs kept busy while the points run, one spinning process per entry, each at
    niceness hog_nice (below 0 needs root).
    """

    name: str
    engine_configs: tuple[EngineConfig, ...]
    loads: tuple[LoadSpec, ...]
    workload: WorkloadSpec
    labels: Mapping[tuple[str, str], str | None]
    live_loads: tuple[LoadSpec, ...]
    client: ClientSpec
    hog_cpus: tuple[int, ...] = ()
    hog_nice: int = 0

    def plan(self, model: str, *, repeats: int = 1) -> SweepPlan:
        """The recorded sweep: every config and load on CPU engines Headroom starts."""
        return SweepPlan(
            name=f"ground-truth-{self.name}",
            checkpoint=Checkpoint(model=model, served_model_name="tiny"),
            launch=EngineLaunch(style="cpu", startup_timeout_s=400),
            engine_configs=list(self.engine_configs),
            loads=list(self.loads),
            workload=self.workload,
            client=self.client,
            repeats=repeats,
            sample_interval_s=SAMPLE_INTERVAL_S,
            # The recordings label each (config, load); a fresh start's draw is no class's.
            stability=StabilitySpec(end_control=False),
        )

    def live_plan(self, base_url: str) -> SweepPlan:
        """The live test's sweep: the live loads against an engine already serving the first
        config (an attached server records no flags, so the test puts the config back)."""
        return SweepPlan(
            name=f"ground-truth-{self.name}-live",
            checkpoint=Checkpoint(model="tiny", served_model_name="tiny"),
            launch=EngineLaunch(style="attach", base_url=base_url),
            engine_configs=[EngineConfig()],
            loads=list(self.live_loads),
            workload=self.workload,
            client=self.client,
            sample_interval_s=SAMPLE_INTERVAL_S,
        )

    def expected_kind(self, config_label: str, load_label: str) -> str | None:
        """The kind the point must be judged; None: a companion, not scored. KeyError for a
        point the class does not define."""
        return self.labels[(config_label, load_label)]


def _labelled(
    configs: tuple[EngineConfig, ...], loads: tuple[LoadSpec, ...],
    kinds: Mapping[int, str | None], unscored_loads: tuple[int, ...] = (),
) -> dict[tuple[str, str], str | None]:
    """Labels for every config x load: config i's points all get kinds[i], but the loads at
    unscored_loads, whose verdict the construction does not decide, get None."""
    return {(c.label(), load.label()): None if j in unscored_loads else kinds[i]
            for i, c in enumerate(configs) for j, load in enumerate(loads)}


def _random(low: int, high: int, out: int, seed: int) -> WorkloadSpec:
    return WorkloadSpec(kind="random", input_tokens_min=low, input_tokens_max=high,
                        output_tokens=out, seed=seed)


def _burst(n: int) -> LoadSpec:
    return LoadSpec(shape="burst", num_requests=n)


def _closed(concurrency: int, n: int) -> LoadSpec:
    return LoadSpec(shape="concurrency", concurrency=concurrency, num_requests=n)


def _class(name: str, configs: tuple[EngineConfig, ...], loads: tuple[LoadSpec, ...],
           workload: WorkloadSpec, kinds: Mapping[int, str | None], live: tuple[int, ...],
           client: ClientSpec = CLIENT, hog_cpus: tuple[int, ...] = (),
           hog_nice: int = 0, unscored_loads: tuple[int, ...] = ()) -> GroundTruthClass:
    return GroundTruthClass(
        name=name, engine_configs=configs, loads=loads, workload=workload,
        labels=_labelled(configs, loads, kinds, unscored_loads),
        live_loads=tuple(loads[i] for i in live),
        client=client, hog_cpus=hog_cpus, hog_nice=hog_nice,
    )


SCHEDULER_CAP = _class(
    "scheduler_cap",
    # The companion runs the same queue with 8x the cap: it admits the queue, output rises.
    (SHARED_CONFIG, EngineConfig(max_num_seqs=32, max_model_len=1024)),
    (_burst(32), _burst(64)),
    _random(20, 24, 256, seed=2701),
    {0: "scheduler_cap", 1: None},
    live=(0,),
)

TOKEN_BUDGET = _class(
    "token_budget",
    # ~930-token prompts in chunks of at most 32 tokens a step: one prompt is prefilled at a
    # time, so running stays far below the cap of 16 while the queue waits for the budget. No
    # prefix cache: the repeats send the same prompts, which would skip their prefill. vLLM
    # 0.32 observes a prompt's tokens in its step histogram at the step that finishes the
    # prompt, and steps without output not at all, so mean tokens per step reads near 58, above
    # the budget itself.
    (EngineConfig(max_num_seqs=16, max_num_batched_tokens=32, max_model_len=1024,
                  enable_prefix_caching=False),),
    (_burst(48), _burst(96)),
    _random(900, 960, 16, seed=2702),
    {0: "token_budget"},
    live=(0,),
)

KV_CAPACITY = _class(
    "kv_capacity",
    # 16 blocks of 128 tokens hold 2048 tokens: the burst is admitted on one block each, then
    # outgrows the cache as it decodes, and vLLM preempts to free blocks.
    (EngineConfig(max_num_seqs=32, max_model_len=1024, num_gpu_blocks_override=16),),
    (_burst(12), _burst(24)),
    _random(20, 24, 512, seed=2703),
    {0: "kv_capacity"},
    live=(0,),
)

STEP_TIME = _class(
    "step_time",
    # Caps far above every load: nothing waits, and the engine's steps (and the API server's
    # per-token work) are all that decide output; more load in flight adds none. The step time
    # shows against a lower level of the same ladder, so the first level (burst 64) is a
    # companion: by itself it reads as an engine with room.
    (EngineConfig(max_num_seqs=512, max_model_len=1024),),
    (_burst(64), _burst(128), _burst(256)),
    _random(20, 24, 384, seed=2704),
    {0: "step_time"},
    # Live: 64 -> 256, four times the batch for about the same output, a margin the noisy
    # 64 -> 128 step does not always keep on a busy host.
    live=(0, 2),
    unscored_loads=(0,),
)

UNDERLOADED = _class(
    "underloaded",
    # At most 1 or 2 requests in flight against a cap of 4: nothing can wait.
    (SHARED_CONFIG,),
    (_closed(1, 4), _closed(2, 8)),
    _random(20, 24, 512, seed=2705),
    {0: "underloaded"},
    live=(0, 1),
)

# The client worker is pinned to CPU 1 (the CPU engine's worker is bound to CPU 0, runner.engine
# _cpu_env) and four spinning processes at niceness -15 share CPU 1 with it: at niceness 0 the
# scheduler wakes the client ahead of them. A closed loop below the cap of short requests (16
# tokens, about a tenth of a second): each next request waits for the starved client to read
# the last one's end, so the engine holds fewer requests than the loop means to keep.
STARVED_CLIENT = _class(
    "client_bound",
    (SHARED_CONFIG,),
    (_closed(2, 64), _closed(3, 96)),
    _random(20, 24, 16, seed=2706),
    {0: "client_bound"},
    live=(0,),
    client=ClientSpec(request_timeout_s=180, stall_timeout_s=90, cpus=[1]),
    hog_cpus=(1,) * 4,
    hog_nice=-15,
)

CLASSES: dict[str, GroundTruthClass] = {
    c.name: c
    for c in (SCHEDULER_CAP, TOKEN_BUDGET, KV_CAPACITY, STEP_TIME, UNDERLOADED, STARVED_CLIENT)
}

RECORDINGS = Path(__file__).resolve().parent / "recordings"


def expected_kind(class_name: str, config_label: str, load_label: str) -> str | None:
    """The kind a point of the named class must be judged (None: not scored)."""
    return CLASSES[class_name].expected_kind(config_label, load_label)


# A binding scheduler cap holds running there for most of the time requests wait
# (analysis.verdicts.PINNED_SHARE); a full token budget fills most of each step.
AT_CAP_SHARE_MIN = 0.5
STEP_FILL_MIN = 0.9
KV_FULL = 0.95
# A starved client gets little of its CPU: below this share of a core it was kept waiting.
STARVED_CPU_MAX = 0.5
# Output that grows by less than this between two load levels is flat.
FLAT_GAIN_PCT = 5.0


def evidence_problems(gt: GroundTruthClass, points: Sequence[PointResult]) -> list[str]:
    """What in the points' own engine and client records contradicts the class's construction
    (empty: the limit binds as built). Points carry the engine config they ran with."""
    problems = []
    for p in points:
        kind = gt.expected_kind(p.engine_config.label(), p.load.label())
        if kind is not None:
            problems += [f"{p.key}: {why}" for why in _point_problems(kind, p)]
    if gt.name == "step_time":
        problems += _flat_output_problems(gt, points)
    if gt.name == "scheduler_cap":
        problems += _raised_cap_problems(gt, points)
    return problems


def _point_problems(kind: str, p: PointResult) -> list[str]:
    q, cap, budget = p.queue, p.engine_config.max_num_seqs, p.engine_config.max_num_batched_tokens
    running, waiting = q.peak_running or 0, q.mean_waiting or 0
    kv_full = (q.peak_kv_usage or 0) >= KV_FULL or (q.preemptions or 0) > 0
    out = []
    if not p.metrics.valid:
        out.append(f"the run is invalid: {p.notes}")
    if kind == "scheduler_cap":
        share = at_cap_share(q.running_while_waiting_s, cap)
        if cap is None or running < cap or share is None or share <= AT_CAP_SHARE_MIN:
            out.append(f"running not pinned at the cap {cap}: peak {running}, share {share}")
        if waiting < 1:
            out.append(f"too little waits: mean {waiting}")
    elif kind == "token_budget":
        steps = q.mean_tokens_per_step or 0
        if budget is None or steps < STEP_FILL_MIN * budget:
            out.append(f"steps average {steps} tokens of a {budget}-token budget")
        if cap is None or running >= cap:
            out.append(f"running reached the cap {cap}")
        if waiting < 1 or kv_full:
            out.append(f"mean waiting {waiting}, KV full {kv_full}")
    elif kind == "kv_capacity":
        if not kv_full:
            out.append(f"KV never full: peak {q.peak_kv_usage}, preemptions {q.preemptions}")
    elif kind in ("step_time", "underloaded"):
        if cap is None or running >= cap or not _all_admitted(p) or kv_full:
            out.append(f"the engine was not below its limits: peak running {running} of {cap}, "
                       f"mean waiting {waiting}, KV full {kv_full}")
        if kind == "underloaded" and (q.peak_waiting or 0) > 0:
            out.append(f"requests waited: peak {q.peak_waiting}")
    elif kind == "client_bound":
        if not p.client.saturated:
            out.append(f"the client-health flag is not set: {p.client}")
        if not load_fell_short(p):
            out.append(f"the engine held the load the point names: running {q.mean_running}, "
                       f"waiting {q.mean_waiting} of {p.load.label()}")
        if (p.client.cpu_fraction or 0) > STARVED_CPU_MAX:
            out.append(f"the client was busy itself, not starved: {p.client.cpu_fraction}")
    return out


def _all_admitted(p: PointResult) -> bool:
    """Nothing was held back: a burst ran whole at once (requests wait only while the engine
    takes them in, which on a slow host reads as a mean near one); any other load kept under
    one request waiting on average."""
    if p.load.shape == "burst":
        sent = min(p.load.num_requests, p.load.max_concurrency or p.load.num_requests)
        return (p.queue.peak_running or 0) >= sent
    return (p.queue.mean_waiting or 0) < 1


def _gain_pct(before: float, after: float) -> float:
    return (after - before) / before * 100 if before > 0 else float("inf")


def _flat_output_problems(gt: GroundTruthClass, points: Sequence[PointResult]) -> list[str]:
    """Output tok/s gains less than FLAT_GAIN_PCT from one labelled load level to the next, per
    config and repeat (repeats are their own ladders, as in the verdicts)."""
    ladders: dict[tuple[str, int], list[PointResult]] = {}
    for p in points:
        if gt.expected_kind(p.engine_config.label(), p.load.label()) == "step_time":
            ladders.setdefault((p.engine_config.label(), p.repeat), []).append(p)
    out = []
    for ladder in ladders.values():
        ladder.sort(key=lambda p: p.load.offered_concurrency())
        for a, b in pairwise(ladder):
            gain = _gain_pct(a.metrics.output_throughput, b.metrics.output_throughput)
            if gain >= FLAT_GAIN_PCT:
                out.append(f"{b.key}: output grew {gain:.1f}% over {a.load.label()}")
    return out


def _raised_cap_problems(gt: GroundTruthClass, points: Sequence[PointResult]) -> list[str]:
    """The companion with the higher cap must raise output at the same load and repeat."""
    capped = gt.engine_configs[0].label()
    by_point = {(p.engine_config.label(), p.load.label(), p.repeat): p for p in points}
    out = []
    for (label, load, repeat), p in by_point.items():
        base = by_point.get((capped, load, repeat))
        if label == capped or base is None:
            continue
        gain = _gain_pct(base.metrics.output_throughput, p.metrics.output_throughput)
        if gain < FLAT_GAIN_PCT:
            out.append(f"{p.key}: raising the cap gained only {gain:.1f}% at {load}")
    return out
