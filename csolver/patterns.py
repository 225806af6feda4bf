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
weekends pinned (decisions 0061, 0062). On a long horizon of several lengths the types merged
by length make a master whose root gets nowhere in the minute (Instance 24); there all types
are counted as one, the minutes read as a window of shifts (decision 0063): a plan, no longer
a relaxation, and the walk on its days off starts from rows built on them.

- `merge_types(problem, arrays)`: the merged problem and its offset, or None when no two
  types share a length. It is a relaxation: a lower bound of the merged problem plus the
  offset bounds the real one.
- `count_types(problem, arrays)`: the problem with all its types counted as one, for a plan
  only (its offset None: no bound).
- `rows_on_plan(c_problem, arrays, pin, plan, fallback)`: a roster keeping every real rule,
  row by row under the cover and the pins (a plan's days off among them), near the plan.
- `free_weekend_pins(roster, weekend, pin)`: the user's pins plus every weekend the roster
  has wholly off, pinned off.
- `off_day_pins(roster, pin)`: the user's pins plus every day the roster has off, pinned off.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from csolver._generetic import ffi, lib
from csolver.column_generation import FORBIDDEN, hold_pins, request_penalties
from shared.roster.compiled import FREE, I32, Problem

__all__ = [
    "MERGED_SHIFT", "Merged", "count_types", "free_weekend_pins", "merge_types", "off_day_pins",
    "rows_on_plan",
]

MERGED_SHIFT = "on"
# count_types: the shifts an employee's window is widened by on either side (Instance 24's
# windows are then 4-5 shifts wide)
COUNT_SLACK = 1
# rows_on_plan: what resting costs, over the requests, on a day the plan works: above a short
# slot's usual weight (100), so that a row follows the plan where the cover allows
REST_ON_PLAN = 300
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
    penalty: each cell's cheaper of working and resting; None when the merged problem is not
    a relaxation (`count_types`), so that its bound says nothing of the real one."""

    problem: Problem
    offset: int | None


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


def count_types(problem: Problem, arrays: dict[str, npt.NDArray[Any]],
                slack: int = COUNT_SLACK) -> Merged:
    """`problem` with all its types summed into one, for a plan only (its offset None): as
    `merge_types` does for one length, with each employee's minutes window read as a window
    of shifts. An employee's shift is taken to last the mean length of the types it may work,
    weighted by how many of each the cover asks for, and the window is widened by `slack`
    shifts either side. Not a relaxation: a real row may work more or fewer shifts than its
    window, and its successions and minutes are the real rows' to settle
    (`rows_on_plan`, then the walk)."""
    length = np.asarray(arrays["length"]).astype(np.float64)
    s = int(length.size)
    allowed = np.asarray(arrays["max_shifts"]).reshape(problem.n_employees, s) > 0
    asked = np.asarray(arrays["cover_req"]).reshape(problem.n_days, s).sum(axis=0)
    weight = allowed * np.maximum(asked, 1)[None, :]
    total = weight.sum(axis=1)
    mean = np.where(total > 0, (weight * length[None, :]).sum(axis=1) / np.maximum(total, 1),
                    length.mean())
    counted = dict(arrays)
    counted["length"] = np.ones(s, np.int32)
    low = np.floor(np.asarray(arrays["min_minutes"]) / mean) - slack
    high = np.ceil(np.asarray(arrays["max_minutes"]) / mean) + slack
    counted["min_minutes"] = np.maximum(low, 0).astype(np.asarray(arrays["min_minutes"]).dtype)
    counted["max_minutes"] = np.minimum(high, problem.n_days).astype(
        np.asarray(arrays["max_minutes"]).dtype)
    merged = merge_types(problem, counted)
    assert merged is not None  # every type has the one length here
    return Merged(merged.problem, None)


def rows_on_plan(c_problem: Any, arrays: dict[str, npt.NDArray[Any]], pin: I32,
                 plan: npt.ArrayLike, fallback: npt.ArrayLike,
                 stop: Callable[[], bool] = lambda: False) -> I32:
    """A roster that keeps every real rule and, where it can, every pin (a plan's days off
    among them): each employee's row in turn, by the quick row search (a few ms on 364 days),
    under its requests, the cover the rows before it leave (a short slot pays its weight, an
    extra one its weight), `pin` and REST_ON_PLAN for resting on a day `plan` works (a cell
    not pinned). A row the search cannot build under the cover is searched again without
    it, as the greedy start's rows are (row_dp.c: 25 of 24's 150); one it still cannot build
    is `fallback`'s (the best real roster so far: it may break the pins). So the walk on a
    plan's days off starts feasible, not from a greedy start that its pins leave broken for
    seconds (Instance 24: 13 s). Once `stop` says so (a cancel, the deadline: 24's 150 rows
    take about a second), the rows not yet built are the fallback's.

    The greedy start builds rows so in C too (greedy_start.c), but on a large roster it
    then walks from a slot greedy, which these pins leave broken; here the rows are all."""
    e, d = np.asarray(pin).shape
    s = int(np.asarray(arrays["length"]).size)
    cost = request_penalties(arrays, e, d, s).astype(np.int64)  # a copy: written below
    hold_pins(cost, np.asarray(pin), s)
    rest = (np.asarray(plan) >= 0) & (np.asarray(pin) == FREE)
    cost[:, :, s][rest] += REST_ON_PLAN
    alone = cost.copy()
    need = np.asarray(arrays["cover_req"]).reshape(d, s).astype(np.int64).copy()
    under = np.asarray(arrays["cover_under"]).reshape(d, s).astype(np.int64)
    over = np.asarray(arrays["cover_over"]).reshape(d, s).astype(np.int64)
    rows = np.full((e, d), -1, np.int32)
    hard = np.full(e, -1, np.int64)
    bound = np.zeros(e, np.int64)
    out = np.array(fallback, dtype=np.int32, copy=True)

    def search(table: npt.NDArray[np.int64], k: int) -> bool:
        # only row k of the table is read: the other rows may hold anything
        code = lib.gr_price_rows_range(
            c_problem, ffi.cast("int64_t *", ffi.from_buffer(table)),
            ffi.cast("int32_t *", ffi.from_buffer(rows)),
            ffi.cast("int64_t *", ffi.from_buffer(hard)),
            ffi.cast("int64_t *", ffi.from_buffer(bound)), 0, k, 1)
        if code != 0:
            raise RuntimeError(f"gr_price_rows_range failed with code {code}")
        return bool(hard[k] != -1)

    for k in range(e):
        if stop():
            break
        row = cost[k]
        free = row[:, :s] != FORBIDDEN
        # the cover's marginal cost of one more shift in each slot, as row_dp.c prices it
        row[:, :s][free] += np.where(need > 0, -under, over)[free]
        if search(cost, k) or search(alone, k):
            out[k] = rows[k]
        worked = np.flatnonzero(out[k] >= 0)
        need[worked, out[k, worked]] -= 1
    return out


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
