"""llm-d-benchmark's benchmark report (versions 0.1, 0.2 and 0.2.1; JSON or YAML) as Headroom
points, with the stack that served them.

A report describes one point (one stage of a sweep); a file may hold several (YAML documents
after `---`, as Headroom's own export writes them). What each version holds, and where it goes:

- counts, duration, throughputs: 0.1's metrics.requests / metrics.time / metrics.throughput,
  0.2's results.request_performance.aggregate.requests / .throughput and run.time.duration (an
  ISO 8601 duration, "PT49.9S"). Without a duration, it is completed requests over the stated
  request rate, and the point's notes say so.
- latency statistics: a report converts another tool's figures (its scenario.load names the
  tool: inference-perf, GuideLLM, vllm-benchmark, ...), so they take vLLM's names only where
  that tool computed vLLM's definitions: vllm-benchmark (vLLM's own client) and headroom
  (Headroom's export, runner.llm_d_export). Every statistic is also kept under the report's
  names ("latency.time_to_first_token.p99", in its units).
- the stack: each scenario.stack component (0.2) or the scenario's host and platform (0.1)
  becomes a sentence in the point's notes; the first inference engine gives the engine's name,
  version, model and accelerator, and its native args (--max-num-seqs ...) the engine config.
- server-side evidence: the engine components' observability time series (0.2.1:
  num_requests_running, num_requests_waiting, kv_cache_usage, num_preemptions, one component
  per pod) are summarised by Headroom over the point's window
  (runner.measure.sampler.summarize); without them, their aggregates (running_requests,
  waiting_requests, kv_cache_usage means and maxima; 0.1's service.batch_size and queue_size)
  are the queue. Both are labelled as llm-d's scrape (ServerEvidence).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import yaml
from pydantic import ValidationError

from runner.importer.detect import Detected
from runner.importer.llm_d_evidence import Evidence, engine_queue, instant, service_queue
from runner.importer.peers import counted_metrics, flat_figures, number, peer_point
from runner.importer.vllm_document import ImportFileError
from runner.plan_text import BoundedLoader, BoundRefused
from runner.schema.engine_config import Checkpoint, EngineConfig
from runner.schema.plan import LoadSpec, WorkloadSpec
from runner.schema.result import (
    EngineInfo,
    Hardware,
    Metrics,
    PointResult,
    Provenance,
    Window,
)

TOOL = "llm-d-benchmark"
# The load tools whose latency statistics mean what vLLM computes (module docstring).
HEADROOM = "headroom"
VLLM_DEFINED_TOOLS = frozenset({"vllm-benchmark", "vllm", "vllm bench serve", HEADROOM})
# The report's latency names -> Metrics' family names.
LATENCY_FAMILIES = {
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
    "inter_token_latency": "itl",
    "request_latency": "e2el",
}
# The report's statistics -> Metrics' (std, median) and other_percentiles' (vLLM's p{q}) names.
STATISTIC_NAMES = {"mean": "mean", "stddev": "std", "p50": "median", "p90": "p90", "p95": "p95",
                   "p99": "p99"}  # fmt: skip
OTHER_PERCENTILES = {"p0p1": "p0.1", "p1": "p1", "p5": "p5", "p10": "p10", "p25": "p25",
                     "p75": "p75", "p99p9": "p99.9"}  # fmt: skip
TO_MS = {"ms": 1.0, "ms/token": 1.0, "s": 1000.0, "s/token": 1000.0}
ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)S)?)?$"
)
# A report's values: a few hundred, plus time series of at most 256 points (llm-d's
# LLMDBENCH_METRICS_TS_MAX_POINTS) per metric and pod; an export of a long run holds more.
MAX_REPORT_DEPTH = 32
MAX_REPORT_NODES = 2_000_000


def from_report(
    document: dict[str, Any], *, source_name: str, detected: Detected
) -> Iterator[PointResult]:
    """The report's one point."""
    report = _V01(document) if detected.version == "0.1" else _V02(document)
    yield report.point(source_name, detected)


