"""The schema's base model and version: what every result model shares.

Times inside a point are seconds on the host's monotonic clock relative to the point's start
(`PointResult.t0_monotonic`), so requests from several client processes and the engine samples
line up on one clock. Bump SCHEMA_VERSION on any incompatible change (docs/result-schema.md).
"""

from __future__ import annotations

import re
from typing import Final

from pydantic import (
    BaseModel,
    ConfigDict,
)

SCHEMA_VERSION: Final = "headroom.result/1"

REVISION_RE = re.compile(r"^[0-9a-f]{40}$")


class Schema(BaseModel):
    # Unknown keys are refused: a foreign or misspelled file fails loudly instead of half-loading.
    model_config = ConfigDict(extra="forbid")
