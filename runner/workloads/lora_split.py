"""Which LoRA adapter each request of a point asks for (WorkloadSpec.lora_split).

inference-perf's lora_traffic_split draws an adapter for every request at random by weight, so
a point's shares wander from the weights by chance. Here they do not: the point's N requests
are split by largest remainder (each adapter gets the floor of N x weight / total, and the
requests left over go to the largest remainders, ties to the adapter listed first), then the
names are shuffled with the workload's seed, so the adapters are interleaved over the send
order (a burst or a rate schedule reaches all of them throughout) and the same plan sends the
same adapter with the same request every time.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

from runner.schema.plan import LoraShare, split_fractions
from runner.workloads.prompts import Prompt


def split_counts(split: list[LoraShare], n: int) -> dict[str, int]:
    """Requests per adapter for n requests, by largest remainder; they add up to n."""
    # n x (weight / total), never (n x weight) / total: a weight near the float maximum would
    # make n x weight infinite.
    quotas = [n * fraction for fraction in split_fractions(split)]
    counts = [math.floor(quota) for quota in quotas]
    left = n - sum(counts)
    by_remainder = sorted(range(len(split)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in by_remainder[:left]:
        counts[i] += 1
    return {share.name: count for share, count in zip(split, counts, strict=True)}


def assign_adapters(split: list[LoraShare], n: int, seed: int) -> list[str]:
    """The adapter of each of n requests, in send order (see the module's docstring)."""
    names = [name for name, count in split_counts(split, n).items() for _ in range(count)]
    random.Random(seed).shuffle(names)
    return names


def with_adapters(prompts: list[Prompt], split: list[LoraShare], seed: int) -> list[Prompt]:
    """The point's prompts, each naming its adapter; unchanged without a split."""
    if not split:
        return prompts
    names = assign_adapters(split, len(prompts), seed)
    return [replace(prompt, adapter=name) for prompt, name in zip(prompts, names, strict=True)]