class _Report:
    """What both versions give a point; each version says where its parts are."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.notes: list[str] = []

    # Per version: the request aggregates, latency and throughput blocks, the time, the stack.
    def requests(self) -> dict[str, Any]:
        raise NotImplementedError

    def latency(self) -> dict[str, Any]:
        raise NotImplementedError

    def throughput(self) -> dict[str, Any]:
        raise NotImplementedError

    def stated_duration(self) -> float | None:
        raise NotImplementedError

    def load_tool(self) -> tuple[str, str]:
        raise NotImplementedError

    def engine(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The first inference engine's standardized part and its native args."""
        raise NotImplementedError

    def stack_sentences(self) -> list[str]:
        raise NotImplementedError

    def load_standardized(self) -> dict[str, Any]:
        raise NotImplementedError

    def queue(self, duration: float) -> Evidence:
        raise NotImplementedError

    def started_at(self) -> str:
        raise NotImplementedError

    def figures(self) -> tuple[dict[str, float], dict[str, str]]:
        raise NotImplementedError

    # Shared.
    def point(self, source: str, detected: Detected) -> PointResult:
        requests = self.requests()
        total = _whole(requests.get("total"), "requests.total", source, detected)
        failed = _whole(requests.get("failures") or 0, "requests.failures", source, detected)
        failed += _whole(requests.get("incomplete") or 0, "requests.incomplete", source, detected)
        completed = total - failed
        if completed < 0:
            detected.refuse(source, f"requests.failures ({failed}) exceed requests.total ({total})")
        duration = self._duration(completed, source, detected)
        tool, tool_version = self.load_tool()
        metrics = self._metrics(completed, failed, duration, requests, tool)
        engine_config = self._engine_config(source)
        queue, samples, evidence = self.queue(duration)
        figures, units = self.figures()
        stack = self.stack_sentences()
        notes = [
            f"load generated by {tool} {tool_version}".strip(),
            *(f"stack: {sentence}" for sentence in stack),
            *self.notes,
        ]
        if tool not in VLLM_DEFINED_TOOLS:
            notes.append(f"its latency statistics are {tool}'s, converted by llm-d-benchmark: "
                         "kept under the report's names, not vLLM's")  # fmt: skip
        point = peer_point(
            tool="llm-d-benchmark",
            version=detected.version,
            source=source,
            key=f"import:{source}:{self._uid()}",
            load=self._load(total),
            workload=self._workload(metrics),
            metrics=metrics,
            requests=[],
            figures=figures,
            units=units,
            model=None,
            started_at=self.started_at(),
            notes=notes,
        )
        point.engine_config = engine_config
        point.repeat = self._native_repeat()
        point.provenance = self._provenance(point.provenance, tool, tool_version)
        point.notes = [n for n in point.notes if not n.startswith("engine settings are not")]
        point.notes.append(
            f"engine settings from the stack's native args: {engine_config.label()}; settings "
            "not named there are unknown"
            if engine_config != EngineConfig()
            else "engine settings are not in the report's stack: shown as 'defaults'"
        )
        if queue is not None:
            point.queue = queue
            point.samples = samples
            point.window = Window(start=0.0, end=duration)
        if evidence is not None and point.peer is not None:
            point.peer.server = evidence
            point.notes.extend(evidence.notes)
        return point

    def _uid(self) -> str:
        run = self.document.get("run") or {}
        return str(run.get("uid") or "")

    def _duration(self, completed: int, source: str, detected: Detected) -> float:
        stated = self.stated_duration()
        if stated is not None:
            if stated <= 0:
                detected.refuse(source, f"its duration must be > 0, got {stated}")
            return stated
        rate = _mean(self.throughput().get("request_rate") or self.throughput().get(
            "requests_per_sec"))
        if rate and completed:
            self.notes.append("duration derived from the report's own figures: completed "
                              "requests over its request_rate (the report states no duration)")
            return completed / rate
        detected.refuse(source, "without a duration (run.time.duration) and without a request "
                        "rate to derive it from")  # fmt: skip

    def _metrics(
        self, completed: int, failed: int, duration: float, requests: dict[str, Any], tool: str
    ) -> Metrics:
        prompt = _total(requests.get("input_length"), completed)
        output = _total(requests.get("output_length"), completed)
        metrics = counted_metrics(duration=duration, completed=completed, failed=failed,
                                  prompt_tokens=prompt, output_tokens=output)  # fmt: skip
        stated = self._stated_throughputs()
        update: dict[str, Any] = {name: v for name, v in stated.items() if v is not None}
        if tool in VLLM_DEFINED_TOOLS:
            statistics, others = self._latency_statistics()
            update |= statistics
            update["other_percentiles"] = others
        return metrics.model_copy(update=update)

    def _stated_throughputs(self) -> dict[str, float | None]:
        block = self.throughput()
        return {
            "request_throughput": _mean(block.get("request_rate") or block.get("requests_per_sec")),
            "output_throughput": _mean(block.get("output_token_rate")
                                       or block.get("output_tokens_per_sec")),
            "total_token_throughput": _mean(block.get("total_token_rate")
                                            or block.get("total_tokens_per_sec")),
        }  # fmt: skip

    def _latency_statistics(self) -> tuple[dict[str, float], dict[str, float]]:
        statistics: dict[str, float] = {}
        others: dict[str, float] = {}
        for name, family in LATENCY_FAMILIES.items():
            block = self.latency().get(name)
            if not isinstance(block, dict):
                continue
            scale = TO_MS.get(str(block.get("units")))
            if scale is None:
                self.notes.append(f"latency.{name} in units {block.get('units')!r}: not read")
                continue
            for key, value in block.items():
                figure = number(value)
                if figure is None:
                    continue
                if key in STATISTIC_NAMES:
                    statistics[f"{STATISTIC_NAMES[key]}_{family}_ms"] = figure * scale
                elif key in OTHER_PERCENTILES:
                    others[f"{OTHER_PERCENTILES[key]}_{family}_ms"] = figure * scale
        return statistics, others

    def _engine_config(self, source: str) -> EngineConfig:
        _, args = self.engine()
        known = {setting.flag: setting.name for setting in EngineConfig.settings()}
        values: dict[str, Any] = {known[flag]: value for flag, value in args.items()
                                  if flag in known}  # fmt: skip
        if isinstance(args.get("extra_args"), list):  # Headroom's export keeps them so
            values["extra_args"] = [str(arg) for arg in args["extra_args"]]
        others = [str(flag) for flag in args if flag not in known and flag != "extra_args"]
        if others:
            self.notes.append("the engine's native args without a Headroom setting, kept as "
                              "the stack's: " + ", ".join(others))  # fmt: skip
        if "--tensor-parallel-size" not in args:
            standardized, _ = self.engine()
            tp = ((standardized.get("accelerator") or {}).get("parallelism") or {}).get("tp")
            if isinstance(tp, int) and tp > 0:
                values["tensor_parallel_size"] = tp
        try:
            return EngineConfig(**values)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = str(error["loc"][0]) if error["loc"] else ""
            flag = "--" + where.replace("_", "-")
            raise ImportFileError(f"{source}: the engine's native arg {flag}={args.get(flag)!r}: "
                                  f"{error['msg']}") from None  # fmt: skip

    def _provenance(self, base: Provenance | None, tool: str, tool_version: str) -> Provenance:
        standardized, _ = self.engine()
        accelerator = standardized.get("accelerator") or {}
        engine_tool = str(standardized.get("tool") or "")
        name = EngineInfo.normalize_name(engine_tool) if engine_tool in ENGINES else None
        model = (standardized.get("model") or {}).get("name")
        assert base is not None
        return base.model_copy(update={
            "hardware": Hardware(
                host=f"unknown (not recorded by {TOOL})",
                gpu_name=str(accelerator["model"]) if accelerator.get("model") else None,
                gpu_count=int(accelerator.get("count") or 0),
            ),
            "engine": EngineInfo(launch_style="attach", name=name,
                                 version=str(standardized.get("tool_version") or "") or None),
            "checkpoint": Checkpoint(model=str(model or "unknown")),
            "client_version": f"{TOOL} report {self.document.get('version')} (load: {tool} "
                              f"{tool_version})".replace(" )", ")"),
        })  # fmt: skip

    def native_config(self) -> dict[str, Any]:
        """The load's native config, when Headroom wrote it (runner.llm_d_export): the exact
        load and workload specs llm-d has no field for."""
        return {}

    def _native_repeat(self) -> int:
        repeat = self.native_config().get("repeat")
        return repeat if isinstance(repeat, int) and repeat >= 0 else 0

    def _load(self, total: int) -> LoadSpec:
        if (native := self.native_config().get("load")) is not None:
            return LoadSpec.model_validate(native)
        standardized = self.load_standardized()
        rate = number(standardized.get("rate_qps"))
        concurrency = standardized.get("concurrency")
        requests = max(total, 1)
        if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0:
            if rate is not None and rate > 0:
                return LoadSpec(shape="rate", num_requests=requests, rate=rate,
                                max_concurrency=concurrency)  # fmt: skip
            return LoadSpec(shape="concurrency", num_requests=requests, concurrency=concurrency)
        if rate is not None and rate > 0 and math.isfinite(rate):
            return LoadSpec(shape="rate", num_requests=requests, rate=rate)
        return LoadSpec(shape="burst", num_requests=requests)

    def _workload(self, metrics: Metrics) -> WorkloadSpec:
        if (native := self.native_config().get("workload")) is not None:
            return WorkloadSpec.model_validate(native)
        standardized = self.load_standardized()
        isl = standardized.get("input_seq_len") or {}
        osl = standardized.get("output_seq_len") or {}
        completed = max(metrics.completed, 1)
        mean_in = max(round(metrics.total_input_tokens / completed), 1)
        mean_out = max(round(metrics.total_output_tokens / completed), 1)
        def length(spec: dict[str, Any], bound: str, mean: int) -> int:
            return max(int(number(spec.get(bound)) or number(spec.get("value")) or mean), 1)

        return WorkloadSpec(
            kind="dataset",
            dataset_path=str(standardized.get("tool") or TOOL),
            input_tokens_min=length(isl, "min", mean_in),
            input_tokens_max=length(isl, "max", mean_in),
            output_tokens=length(osl, "max", mean_out),
            endpoint="completions",
        )


