"""What a result file is: one step that names the tool, the format version it recognised, and
what a reader of it needs that the file lacks.

Every import asks here first (runner.importer.files), so a file is either read by the reader of
what it is, or refused with a message that names what it is: "inference-perf stage report (0.2
to 0.4 format) without benchmark_time_seconds and without a throughput block", never another
tool's complaint. The formats, and the keys that tell them apart:

- Headroom: JSONL lines and a run's JSON download are told by their first bytes
  (runner.importer.files); a point written as one JSON document has schema_version
  "headroom.result/1".
- vllm bench serve --save-result (vLLM 0.3 benchmark_serving.py to 0.33 `vllm bench serve`):
  run keys such as backend, model_id, num_prompts, request_rate; vLLM does not write its own
  version. `vllm bench sweep` adds run_number and the swept settings to each run=N.json and
  writes their list as summary.json (and summary.csv, runner.importer.vllm_sweep). From 0.32 it
  may also write warmup.json (--warmup-num-prompts: a run with run_number -1, which vLLM leaves
  out of its summary) and, with --continue-on-error, failure records (error_type, error and the
  overrides, no figures): both are refused by name, never read as a measured run.
- NVIDIA AIPerf: its summary (profile_export_aiperf.json) names aiperf_version (from 0.4; 0.3
  does not); the first releases kept the metrics in a `records` map; per-request records have
  metadata and metrics; gpu_telemetry_export.jsonl lines have timestamp_ns, gpu_index and
  telemetry_data; server_metrics_export.json (from 0.4) has a summary of endpoints_configured
  and metrics that each hold series (it names aiperf_version too, so it is told apart first).
- GuideLLM: a `benchmarks` list; its metadata names guidellm_version (0.5.4 does, 0.4 has no
  metadata); 0.4 has each benchmark's config and metrics (request_totals among them) as later
  ones do; 0.3 has request_totals and run_stats on each benchmark.
- inference-perf: load_summary, successes and failures. A lifecycle report (per stage or the
  summary) has successes.latency; the Prometheus report (stage_N_prometheus_metrics.json) has
  successes.queue_len. Its version is not in the file; the keys date the format:
  benchmark_time_seconds from 0.5, schedule_delay from 0.2, requested_rate from 0.1.1, a
  throughput block from 0.1.0.
- llm-d-benchmark's benchmark report: `version` "0.1" with scenario and metrics, or "0.2" /
  "0.2.1" with run and results.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from runner.importer.aiperf_server import is_server_metrics
from runner.importer.vllm_document import VLLM_BENCH_REQUIRED, ImportFileError

Kind = Literal[
    "headroom-point",
    "vllm-bench",
    "vllm-sweep-summary",
    "aiperf-summary",
    "aiperf-records",
    "aiperf-gpu-telemetry",
    "aiperf-server-metrics",
    "guidellm-report",
    "inference-perf-stage",
    "inference-perf-summary",
    "inference-perf-prometheus",
    "inference-perf-per-request",
    "llm-d-report",
    "unknown",
]

# Keys only a vllm bench serve result writes beside its figures: two of them make a file one.
VLLM_BENCH_KEYS = frozenset({
    "date", "backend", "endpoint_type", "model_id", "tokenizer_id", "num_prompts",
    "request_rate", "burstiness", "max_concurrency", "best_of", "use_beam_search",
    "request_throughput", "output_throughput", "mean_ttft_ms", "input_lens", "ttfts",
})  # fmt: skip
INFERENCE_PERF_KEYS = ("load_summary", "successes", "failures")
LLM_D_VERSIONS = {"0.1": "0.1", "0.2": "0.2", "0.2.1": "0.2.1"}
STAGE_NAME = re.compile(r"(?:^|/)stage_(\d+)_(lifecycle|prometheus)_metrics\.json$")
SUMMARY_NAME = re.compile(r"(?:^|/)summary_lifecycle_metrics\.json$")
READ_FORMATS = (
    "Headroom JSONL, a run's JSON download, and the results of vllm bench serve, NVIDIA AIPerf, "
    "GuideLLM, inference-perf and llm-d-benchmark"
)


@dataclass(frozen=True)
class Detected:
    """A file's kind, the tool that wrote it and the format version recognised.

    version: as exact as the file allows ("0.13.0" when it names itself, else the releases
    whose format it has: "0.2 to 0.4 format"). lacks: what a reader needs and the file does not
    have; refusal: why this file is not read, when it is recognised but refused whole.
    """

    kind: Kind
    tool: str
    version: str
    lacks: tuple[str, ...] = ()
    refusal: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def label(self) -> str:
        return f"{self.tool} {self.version}".strip()

    def refuse(self, source: str, why: str | None = None) -> NoReturn:
        """Raise the refusal naming the tool, the version and what is missing."""
        raise ImportFileError(f"{source}: {self.label}: {why or self.refusal or self._lacking()}")

    def _lacking(self) -> str:
        return "without " + " and without ".join(self.lacks) if self.lacks else "not readable"

    def check(self, source: str) -> None:
        """Refuse now what was recognised but cannot be read."""
        if self.refusal is not None or self.lacks:
            self.refuse(source)


UNKNOWN = Detected(kind="unknown", tool="", version="")


def detect(document: Any, name: str = "") -> Detected:
    """The kind of one parsed JSON (or YAML) document; name is the file's, which tells an
    inference-perf 0.1.0 stage report from its summary (they are alike inside)."""
    if isinstance(document, list):
        return _detect_list(document)
    if not isinstance(document, dict):
        return UNKNOWN
    for probe in (_headroom, _aiperf, _guidellm, _inference_perf, _llm_d, _vllm_sweep_failure,
                  _vllm_bench):  # fmt: skip
        found = probe(document, name)
        if found is not None:
            return found
    return UNKNOWN


def unknown_refusal(document: Any, source: str) -> NoReturn:
    """The refusal of a document no reader recognises, naming what was found instead."""
    if isinstance(document, dict):
        keys = ", ".join(sorted(str(key) for key in document)[:8]) or "none"
        found = f"a JSON object with keys {keys}"
    elif isinstance(document, list):
        found = f"a list of {len(document)} items"
    else:
        found = f"a JSON {type(document).__name__}"
    raise ImportFileError(f"{source}: not a result file Headroom reads ({found}); it reads "
                          f"{READ_FORMATS}")  # fmt: skip


def _detect_list(document: list[Any]) -> Detected:
    first = document[0] if document else None
    if isinstance(first, dict) and "benchmark" in first and "metric" in first:
        return Detected(
            kind="unknown", tool="vllm bench serve", version="(PyTorch benchmark format)",
            refusal="a .pytorch.json file; import the result file written beside it",
        )  # fmt: skip
    if isinstance(first, dict) and {"start_time", "end_time", "info"} <= first.keys():
        return Detected(
            kind="inference-perf-per-request", tool="inference-perf", version="",
            refusal="per-request report (per_request_lifecycle_metrics.json) is not read: "
            "import the stage reports (stage_N_lifecycle_metrics.json) or their folder",
        )  # fmt: skip
    if isinstance(first, dict) and "run_number" in first and _vllm_bench(first, "") is not None:
        return Detected(kind="vllm-sweep-summary", tool="vllm bench sweep",
                        version="summary.json (vLLM's version not in the file)")  # fmt: skip
    return UNKNOWN


def _headroom(document: dict[str, Any], _name: str) -> Detected | None:
    version = document.get("schema_version")
    if isinstance(version, str) and version.startswith("headroom."):
        return Detected(kind="headroom-point", tool="Headroom", version=version)
    return None


# ---------------------------------------------------------------------------------------------
# NVIDIA AIPerf
# ---------------------------------------------------------------------------------------------

AIPERF_NO_VERSION = "(the file does not name AIPerf's version)"


def _aiperf(document: dict[str, Any], _name: str) -> Detected | None:
    if is_server_metrics(document):
        version = str(document.get("aiperf_version") or "") or AIPERF_NO_VERSION
        return Detected(
            kind="aiperf-server-metrics", tool="NVIDIA AIPerf",
            version=f"{version} server metrics export",
            refusal="server_metrics_export.json is read with the run's "
            "profile_export_aiperf.json (as the file that came with it), not alone",
        )  # fmt: skip
    if "aiperf_version" in document:
        version = str(document.get("aiperf_version") or "") or AIPERF_NO_VERSION
        return Detected(kind="aiperf-summary", tool="NVIDIA AIPerf", version=version)
    records = document.get("records")
    if isinstance(records, dict) and "input_config" in document and _metric_map(records):
        return Detected(kind="aiperf-summary", tool="NVIDIA AIPerf",
                        version="0.1 to 0.2 summary format (records map; "
                        "the file does not name its version)")  # fmt: skip
    if "input_config" in document and any(
        isinstance(value, dict) and "unit" in value and "avg" in value
        for value in document.values()
    ):
        return Detected(kind="aiperf-summary", tool="NVIDIA AIPerf",
                        version="summary before 0.4 (the file does not name its version)")
    if isinstance(document.get("metadata"), dict) and isinstance(document.get("metrics"), dict):
        metadata = document["metadata"]
        if "request_start_ns" in metadata:
            return Detected(kind="aiperf-records", tool="NVIDIA AIPerf",
                            version="per-request record")  # fmt: skip
        if "timestamp_ns" in metadata and "credit_phase" in metadata:
            return Detected(kind="aiperf-records", tool="NVIDIA AIPerf",
                            version="per-request record (0.1 to 0.2 format)")  # fmt: skip
    if {"timestamp_ns", "gpu_index", "telemetry_data"} <= document.keys():
        return Detected(
            kind="aiperf-gpu-telemetry", tool="NVIDIA AIPerf", version="GPU telemetry",
            refusal="gpu_telemetry_export.jsonl is read with the run's profile_export.jsonl "
            "(as the file that came with it), not alone",
        )  # fmt: skip
    return None


def _metric_map(records: dict[str, Any]) -> bool:
    return bool(records) and all(
        isinstance(value, dict) and "unit" in value for value in records.values()
    )


# ---------------------------------------------------------------------------------------------
# GuideLLM
# ---------------------------------------------------------------------------------------------


def _guidellm(document: dict[str, Any], _name: str) -> Detected | None:
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, list):
        return None
    metadata = document.get("metadata")
    if isinstance(metadata, dict) and "guidellm_version" in metadata:
        version = str(metadata.get("guidellm_version") or "") or "(version not in the file)"
        return Detected(kind="guidellm-report", tool="GuideLLM", version=version)
    first = benchmarks[0] if benchmarks else None
    if isinstance(first, dict) and "request_totals" in first and "run_stats" in first:
        return Detected(kind="guidellm-report", tool="GuideLLM", version="0.3 report format")
    if isinstance(first, dict) and "config" in first and "metrics" in first:
        return Detected(kind="guidellm-report", tool="GuideLLM",
                        version="0.4 report format")  # fmt: skip
    if isinstance(first, dict) and "benchmarks" in first:
        return Detected(
            kind="guidellm-report", tool="GuideLLM", version="report from before 0.3",
            refusal="a GuidanceReport of GuideLLM 0.1 or 0.2 is not read (it holds no "
            "per-benchmark request totals); Headroom reads GuideLLM's reports from 0.3 on",
        )  # fmt: skip
    if isinstance(first, dict) and ("metrics" in first or "config" in first):
        return Detected(
            kind="guidellm-report", tool="GuideLLM", version="report (version not in the file)",
            lacks=("config" if "config" not in first else "metrics",),
        )  # fmt: skip
    return None


# ---------------------------------------------------------------------------------------------
# inference-perf
# ---------------------------------------------------------------------------------------------


def _inference_perf(document: dict[str, Any], name: str) -> Detected | None:
    if not all(isinstance(document.get(key), dict) for key in INFERENCE_PERF_KEYS):
        return None
    successes = document["successes"]
    load = document["load_summary"]
    tool = "inference-perf"
    if "queue_len" in successes or ("rate" in successes and "latency" not in successes):
        span = "the whole run" if "summary_prometheus" in name else "a stage"
        return Detected(
            kind="inference-perf-prometheus", tool=tool,
            version=f"Prometheus report ({prometheus_format(successes)})",
            refusal=f"it holds the server's metrics over {span}, not a point: import it with "
            "that stage's stage_N_lifecycle_metrics.json (as the file that came with it), or "
            "import the stages' folder",
        )  # fmt: skip
    version = lifecycle_format(document)
    stage = "requested_rate" in load or STAGE_NAME.search(name) is not None
    if "requested_rate" not in load and SUMMARY_NAME.search(name):
        stage = False
    if not stage:
        return Detected(
            kind="inference-perf-summary", tool=tool, version=f"summary report ({version})",
            refusal="a summary report mixes every stage's load into one figure; import the "
            "per-stage reports (stage_N_lifecycle_metrics.json) or their folder instead",
        )  # fmt: skip
    lacks: tuple[str, ...] = ()
    if not isinstance(document.get("benchmark_time_seconds"), int | float) and not isinstance(
        successes.get("throughput"), dict
    ):
        lacks = ("benchmark_time_seconds", "a throughput block")
    return Detected(kind="inference-perf-stage", tool=tool,
                    version=f"stage report ({version})", lacks=lacks)  # fmt: skip


def lifecycle_format(document: dict[str, Any]) -> str:
    """The inference-perf releases whose lifecycle report has this file's keys."""
    load = document.get("load_summary") or {}
    if "benchmark_time_seconds" in document:
        return "0.5 or later format"
    if not isinstance((document.get("successes") or {}).get("throughput"), dict):
        return "format from before 0.1"
    if "schedule_delay" in load:
        return "0.2 to 0.4 format"
    if "schedule_accuracy" in load or "requested_rate" in load:
        return "0.1.1 format"
    return "0.1.0 format"


