"""A tiny random-weight Qwen3 model that a CPU vLLM engine can serve in tests and demos.

No model hub is reachable from the machines that run Headroom's tests, so the model is built
here: Qwen3 architecture (the case study's family, so vLLM takes the same model code path),
random weights from a fixed seed, and a byte-level BPE tokenizer trained in-process on built-in
text. Its outputs are gibberish; its cost per token is what a real engine's scheduler sees, which
is all a queueing benchmark needs.

    python -m runner.engine.tinymodel tiny-model/
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

# Bump when anything below changes what gets written, so an old build is replaced, not reused.
BUILD_VERSION = 1
MARKER = "headroom-tiny-model.json"

VOCAB_SIZE = 512
HIDDEN_SIZE = 128
INTERMEDIATE_SIZE = 256
NUM_LAYERS = 2
NUM_HEADS = 2
NUM_KV_HEADS = 1
# vLLM's CPU attention backend rejects head sizes below 32 (16 fails at start-up); 64 is safe.
HEAD_DIM = 64
MAX_POSITIONS = 4096

BOS = "<|endoftext|>"
EOS = "<|im_end|>"
SPECIAL_TOKENS = [BOS, "<|im_start|>", EOS, "<think>", "</think>"]

# Qwen3's chat layout (im_start/im_end turns). With enable_thinking=false the real template
# pre-fills an empty think block; doing the same keeps prompts shaped like the case study's.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}"
    "{{ '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false -%}"
    "{{ '<think>\\n\\n</think>\\n\\n' }}"
    "{%- endif -%}"
    "{%- endif -%}"
)

# Training text for the tokenizer: varied enough English and code-ish text to fill 512 tokens
# with merges, built in so the build needs no download and gives the same vocabulary every time.
CORPUS = """
The engine runs far fewer requests at once than the hardware could. Output throughput stays low
while requests wait in the queue. Changing only scheduling settings raised the throughput, and the
median request latency fell. The evidence was the difference between the load that arrived and
the work the engine admitted, compared with completed throughput and latency on the same workload.
A saturating setting reached its throughput in two independent repeats. Pushing load beyond it
added under one percent of throughput while median latency rose by about half: that is the knee,
and the operating point sits before it. Memory limits the choice: serving overhead shrinks the
key value cache; short prompts leave room; longer contexts need their own evaluation.
Explain how to install a package, configure the server, and check the health endpoint.
def main(argv: list[str]) -> int:
    for index, value in enumerate(argv):
        print(f"{index}: {value}")
    return 0
Quick brown foxes jump over lazy dogs; numbers 0 1 2 3 4 5 6 7 8 9 10 100 1000 2048 4096.
Benchmark, throughput, latency, tokens per second, requests, replicas, GPUs, memory, blocks.
"""


def build_tiny_model(path: Path, *, seed: int = 0) -> Path:
    """Write the tiny model and tokenizer into `path` (created) and return it.

    Idempotent: a directory that already holds this build (same BUILD_VERSION and seed) is left
    untouched, so a session-scoped test fixture or a second runner can call this freely. The
    build happens in a sibling temporary directory that is renamed into place, so a reader never
    sees half a model.
    """
    path = Path(path)
    wanted = {"build_version": BUILD_VERSION, "seed": seed}
    marker = path / MARKER
    if marker.exists():
        if json.loads(marker.read_text()).get("params") == wanted:
            return path
        shutil.rmtree(path)  # our own older build: replace it
    elif path.exists() and any(path.iterdir()):
        raise FileExistsError(f"{path} exists and is not a Headroom tiny model; not overwriting it")

    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; the model dir is meant to be shared
    try:
        vocab = _write_tokenizer(staging)
        _write_model(staging, vocab_size=vocab, seed=seed)
        marker_body = {"params": wanted, "weights_sha256": weights_digest(staging)}
        (staging / MARKER).write_text(json.dumps(marker_body, indent=2) + "\n")
        if path.exists():
            path.rmdir()  # empty, checked above
        try:
            staging.rename(path)
        except OSError:
            # Another process finished the same build first; theirs is as good as ours.
            if not (path / MARKER).exists():
                raise
            shutil.rmtree(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return path


def weights_digest(path: Path) -> str:
    """sha256 over every tensor's name, dtype, shape and bytes, in name order.

    Hashes the tensors rather than the file, so it says "same weights" even if a safetensors
    version were to lay the header out differently.
    """
    import torch
    from safetensors import safe_open

    digest = hashlib.sha256()
    for file in sorted(Path(path).glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for name in sorted(handle.keys()):
                tensor = handle.get_tensor(name)
                digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
                raw = tensor.contiguous().view(-1).view(dtype=torch.uint8)
                digest.update(raw.numpy().tobytes())
    return digest.hexdigest()


def _write_tokenizer(directory: Path) -> int:
    """Train a byte-level BPE on CORPUS; returns the vocabulary size (specials included).

    Byte-level means every prompt encodes without unknown tokens, whatever text a workload sends.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)

    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=BOS,
        unk_token=None,
        model_max_length=MAX_POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(directory))
    return tokenizer.get_vocab_size()


def _write_model(directory: Path, *, vocab_size: int, seed: int) -> None:
    """Random Qwen3 weights from `seed`, saved as safetensors with config.json."""
    import torch
    from tokenizers import Tokenizer
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    config = Qwen3Config(
        vocab_size=vocab_size,
        hidden_size=HIDDEN_SIZE,
        intermediate_size=INTERMEDIATE_SIZE,
        num_hidden_layers=NUM_LAYERS,
        num_attention_heads=NUM_HEADS,
        num_key_value_heads=NUM_KV_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=MAX_POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.token_to_id(BOS),
        eos_token_id=tokenizer.token_to_id(EOS),
        pad_token_id=tokenizer.token_to_id(BOS),
        # bfloat16 like real Qwen3 checkpoints, so `--dtype auto` behaves as it would on a GPU.
        dtype="bfloat16",
    )
    # Seeded CPU init is deterministic; fork_rng keeps the caller's global RNG state untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen3ForCausalLM(config)
    model = model.to(torch.bfloat16)
    model.save_pretrained(str(directory), safe_serialization=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m runner.engine.tinymodel DIR", file=sys.stderr)
        return 2
    print(build_tiny_model(Path(argv[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