ENGINES = frozenset({"vllm", "sglang", "tensorrt-llm", "tgi"})


class _V02(_Report):
    """0.2 and 0.2.1: run, scenario.stack / .load, results."""

    def _aggregate(self) -> dict[str, Any]:
        results = self.document.get("results") or {}
        return ((results.get("request_performance") or {}).get("aggregate")) or {}

    def requests(self) -> dict[str, Any]:
        return self._aggregate().get("requests") or {}

    def latency(self) -> dict[str, Any]:
        return self._aggregate().get("latency") or {}

    def throughput(self) -> dict[str, Any]:
        return self._aggregate().get("throughput") or {}

    def _time(self) -> dict[str, Any]:
        return ((self.document.get("run") or {}).get("time")) or {}

    def stated_duration(self) -> float | None:
        return iso_duration(self._time().get("duration"))

    def started_at(self) -> str:
        return str(self._time().get("start") or "unknown (not in the report)")

    def _scenario(self) -> dict[str, Any]:
        return self.document.get("scenario") or {}

    def load_standardized(self) -> dict[str, Any]:
        return ((self._scenario().get("load") or {}).get("standardized")) or {}

    def load_tool(self) -> tuple[str, str]:
        standardized = self.load_standardized()
        return (str(standardized.get("tool") or "an unnamed tool"),
                str(standardized.get("tool_version") or ""))  # fmt: skip

    def native_config(self) -> dict[str, Any]:
        if self.load_tool()[0] != HEADROOM:
            return {}
        load = self._scenario().get("load") or {}
        config = (load.get("native") or {}).get("config")
        return config if isinstance(config, dict) else {}

    def _stack(self) -> list[dict[str, Any]]:
        return [c for c in self._scenario().get("stack") or [] if isinstance(c, dict)]

    def _engines(self) -> list[dict[str, Any]]:
        return [c for c in self._stack()
                if (c.get("standardized") or {}).get("kind") == "inference_engine"]  # fmt: skip

    def engine(self) -> tuple[dict[str, Any], dict[str, Any]]:
        engines = self._engines()
        if not engines:
            return {}, {}
        if len(engines) > 1:
            self.notes.append(f"the stack has {len(engines)} inference engines: the first one's "
                              "settings are shown")  # fmt: skip
        first = engines[0]
        return first.get("standardized") or {}, (first.get("native") or {}).get("args") or {}

    def stack_sentences(self) -> list[str]:
        out = []
        for component in self._stack():
            meta, std = component.get("metadata") or {}, component.get("standardized") or {}
            text = f"{meta.get('label', '?')}: {std.get('kind', '?')} {std.get('tool', '?')} " \
                   f"{std.get('tool_version', '')}".rstrip()
            if std.get("kind") == "inference_engine":
                text += _engine_text(std)
            out.append(text)
        return out

    def figures(self) -> tuple[dict[str, float], dict[str, str]]:
        return section_figures(self._aggregate(), ("requests", "latency", "throughput"))

    def _engine_components(self) -> list[dict[str, Any]]:
        observability = (self.document.get("results") or {}).get("observability") or {}
        components = [c for c in observability.get("components") or [] if isinstance(c, dict)]
        engine_labels = {(c.get("metadata") or {}).get("label") for c in self._engines()}
        chosen = [c for c in components if c.get("component_label") in engine_labels]
        if chosen:
            return chosen
        # Reports whose components are named by role (decode-engine, prefill-engine).
        return [c for c in components if "engine" in str(c.get("component_label", ""))
                or isinstance((c.get("time_series") or {}).get("num_requests_waiting"), dict)]

    def queue(self, duration: float) -> Evidence:
        return engine_queue(self._engine_components(), instant(self._time().get("start")),
                            duration, own=self.load_tool()[0] == HEADROOM)  # fmt: skip