def prometheus_format(successes: Mapping[str, Any]) -> str:
    """The inference-perf releases whose Prometheus report has these keys."""
    if "num_requests_running" in successes:
        return "0.4.1 or later format"
    if "kv_cache_usage_percentage" in successes:
        return "0.2 to 0.4.0 format"
    return "0.1 format"


# ---------------------------------------------------------------------------------------------
# llm-d-benchmark's benchmark report
# ---------------------------------------------------------------------------------------------


def _llm_d(document: dict[str, Any], _name: str) -> Detected | None:
    version = document.get("version")
    v01 = "scenario" in document and "metrics" in document
    v02 = "run" in document and "results" in document
    if not isinstance(version, str | float) or not (v01 or v02):
        return None
    version = str(version)
    tool = "llm-d-benchmark report"
    if version not in LLM_D_VERSIONS:
        return Detected(kind="llm-d-report", tool=tool, version=version,
                        refusal="Headroom reads benchmark report versions 0.1, 0.2 and "
                        "0.2.1")  # fmt: skip
    if version == "0.1" and not v01:
        return Detected(kind="llm-d-report", tool=tool, version=version,
                        lacks=("scenario", "metrics"))  # fmt: skip
    if version != "0.1" and not v02:
        return Detected(kind="llm-d-report", tool=tool, version=version,
                        lacks=("run", "results"))  # fmt: skip
    return Detected(kind="llm-d-report", tool=tool, version=version)


