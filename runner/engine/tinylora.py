"""Tiny random LoRA adapters for the tiny model, so a CPU vLLM engine can serve named adapters.

PEFT's layout, which vLLM's --lora-modules NAME=DIR reads: adapter_config.json and
adapter_model.safetensors with rank-RANK A and B matrices on every layer's q_proj and v_proj.
B is random too (PEFT starts it at zero, which would make an adapter change nothing), so each
adapter's outputs differ from the base model's and from each other's (one seed each).

    python -m runner.engine.tinylora TINY_MODEL_DIR OUT_DIR NAME [NAME ...]

writes OUT_DIR/NAME for each name, the seed taken from the name's position.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from runner.engine import tinymodel

RANK = 8
ALPHA = 16
TARGETS = ("q_proj", "v_proj")
CONFIG = "adapter_config.json"
WEIGHTS = "adapter_model.safetensors"


def _shapes() -> dict[str, tuple[int, int]]:
    """(in, out) features of each target projection in the tiny model."""
    return {
        "q_proj": (tinymodel.HIDDEN_SIZE, tinymodel.NUM_HEADS * tinymodel.HEAD_DIM),
        "v_proj": (tinymodel.HIDDEN_SIZE, tinymodel.NUM_KV_HEADS * tinymodel.HEAD_DIM),
    }


def build_tiny_lora(path: Path, base_model: Path, *, seed: int = 0) -> Path:
    """Write one adapter for the tiny model at `base_model` into `path` (created); idempotent
    for the same seed and base weights, which adapter_config.json records."""
    import torch
    from safetensors.torch import save_file

    path = Path(path)
    base = tinymodel.weights_digest(Path(base_model))
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": str(base_model),
        "r": RANK,
        "lora_alpha": ALPHA,
        "lora_dropout": 0.0,
        "target_modules": list(TARGETS),
        "bias": "none",
        "fan_in_fan_out": False,
        "modules_to_save": None,
        "headroom": {"seed": seed, "base_weights_sha256": base},
    }
    existing = path / CONFIG
    if existing.exists() and json.loads(existing.read_text()).get("headroom") == config["headroom"]:
        return path
    tensors = {}
    generator = torch.Generator().manual_seed(seed)
    for layer in range(tinymodel.NUM_LAYERS):
        for target, (fan_in, fan_out) in _shapes().items():
            prefix = f"base_model.model.model.layers.{layer}.self_attn.{target}"
            tensors[f"{prefix}.lora_A.weight"] = torch.randn(RANK, fan_in, generator=generator)
            tensors[f"{prefix}.lora_B.weight"] = torch.randn(fan_out, RANK, generator=generator)
    path.mkdir(parents=True, exist_ok=True)
    save_file({name: t.to(torch.bfloat16).contiguous() for name, t in tensors.items()},
              str(path / WEIGHTS))
    (path / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
    return path


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: python -m runner.engine.tinylora TINY_MODEL_DIR OUT_DIR NAME [NAME ...]",
              file=sys.stderr)
        return 2
    base, out, names = Path(argv[0]), Path(argv[1]), argv[2:]
    for seed, name in enumerate(names):
        print(build_tiny_lora(out / name, base, seed=seed))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