def _engine_text(std: dict[str, Any]) -> str:
    """An inference engine's role, replicas, model and accelerators, for the stack's note."""
    accelerator = std.get("accelerator") or {}
    parallel = ", ".join(f"{k}={v}" for k, v in (accelerator.get("parallelism") or {}).items())
    model = (std.get("model") or {}).get("name", "?")
    return (f", {std.get('role', '?')} x{std.get('replicas', '?')}, model {model}, "
            f"{accelerator.get('count', '?')} x {accelerator.get('model', '?')}"
            + (f" ({parallel})" if parallel else ""))  # fmt: skip


class _V01(_Report):
    """0.1: scenario (host, platform, model, load) and metrics."""

    def _metrics_block(self) -> dict[str, Any]:
        return self.document.get("metrics") or {}

    def requests(self) -> dict[str, Any]:
        return self._metrics_block().get("requests") or {}

    def latency(self) -> dict[str, Any]:
        return self._metrics_block().get("latency") or {}

    def throughput(self) -> dict[str, Any]:
        return self._metrics_block().get("throughput") or {}

    def stated_duration(self) -> float | None:
        return number((self._metrics_block().get("time") or {}).get("duration"))

    def started_at(self) -> str:
        start = number((self._metrics_block().get("time") or {}).get("start"))
        if start is None:
            return "unknown (not in the report)"
        return datetime.fromtimestamp(start).astimezone().isoformat()

    def load_standardized(self) -> dict[str, Any]:
        load = (self.document.get("scenario") or {}).get("load") or {}
        args = load.get("args") or {}
        rate = args.get("qps_values") or args.get("request_rate") or args.get("rate")
        return {"tool": load.get("name"), "rate_qps": rate if number(rate) else None}

    def load_tool(self) -> tuple[str, str]:
        load = (self.document.get("scenario") or {}).get("load") or {}
        return str(load.get("name") or "an unnamed tool"), ""

    def engine(self) -> tuple[dict[str, Any], dict[str, Any]]:
        scenario = self.document.get("scenario") or {}
        engines = ((scenario.get("platform") or {}).get("engine")) or []
        accelerators = ((scenario.get("host") or {}).get("accelerator")) or []
        if not engines:
            return {}, {}
        first = engines[0] if isinstance(engines[0], dict) else {}
        accelerator = accelerators[0] if accelerators and isinstance(accelerators[0], dict) else {}
        standardized = {
            "tool": first.get("name"), "tool_version": first.get("version"),
            "model": {"name": (scenario.get("model") or {}).get("name")},
            "accelerator": {"model": accelerator.get("model"), "count": accelerator.get("count"),
                            "parallelism": accelerator.get("parallelism") or {}},
        }  # fmt: skip
        return standardized, first.get("args") or {}

    def stack_sentences(self) -> list[str]:
        scenario = self.document.get("scenario") or {}
        hosts = ((scenario.get("host") or {}).get("type")) or []
        engines = ((scenario.get("platform") or {}).get("engine")) or []
        accelerators = ((scenario.get("host") or {}).get("accelerator")) or []
        out = []
        for index, engine in enumerate(engines):
            if not isinstance(engine, dict):
                continue
            role = hosts[index] if index < len(hosts) else "?"
            acc = accelerators[index] if index < len(accelerators) else {}
            out.append(f"{role}: {engine.get('name', '?')} {engine.get('version', '')}, "
                       f"{acc.get('count', '?')} x {acc.get('model', '?')}")  # fmt: skip
        return out

    def figures(self) -> tuple[dict[str, float], dict[str, str]]:
        return section_figures(self._metrics_block(),
                               ("requests", "latency", "throughput", "time", "service"))

    def queue(self, duration: float) -> Evidence:
        return service_queue(self._metrics_block().get("service") or {})


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------