# ---------------------------------------------------------------------------------------------
# vllm bench serve
# ---------------------------------------------------------------------------------------------


# vLLM 0.32's sweep/server.py wait_until_ready: the server process exited before /health answered.
SERVER_EXITED = re.compile(r"Server process crashed with return code (-?\d+)")
# A failure's message as the folder's note quotes it: a failed command's message holds the whole
# command line, so a longer one keeps its start and its end (the exit status).
FAILURE_MESSAGE_CHARS = 300


def vllm_sweep_failure(document: Any) -> str | None:
    """What a vLLM 0.32 --continue-on-error failure record says failed, with vLLM's own message;
    None when the document is no such record.

    sweep/serve.py writes three: run_comb's run=N.failure.json and warmup.failure.json (a bench
    run: run_number, bench_overrides) and run_combs' SERVE-<set>-failure.json (a serve set whose
    server failed: no bench_overrides). A server process that exits before it is ready is
    vLLM's RuntimeError "Server process crashed with return code N"; one that exits later is
    not recorded as such: the bench runs after it are written as runs whose requests all failed
    (0.32's `vllm bench serve` skips its ready check by default), or fail as runs.
    """
    if not isinstance(document, dict) or not (
        {"error_type", "error", "serve_overrides"} <= document.keys()
    ):
        return None
    vllm_says = f"vLLM: {document['error_type']}: {_shortened(str(document['error']))}"
    serve = f"serve set {_set_name(document['serve_overrides'])}"
    if "bench_overrides" in document:
        run = document.get("run_number")
        which = "the warmup run" if run == -1 else f"run {run}"
        bench = f"bench set {_set_name(document['bench_overrides'])}"
        return f"{serve}, {bench}, {which} failed; {vllm_says}"
    if exited := SERVER_EXITED.fullmatch(str(document["error"])):
        return (f"{serve}: its server process exited (return code {exited[1]}) before it was "
                f"ready, so none of its runs was measured; {vllm_says}")  # fmt: skip
    return f"{serve} failed before its runs; {vllm_says}"


