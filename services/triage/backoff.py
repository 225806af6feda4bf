"""Exponential backoff with full jitter for retried jobs.

Full jitter (a uniform draw below the exponential ceiling) spreads retries of jobs that failed
together, e.g. during a Redis blip, instead of sending them back in lock-step.
"""

from __future__ import annotations

import random


def backoff_ceiling(attempt: int, *, base: float, factor: float, cap: float) -> float:
    """Ceiling of the delay before attempt `attempt + 1`, after `attempt` failures (1-based)."""
    return float(min(cap, base * factor ** max(0, attempt - 1)))


def backoff_delay(
    attempt: int,
    *,
    base: float,
    factor: float,
    cap: float,
    rng: random.Random | None = None,
) -> float:
    ceiling = backoff_ceiling(attempt, base=base, factor=factor, cap=cap)
    # Never below half the ceiling: pure full jitter can retry at once, which defeats backoff.
    return (rng or random).uniform(ceiling / 2, ceiling)