def section_figures(
    block: dict[str, Any], sections: tuple[str, ...]
) -> tuple[dict[str, float], dict[str, str]]:
    """Every figure of the sections under the report's names ("latency.time_to_first_token.p99")
    with its statistics block's units."""
    figures: dict[str, float] = {}
    units: dict[str, str] = {}
    for section in sections:
        for name, value in (block.get(section) or {}).items():
            if isinstance(value, dict):
                for statistic, figure in flat_figures(value).items():
                    figures[f"{section}.{name}.{statistic}"] = figure
                    units[f"{section}.{name}.{statistic}"] = str(value.get("units", ""))
            elif (single := number(value)) is not None:
                figures[f"{section}.{name}"] = single
    return figures, units


def _whole(value: Any, name: str, source: str, detected: Detected) -> int:
    figure = number(value)
    if figure is None or figure < 0 or figure != int(figure):
        detected.refuse(source, f"{name} must be a whole number, got {value!r:.40}")
    return int(figure)


def _mean(block: Any) -> float | None:
    if isinstance(block, dict):
        return number(block.get("mean"))
    return number(block)


def _total(block: Any, completed: int) -> int:
    """A token total from its per-request mean over the completed requests."""
    mean = _mean(block)
    return round(mean * completed) if mean is not None else 0


