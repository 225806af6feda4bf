"""Small hand-made requests for unit tests: one day pattern per rule, easy to read."""

from __future__ import annotations

from typing import Any

from shared.roster.model import SolveRequest


def tiny_request(**overrides: Any) -> dict[str, Any]:
    """A 14-day, 2-shift, 2-employee request as a plain dict (Monday start)."""
    base: dict[str, Any] = {
        "version": 1,
        "horizon": {"start_date": "2024-01-01", "days": 14},
        "shift_types": [
            {"id": "E", "start": "07:00", "length_minutes": 480},
            {"id": "N", "start": "22:00", "length_minutes": 600, "cannot_follow": ["E"]},
        ],
        "cover": [
            {"day": d, "shift": s, "required": 1, "under_weight": 100, "over_weight": 1}
            for d in range(14)
            for s in ("E", "N")
        ],
        "employees": [
            {"id": "A", "max_minutes": 14 * 600},
            {"id": "B", "max_minutes": 14 * 600},
        ],
    }
    base.update(overrides)
    return base


def request(**overrides: Any) -> SolveRequest:
    return SolveRequest.model_validate(tiny_request(**overrides))
