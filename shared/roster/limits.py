"""Size limits for a solve request, configurable per deployment.

Passed to pydantic through the validation context, so one model serves the CLI (generous
limits) and the services (limits from settings) alike.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limits:
    max_employees: int = 5_000
    max_days: int = 366
    max_shift_types: int = 64
    max_json_bytes: int = 8 * 1024 * 1024

    @classmethod
    def from_env(cls) -> Limits:
        """Read `SOLVER_MAX_*` variables; unset ones keep the defaults."""
        d = cls()
        return cls(
            max_employees=int(os.environ.get("SOLVER_MAX_EMPLOYEES", d.max_employees)),
            max_days=int(os.environ.get("SOLVER_MAX_DAYS", d.max_days)),
            max_shift_types=int(os.environ.get("SOLVER_MAX_SHIFT_TYPES", d.max_shift_types)),
            max_json_bytes=int(os.environ.get("SOLVER_MAX_JSON_BYTES", d.max_json_bytes)),
        )

    @classmethod
    def from_context(cls, context: Mapping[str, Any] | None) -> Limits:
        if context and isinstance(context.get("limits"), Limits):
            return context["limits"]  # type: ignore[no-any-return]
        return cls()