def _set_name(overrides: Any) -> str:
    """A named parameter set by its name (vLLM's _benchmark_name), another by its settings."""
    if not isinstance(overrides, dict) or not overrides:
        return "(default)"
    if "_benchmark_name" in overrides:
        return str(overrides["_benchmark_name"])
    return ", ".join(f"{key}={value}" for key, value in overrides.items())


def _shortened(message: str) -> str:
    if len(message) <= FAILURE_MESSAGE_CHARS:
        return message
    half = FAILURE_MESSAGE_CHARS // 2
    return f"{message[:half]} ... {message[-half:]}"


def _vllm_sweep_failure(document: dict[str, Any], _name: str) -> Detected | None:
    # vLLM 0.32's sweep/serve.py run_comb / run_combs with --continue-on-error.
    if not ({"error_type", "error", "serve_overrides"} <= document.keys()):
        return None
    what = "a failed server combination"
    if "bench_overrides" in document:
        what = "a failed warmup run" if document.get("run_number") == -1 else "a failed run"
    return Detected(
        kind="unknown", tool="vllm bench sweep", version="--continue-on-error failure record",
        refusal=f"{what} ({document.get('error_type')}): it holds no figures, and Headroom does "
        "not import failures; import the sweep's folder or its run=N.json files",
    )  # fmt: skip


