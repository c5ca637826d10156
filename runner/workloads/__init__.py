"""What a point sends: prompts from the built-in workloads, datasets, conversations and traces."""
