"""How good a roster is, against the least penalty any roster of its request can have.

A solver that proves a lower bound (the generetic solver's column phase: the LP over whole rows
plus each employee's most negative reduced cost) lets a result say more than its penalty: how
far it may still be from the optimum (`gap`), and whether it is the optimum (`proven_optimal`).
The result, the completed event, the progress messages, the CLI and the console all read these
figures from here, so they agree on one definition:

- `lower_bound`: the bound as a penalty. Penalties are whole numbers, so a fractional LP bound
  rounds up (less a hair for the LP's floating point).
- `gap`: (penalty - bound) / bound, relative to the bound as the benchmark's gap is relative to
  the optimum (0.05 = the roster costs at most 5 % more than the best one). 0 when both are 0;
  unknown (None) without a bound, with a bound of 0 under a positive penalty (no relative
  figure exists), and for a roster that breaks a hard rule: its soft penalty is not comparable
  with the bound of a feasible roster.
- `proven_optimal`: the roster breaks no hard rule and its penalty meets the bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# An LP bound within this of a whole number is that number (HiGHS's tolerances are ~1e-7).
ROUNDING = 1e-6


@dataclass(frozen=True)
class Optimality:
    lower_bound: int | None = None
    gap: float | None = None
    proven_optimal: bool = False


def bound_as_penalty(bound: float | None) -> int | None:
    """The least whole penalty a bound allows; None for no (or a non-finite) bound."""
    if bound is None or not math.isfinite(bound):
        return None
    return max(0, math.ceil(bound - ROUNDING))


def relative_gap(penalty: int, bound: int) -> float | None:
    if bound > 0:
        return (penalty - bound) / bound
    return 0.0 if penalty <= 0 else None


def judge(penalty: int, hard_violations: int, bound: float | None) -> Optimality:
    """The optimality figures of a roster with this penalty and these hard violations."""
    whole = bound_as_penalty(bound)
    if whole is None:
        return Optimality()
    if hard_violations > 0:
        return Optimality(lower_bound=whole)
    return Optimality(
        lower_bound=whole,
        gap=relative_gap(penalty, whole),
        proven_optimal=penalty <= whole,
    )
