"""A plan file's text as data, JSON for a .json name and YAML otherwise, read within bounds.

The CLI (runner.cli.commands.load_plan) and the dashboard's plan upload (dashboard.plan_files)
both read plans here, so a file one takes the other takes too. A plan is a few hundred values
nested four or five deep. PyYAML's pure-Python scanner spends time on every token for each flow
collection still open, so a file of "[[[[..." costs far more than its size; its composer is
recursive; and a few hundred bytes of nested aliases expand into millions of values once
validated. The loader here refuses each of those as soon as it meets it, so any plan file is
read or refused within a second.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

# Far past any plan (the largest the launch form writes: 877 values, 5 levels) and small enough
# that the scanner's cost per token, which grows with the open flow collections, stays low.
MAX_PLAN_DEPTH = 32
MAX_PLAN_NODES = 20_000


class PlanTextError(ValueError):
    """A plan file that cannot be read as data; the message names the file and says why."""


class BoundRefused(Exception):
    """A YAML document past a BoundedLoader's bounds; the message says which."""


class BoundedLoader(yaml.SafeLoader):
    """safe_load's loader, refusing an alias, a node past max_depth levels, or past max_nodes
    in all, as the composer reaches it. A plan's bounds by default; a subclass sets others for
    other documents (runner.importer.llm_d_report: an llm-d benchmark report), and `what`
    names the document in the refusal."""

    max_depth = MAX_PLAN_DEPTH
    max_nodes = MAX_PLAN_NODES
    what = "a plan"

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.depth = 0
        self.nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            raise BoundRefused(f"{self.what} file may not use YAML aliases (*name)")
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise BoundRefused(f"more than {self.max_nodes} values, more than {self.what} has")
        if self.depth >= self.max_depth:
            raise BoundRefused(f"nested too deeply to be {self.what} (over {self.max_depth} "
                               "levels)")  # fmt: skip
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def read_plan_data(text: str, name: str) -> dict[str, Any]:
    """The mapping a plan file holds, before the schema's validation; PlanTextError else."""
    is_json = name.lower().endswith(".json")
    try:
        data = json.loads(text) if is_json else yaml.load(text, Loader=BoundedLoader)
    except BoundRefused as exc:
        raise PlanTextError(f"{name}: {exc}") from None
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise PlanTextError(f"{name}: not valid {'JSON' if is_json else 'YAML'}: {exc}") from None
    except RecursionError:  # JSON: the YAML loader stops long before
        raise PlanTextError(f"{name}: nested too deeply to be a plan") from None
    if not isinstance(data, dict):
        raise PlanTextError(f"{name}: a plan is a mapping with checkpoint, engine_configs and "
                            "loads")  # fmt: skip
    return data
