"""Run the real AIPerf, GuideLLM and inference-perf against a server, from the virtual
environments `make peers` builds (HEADROOM_PEERS), and return the files each writes.

The files in peer_files/ were written by these functions against the CPU engine serving the
tiny model (max_num_seqs=4):

    python -m tests.runner.importer.peer_tools http://127.0.0.1:8000 tiny OUT_DIR

and the ones in peer_files/aiperf_telemetry/ by run_aiperf with gpu_telemetry, AIPerf scraping
the hand-written dcgm-exporter page of dcgm_page.py (no GPU here).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.runner.importer.dcgm_page import DcgmExporter

# Each tool's run is a few seconds on the CPU engine; this only keeps a hang from hanging CI.
RUN_TIMEOUT_S = 300
AIPERF_REQUESTS = 24
GUIDELLM_STREAMS = (1, 4)
GUIDELLM_REQUESTS = 12
INFERENCE_PERF_RATES = (4, 8)


def peers_dir() -> Path | None:
    value = os.environ.get("HEADROOM_PEERS")
    return Path(value) if value else None


def _tool(name: str, command: str) -> Path:
    root = peers_dir()
    if root is None:
        raise RuntimeError("HEADROOM_PEERS is not set (make test sets it)")
    path = root / name / "bin" / command
    if not path.exists():
        raise RuntimeError(f"{path} is missing: run `make peers`")
    return path


def _run(argv: list[str], log: Path, env: dict[str, str] | None = None) -> None:
    with log.open("w") as out:
        done = subprocess.run(
            argv, stdout=out, stderr=subprocess.STDOUT, timeout=RUN_TIMEOUT_S,
            env={**os.environ, **(env or {})}, check=False,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {done.returncode}: {log.read_text()[-2000:]}")


def run_aiperf(
    url: str, model: str, tokenizer: Path, out: Path, *, gpu_telemetry: str | None = None
) -> tuple[Path, Path]:
    """A closed loop of 4 with the server's token counts: (summary JSON, per-record JSONL).

    gpu_telemetry: a dcgm-exporter page's URL for AIPerf to scrape (--gpu-telemetry URL); it
    then also writes gpu_telemetry_export.jsonl (aiperf_telemetry_file) and a telemetry section
    in the summary. None: --no-gpu-telemetry.
    """
    out.mkdir(parents=True, exist_ok=True)
    telemetry = ["--gpu-telemetry", gpu_telemetry] if gpu_telemetry else ["--no-gpu-telemetry"]
    _run(
        [
            str(_tool("aiperf", "aiperf")), "profile", "--model", model, "--url", url,
            "--endpoint-type", "completions", "--streaming", "--tokenizer", str(tokenizer),
            "--use-server-token-count", "--concurrency", "4",
            "--request-count", str(AIPERF_REQUESTS),
            "--prompt-input-tokens-mean", "64", "--prompt-input-tokens-stddev", "0",
            "--prompt-output-tokens-mean", "32", "--prompt-output-tokens-stddev", "0",
            "--extra-inputs", "ignore_eos:true", "--random-seed", "7",
            "--output-artifact-dir", str(out), "--ui-type", "none", "--no-auto-plot",
            *telemetry,
        ],
        out / "aiperf.log",
        # AIPerf 0.13 in offline mode reads a tokenizer path as a hub repo id and fails; a local
        # directory needs no hub either way.
        env={"HF_HUB_OFFLINE": ""},
    )
    return out / "profile_export_aiperf.json", out / "profile_export.jsonl"


def aiperf_telemetry_file(out: Path) -> Path:
    """Where run_aiperf's AIPerf wrote its GPU telemetry readings (aiperf/config/artifacts.py)."""
    return out / "gpu_telemetry_export.jsonl"


def run_guidellm(url: str, tokenizer: Path, out: Path) -> Path:
    """A sweep of two stream counts, each its own benchmark: the benchmarks report."""
    out.mkdir(parents=True, exist_ok=True)
    scenario = {
        "spec": {
            "backend": {"kind": "openai_http", "target": url, "request_format": "/v1/completions"},
            "profile": {"kind": "concurrent"},
            "tokenizer": {"kind": "huggingface_auto", "model": str(tokenizer)},
            "data": [{"kind": "synthetic_text", "prompt_tokens": 64, "output_tokens": 32}],
            "constraints": [{"kind": "max_requests", "count": GUIDELLM_REQUESTS}],
        },
        "benchmarks": [{"profile.streams": streams} for streams in GUIDELLM_STREAMS],
    }
    (out / "scenario.json").write_text(json.dumps(scenario))
    report = out / "benchmarks.json"
    _run(
        [
            str(_tool("guidellm", "guidellm")), "run", "-c", str(out / "scenario.json"),
            "--output", f"kind=json,path={report}", "--disable-console-interactive",
        ],
        out / "guidellm.log",
        env={"HF_HUB_OFFLINE": "1"},
    )
    return report


def run_inference_perf(url: str, model: str, tokenizer: Path, out: Path) -> list[Path]:
    """Two constant-rate stages of 4 s: the per-stage reports."""
    out.mkdir(parents=True, exist_ok=True)
    stages = "\n".join(f"  - rate: {rate}\n    duration: 4" for rate in INFERENCE_PERF_RATES)
    config = out / "config.yml"
    config.write_text(
        f"load:\n  type: constant\n  stages:\n{stages}\n"
        "api:\n  type: completion\n  streaming: true\n"
        f"server:\n  type: vllm\n  model_name: {model}\n  base_url: {url}\n  ignore_eos: true\n"
        f"tokenizer:\n  pretrained_model_name_or_path: {tokenizer}\n"
        "data:\n  type: random\n"
        "  input_distribution: {min: 64, max: 64, mean: 64, std_dev: 0, total_count: 200}\n"
        "  output_distribution: {min: 32, max: 32, mean: 32, std_dev: 0, total_count: 200}\n"
        "report:\n  request_lifecycle:\n    summary: true\n    per_stage: true\n"
        f"storage:\n  local_storage:\n    path: {out / 'reports'}\n"
    )
    _run(
        [str(_tool("inference-perf", "inference-perf")), "--config_file", str(config)],
        out / "inference-perf.log",
        env={"HF_HUB_OFFLINE": "1"},
    )
    return [
        out / "reports" / f"stage_{i}_lifecycle_metrics.json"
        for i in range(len(INFERENCE_PERF_RATES))
    ]


if __name__ == "__main__":
    base, served, target = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    model_dir = Path(os.environ.get("HEADROOM_TINY_MODEL", "var/tiny-model"))
    print(run_aiperf(base, served, model_dir, target / "aiperf"))
    with DcgmExporter() as page_url:
        print(run_aiperf(base, served, model_dir, target / "aiperf_telemetry",
                         gpu_telemetry=page_url))  # fmt: skip
    print(run_guidellm(base, model_dir, target / "guidellm"))
    print(run_inference_perf(base, served, model_dir, target / "inference-perf"))
