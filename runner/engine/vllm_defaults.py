"""The scheduler limits vLLM picks itself when `--max-num-seqs` or `--max-num-batched-tokens`
is not given, so a verdict judges the limits the engine really ran with.

vLLM 0.32's rule for its OpenAI server (UsageContext.OPENAI_API_SERVER), as
EngineArgs.get_batch_defaults in vllm/engine/arg_utils.py writes it, by the total memory of one
GPU: at least 160 GiB, 1024 sequences / 16384 batched tokens; at least 70 GiB and not an A100
(larger budgets were slower there), 1024 / 8192; any other GPU 256 / 2048. Its
CPU backend has its own, 128 / 2048 times the world size (tensor x pipeline parallel). Chunked
prefill is always on for these models, so the budget is not raised to max_model_len, and
`--performance-mode throughput`, which doubles both, is not a flag a plan may pass.

Only versions whose rule was read from their source are answered; for any other the limits are
unknown (None), never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass

# vLLM versions whose defaults are the rule below.
KNOWN_VERSIONS = ("0.32.",)
MIB_PER_GIB = 1024


@dataclass(frozen=True)
class BatchDefaults:
    max_num_seqs: int
    max_num_batched_tokens: int


def batch_defaults(
    *, cpu_engine: bool, gpu_memory_mib: int | None, gpu_name: str | None, world_size: int = 1
) -> BatchDefaults | None:
    """vLLM 0.32's choice on this hardware; None for a GPU whose memory is not recorded."""
    if cpu_engine:
        return BatchDefaults(max_num_seqs=128 * world_size,
                             max_num_batched_tokens=2048 * world_size)
    if not gpu_memory_mib:
        return None
    gib = gpu_memory_mib / MIB_PER_GIB  # nvidia-smi's MiB; vLLM compares bytes with GiB
    if gib >= 160:
        return BatchDefaults(max_num_seqs=1024, max_num_batched_tokens=16384)
    if gib >= 70 and "a100" not in (gpu_name or "").lower():
        return BatchDefaults(max_num_seqs=1024, max_num_batched_tokens=8192)
    return BatchDefaults(max_num_seqs=256, max_num_batched_tokens=2048)


def known_version(version: str | None) -> bool:
    return version is not None and version.startswith(KNOWN_VERSIONS)