def _vllm_bench(document: dict[str, Any], _name: str) -> Detected | None:
    signature = VLLM_BENCH_KEYS & document.keys()
    required = [key for key in VLLM_BENCH_REQUIRED if key in document]
    if len(signature) < 2 and len(required) < len(VLLM_BENCH_REQUIRED):
        return None
    if document.get("run_number") == -1:  # vLLM 0.32's sweep/serve.py run_comb, warmup.json
        return Detected(
            kind="vllm-bench", tool="vllm bench sweep", version="warmup.json",
            refusal="the unmeasured warmup run (--warmup-num-prompts, run_number -1) that vLLM "
            "leaves out of its summary; Headroom does not import it as a measured run",
        )  # fmt: skip
    missing = tuple(key for key in VLLM_BENCH_REQUIRED if key not in document)
    return Detected(kind="vllm-bench", tool="vllm bench serve", version=vllm_bench_format(document),
                    lacks=missing)  # fmt: skip


def vllm_bench_format(document: Mapping[str, Any]) -> str:
    """The vLLM releases whose vllm bench serve result has these keys (vLLM does not write its
    own version): 0.3's benchmark_serving.py misspelt request_inthroughput; `vllm bench serve`
    writes endpoint_type. The per-request arrays (tests/data/peers/vllm/README.md, "Format
    versions"): benchmark_serving.py wrote them in every file up to vLLM 0.8.4 (0.8.0 to 0.8.4
    took --save-detailed but deleted the arrays before adding them), and from 0.8.5 only with
    --save-detailed; `vllm bench serve` in every file of 0.8.0 to 0.9.0, the releases that also
    wrote best_of, and from 0.9.1 only with --save-detailed."""
    if "request_inthroughput" in document:
        era = "vLLM 0.3 benchmark_serving.py format"
    elif "endpoint_type" in document:
        era = "vllm bench serve format"
    else:
        era = "benchmark_serving.py format"
    detailed = ""
    if "ttfts" in document and "endpoint_type" in document and "best_of" in document:
        detailed = ", with per-request arrays (every file of vLLM 0.8.0 to 0.9.0)"
    elif "ttfts" in document and "endpoint_type" in document:
        detailed = ", with --save-detailed arrays"
    elif "ttfts" in document:
        detailed = (", with per-request arrays (every file to vLLM 0.8.4, --save-detailed from "
                    "0.8.5)")
    sweep = ", a vllm bench sweep run" if "run_number" in document else ""
    return f"({era}{detailed}{sweep}; vLLM's version is not in the file)"
