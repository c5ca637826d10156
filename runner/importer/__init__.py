"""Reading result files: Headroom's own JSONL, a run's download, and `vllm bench serve` files."""
