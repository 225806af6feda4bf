"""The plan of a long or large roster, drawn on its shift types merged (decisions 0057, 0062).

On a long horizon the walk finishes weekdays and types well but does not find a good pattern
of worked and free weekends: which weekends an employee can have off depends on every run
around them. The types of one length can be summed into one: its cover the sum of theirs, a
cell's request cost its cheapest type's, their maxima summed and a succession forbidden only
where every pair of them is. When every type has one length that leaves one type "on"; with
several lengths, one per length, so that the minutes stay exact. That problem is far smaller
(a cover row per day and length, not per day and type) and the same solver plans it well;
its rows keep every rule the types do not touch (runs, rests, minutes, weekends, days off),
so a day off it plans is one the real rows can have. The real solve then runs with every day
the plan has off pinned, and then, when the types have one length, with only its free
weekends pinned (decisions 0061, 0062).

- `merge_types(problem, arrays)`: the merged problem and its offset, or None when no two
  types share a length. It is a relaxation: a lower bound of the merged problem plus the
  offset bounds the real one.
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
    """Requests from a [cells, G] weight table, each positive weight one request of that
    merged type in that cell, in cell order, as (ptr, shift, weight)."""
    flat = np.minimum(weight, MAX_WEIGHT)
    cell, shift = np.nonzero(flat > 0)
    ptr = np.concatenate(([0], np.cumsum(np.bincount(cell, minlength=flat.shape[0]))))
    return ptr.astype(np.int32), shift.astype(np.int32), flat[cell, shift].astype(np.int32)


class Merged(NamedTuple):
    """The merged problem, and what every real roster pays in requests beyond its merged
    penalty: each cell's cheaper of working and resting."""

    problem: Problem
    offset: int


def merge_types(problem: Problem, arrays: dict[str, npt.NDArray[Any]]) -> Merged | None:
    """`problem` with its shift types summed into one per length, from the solver's arrays
    (`arrays`, whose requests already price the changes from a previous roster); None when no
    two types share a length. A day's cover of a merged type is the sum of its types' and
    costs the least weight among the types it asks for; a cell's value costs what its
    cheapest type costs in requests (resting what resting costs), less the cell's cheapest
    value (the offset), or less where requests cannot say it exactly, so no merged roster costs
    more than a real roster with the same days and lengths. The merged rules are the real ones
    with the types' maxima summed and a succession forbidden only where every pair of its
    types is. So every real roster costs at least the offset plus the merged penalty of its
    image, and keeps every merged rule when it keeps every real one."""
    length = np.asarray(arrays["length"])
    s = int(length.size)
    lengths, group = np.unique(length, return_inverse=True)
    g = int(lengths.size)
    if g == s:
        return None
    e, d = problem.n_employees, problem.n_days
    member = group[None, :] == np.arange(g)[:, None]  # [G, S]
    pen = request_penalties(arrays, e, d, s).reshape(e * d, s + 1)
    value = np.stack([np.where(member[k], pen[:, :s], np.iinfo(np.int64).max).min(axis=1)
                      for k in range(g)] + [pen[:, s]], axis=1)  # [cells, G + 1], G = off
    low = value.min(axis=1)
    extra = value - low[:, None]
    # Resting dearer than some type: a request to work the cheapest type, whose weight every
    # other value pays too, so it is at most what the dearer ones cost; the types then pay
    # what they cost beyond it as requests not to work them.
    cheapest = extra[:, :g].argmin(axis=1)
    others = np.where(np.arange(g)[None, :] == cheapest[:, None], np.iinfo(np.int64).max,
                      extra[:, :g])
    asked = np.minimum(extra[:, g], others.min(axis=1))
    work = np.zeros((e * d, g), np.int64)
    work[np.arange(e * d), cheapest] = asked
    on = _csr(work)
    off = _csr(np.maximum(extra[:, :g] - asked[:, None], 0))
    req = np.asarray(arrays["cover_req"]).reshape(d, s)
    under = np.asarray(arrays["cover_under"]).reshape(d, s)
    over = np.asarray(arrays["cover_over"]).reshape(d, s)
    forbidden = np.asarray(arrays["forbidden"]).reshape(s, s).astype(bool)
    max_shifts = np.asarray(arrays["max_shifts"]).reshape(e, s)
    cover = np.empty((3, d, g), np.int64)
    merged_forbidden = np.zeros((g, g), np.uint8)
    for k in range(g):
        r, u = req[:, member[k]], under[:, member[k]]
        cover[0, :, k] = r.sum(axis=1)
        cover[1, :, k] = np.where((r > 0).any(axis=1),
                                  np.where(r > 0, u, MAX_WEIGHT).min(axis=1), u.min(axis=1))
        cover[2, :, k] = over[:, member[k]].min(axis=1)
        for k2 in range(g):
            merged_forbidden[k, k2] = forbidden[np.ix_(member[k], member[k2])].all()
    pin = arrays.get("pin")
    ids = (MERGED_SHIFT,) if g == 1 else tuple(f"{MERGED_SHIFT}{n}" for n in lengths)
    merged = Problem(
        shift_ids=ids,
        employee_ids=problem.employee_ids,
        length=lengths.astype(np.int32),
        forbidden=merged_forbidden,
        max_shifts=np.minimum(np.stack([max_shifts[:, member[k]].sum(axis=1)
                                        for k in range(g)], axis=1), d).astype(np.int32),
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
        cover_req=cover[0].astype(np.int32),
        cover_under=cover[1].astype(np.int32),
        cover_over=cover[2].astype(np.int32),
        pin=None if pin is None else np.where(pin >= 0, group[np.maximum(pin, 0)],
                                              pin).astype(np.int32),
    )
    return Merged(merged, int(low.sum()))


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
