"""The weekend plan of a long roster, drawn on its shift types merged (decision 0057).

On a long horizon the walk finishes weekdays and types well but does not find a good pattern
of worked and free weekends: which weekends an employee can have off depends on every run
around them. When every shift type has one length, the types can be summed out: one type
"on", its cover the day's total, a cell's request cost its cheapest type's, no per-type
maximum or forbidden succession. That problem is far smaller (a cover row per day, not per
(day, type)) and the same solver plans it well; its rows keep every rule the types do not
touch (runs, rests, minutes, weekends, days off), so a free weekend it plans is one the real
rows can have. The real solve then runs with every day the plan has off pinned, and then
with only its free weekends pinned (decision 0061).

- `merge_types(problem, arrays)`: the merged problem and its offset, or None when the types
  differ in length (minutes would no longer count shifts) or there is only one. It is a
  relaxation: a lower bound of the merged problem plus the offset bounds the real one.
- `free_weekend_pins(roster, weekend, pin)`: the user's pins plus every weekend the roster
  has wholly off, pinned off.
- `off_day_pins(roster, pin)`: the user's pins plus every day the roster has off, pinned off.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from csolver.column_generation import request_penalties
from shared.roster.compiled import FREE, I32, Problem

__all__ = ["MERGED_SHIFT", "Merged", "free_weekend_pins", "merge_types", "off_day_pins"]

MERGED_SHIFT = "on"
# the C solver's bound on a request weight (GR_ERR_WEIGHT)
MAX_WEIGHT = 1 << 20


def _csr(weight: npt.NDArray[np.int64]) -> tuple[I32, I32, I32]:
    """One request of shift 0 per cell whose weight is positive, as (ptr, shift, weight)."""
    flat = np.minimum(weight.reshape(-1), MAX_WEIGHT)
    has = flat > 0
    ptr = np.concatenate(([0], np.cumsum(has))).astype(np.int32)
    n = int(has.sum())
    return ptr, np.zeros(n, np.int32), flat[has].astype(np.int32)


class Merged(NamedTuple):
    """The merged problem, and what every real roster pays in requests beyond its merged
    penalty: each cell's cheaper of working and resting."""

    problem: Problem
    offset: int


def merge_types(problem: Problem, arrays: dict[str, npt.NDArray[Any]]) -> Merged | None:
    """`problem` with its shift types summed into one, from the solver's arrays (`arrays`,
    whose requests already price the changes from a previous roster). A day's cover is the
    sum of its types' and costs the least weight among the types it asks for; working a cell
    costs what its cheapest type costs in requests, resting what resting costs, each less the
    cheaper of the two, so no merged roster costs more than a real roster with the same days
    worked. The merged rules are the real ones without the types' own (their maxima, the
    successions they forbid). So every real roster costs at least the offset plus the merged
    penalty of its days worked, and keeps every merged rule when it keeps every real one."""
    length = np.asarray(arrays["length"])
    s = int(length.size)
    if s < 2 or not np.all(length == length[0]):
        return None
    e, d = problem.n_employees, problem.n_days
    pen = request_penalties(arrays, e, d, s)
    work, rest = pen[:, :, :s].min(axis=2), pen[:, :, s]
    on = _csr(rest - work)  # resting costs more: a request to work
    off = _csr(work - rest)  # working costs more: a request to rest
    req = np.asarray(arrays["cover_req"]).reshape(d, s)
    asked = req > 0
    under = np.asarray(arrays["cover_under"]).reshape(d, s)
    over = np.asarray(arrays["cover_over"]).reshape(d, s)
    day_under = np.where(asked.any(axis=1), np.where(asked, under, MAX_WEIGHT).min(axis=1),
                         under.min(axis=1))
    pin = arrays.get("pin")
    merged = Problem(
        shift_ids=(MERGED_SHIFT,),
        employee_ids=problem.employee_ids,
        length=length[:1].astype(np.int32),
        forbidden=np.zeros((1, 1), np.uint8),
        max_shifts=np.minimum(np.asarray(arrays["max_shifts"]).sum(axis=1, keepdims=True),
                              d).astype(np.int32),
        min_minutes=arrays["min_minutes"],
        max_minutes=arrays["max_minutes"],
        max_consec=arrays["max_consec"],
        min_consec=arrays["min_consec"],
        min_off=arrays["min_off"],
        max_weekends=arrays["max_weekends"],
        day_off=arrays["day_off"],
        weekend=arrays["weekend"],
        n_weekends=problem.n_weekends,
        on_ptr=on[0], on_shift=on[1], on_weight=on[2],
        off_ptr=off[0], off_shift=off[1], off_weight=off[2],
        cover_req=req.sum(axis=1, keepdims=True).astype(np.int32),
        cover_under=day_under.reshape(d, 1).astype(np.int32),
        cover_over=over.min(axis=1, keepdims=True).astype(np.int32),
        pin=None if pin is None else np.where(pin >= 0, 0, pin).astype(np.int32),
    )
    return Merged(merged, int(np.minimum(work, rest).sum()))


def free_weekend_pins(roster: npt.ArrayLike, weekend: npt.ArrayLike,
                      pin: npt.ArrayLike | None) -> I32:
    """[E, D] pins: `pin` (None: none) with every weekend that `roster` has wholly off pinned
    off where the user pinned nothing."""
    rows = np.asarray(roster)
    days = np.asarray(weekend)
    out = _users_pins(pin, rows.shape)
    for w in np.unique(days[days >= 0]):
        cols = np.flatnonzero(days == w)
        free = (rows[:, cols] < 0).all(axis=1)
        block = out[np.ix_(free, cols)]
        out[np.ix_(free, cols)] = np.where(block == FREE, -1, block)
    return out


def off_day_pins(roster: npt.ArrayLike, pin: npt.ArrayLike | None) -> I32:
    """[E, D] pins: `pin` (None: none) with every day that `roster` has off pinned off where
    the user pinned nothing."""
    rows = np.asarray(roster)
    out = _users_pins(pin, rows.shape)
    out[(rows < 0) & (out == FREE)] = -1
    return out


def _users_pins(pin: npt.ArrayLike | None, shape: tuple[int, ...]) -> I32:
    """A copy of the user's pins to add to (None: nothing pinned)."""
    return (np.full(shape, FREE, np.int32) if pin is None
            else np.array(pin, dtype=np.int32, copy=True))