def iso_duration(value: Any) -> float | None:
    """Seconds of an ISO 8601 duration ("PT49.97S", "P1DT2H"); a number is read as seconds."""
    if (figure := number(value)) is not None:
        return figure
    match = ISO_DURATION.match(str(value or "").strip())
    if not match or not any(match.groups()):
        return None
    parts = {key: float(text) for key, text in match.groupdict().items() if text}
    return (parts.get("d", 0.0) * 86400 + parts.get("h", 0.0) * 3600 + parts.get("m", 0.0) * 60
            + parts.get("s", 0.0))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# YAML
# ---------------------------------------------------------------------------------------------


class ReportLoader(BoundedLoader):
    """An llm-d report's YAML within bounds: no aliases, at most MAX_REPORT_NODES values."""

    max_depth = MAX_REPORT_DEPTH
    max_nodes = MAX_REPORT_NODES
    what = "an llm-d benchmark report"


def read_yaml_documents(text: str, name: str) -> list[Any]:
    """Every YAML document in the text (a report, or several after `---`)."""
    try:
        return [document for document in yaml.load_all(text, Loader=ReportLoader)
                if document is not None]  # fmt: skip
    except BoundRefused as exc:
        raise ImportFileError(f"{name}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ImportFileError(f"{name}: not valid JSON or YAML: {exc}") from None
