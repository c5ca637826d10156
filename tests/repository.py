"""The repository's own packages, as .importlinter lists them: one list for every test that
walks the source."""

from __future__ import annotations

import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def root_packages() -> tuple[str, ...]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return tuple(config["importlinter"]["root_packages"].split())
