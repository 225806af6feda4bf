"""The compiled form of a request: dense numpy arrays, exactly as the C solver takes them.

This module is the one place where the array layout is defined; `csolver/include/generetic.h`
mirrors it field by field. Every array is C-contiguous, `int32` unless noted.

Sizes: E employees, D days, S shift types, W weekends in the horizon. Eligibility (skills) is
folded into `max_shifts`: a shift type whose required skills the employee lacks gets 0. The
edge runs exempt from the minimum-run rules are those touching day 0 or day D-1.

| array            | shape     | meaning |
|------------------|-----------|---------|
| `length`         | [S]       | shift length in minutes |
| `forbidden`      | [S, S]    | uint8; 1 = b may not follow a the next day (explicit + rest) |
| `max_shifts`     | [E, S]    | most shifts of type s; 0 = not eligible; no limit = D |
| `min_minutes`    | [E]       | lower bound on total minutes (0 = none) |
| `max_minutes`    | [E]       | upper bound on total minutes (no limit = D * 1440) |
| `max_consec`     | [E]       | longest run of working days (no limit = D) |
| `min_consec`     | [E]       | shortest run of working days (1 = none), edge runs exempt |
| `min_off`        | [E]       | shortest run of days off (1 = none), edge runs exempt |
| `max_weekends`   | [E]       | most worked weekends (no limit = W) |
| `day_off`        | [E, D]    | uint8; 1 = the employee must not work that day |
| `weekend`        | [D]       | weekend index of a Saturday or Sunday, -1 on weekdays |
| `on_ptr`         | [E*D + 1] | CSR row pointers into `on_shift`/`on_weight` for cell e*D + d |
| `on_shift`       | [R_on]    | requested shift index |
| `on_weight`      | [R_on]    | penalty when the cell holds anything else (day off too) |
| `off_ptr`        | [E*D + 1] | CSR row pointers into `off_shift`/`off_weight` |
| `off_shift`      | [R_off]   | shift index the employee asked not to work |
| `off_weight`     | [R_off]   | penalty when the cell holds exactly that shift |
| `cover_req`      | [D, S]    | required number of employees on shift s, day d |
| `cover_under`    | [D, S]    | penalty per missing employee |
| `cover_over`     | [D, S]    | penalty per extra employee |
| `pin`            | [E, D]    | optional; the cell's pinned value (-1 = off), `FREE` = none |
| `previous`       | [E, D]    | optional; the previous roster's value (-1 = off), `FREE` = none |

Pins and the previous roster are optional (None when the request has none) and `change_weight`
(an int) prices each cell that differs from `previous`. The C solver takes `pin` as is and
the changes folded into the request lists (`with_changes_as_requests`): a changed cell costs
exactly what a shift-on request for the previous shift (or shift-off requests for every type,
on a previous day off) of weight `change_weight` costs.

A roster is `int32 [E, D]`: -1 for a day off, else the shift index. One shift per day per employee
is therefore structural and cannot be broken.

A weekend is a Saturday together with the Sunday after it; a horizon that starts on a Sunday or
ends on a Saturday has a one-day weekend at that edge. Day 0 of every Curtois instance is a
Monday, so there weekend k is days 7k+5 and 7k+6, exactly as bench/curtois/FORMAT.md states.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from shared.roster.model import SolveRequest

I32 = npt.NDArray[np.int32]
U8 = npt.NDArray[np.uint8]

MINUTES_PER_DAY = 24 * 60
# A cell with no pin (in `pin`) or no previous value (in `previous`).
FREE = -2


# Not frozen: a frozen dataclass sets each of the 20 fields through `object.__setattr__`,
# a noticeable share of compiling a tiny request.
@dataclass(eq=False)
class Lists:
    """`Problem`'s arrays as (nested) Python lists, same names and shapes."""

    length: list[int]
    forbidden: list[list[int]]
    max_shifts: list[list[int]]
    min_minutes: list[int]
    max_minutes: list[int]
    max_consec: list[int]
    min_consec: list[int]
    min_off: list[int]
    max_weekends: list[int]
    day_off: list[list[int]]
    weekend: list[int]
    on_ptr: list[int]
    on_shift: list[int]
    on_weight: list[int]
    off_ptr: list[int]
    off_shift: list[int]
    off_weight: list[int]
    cover_req: list[list[int]]
    cover_under: list[list[int]]
    cover_over: list[list[int]]
    pin: list[list[int]] | None = None
    previous: list[list[int]] | None = None


# dtype of each array; every array not listed is int32.
_UINT8 = frozenset({"forbidden", "day_off"})
_GRIDS = frozenset({"forbidden", "max_shifts", "day_off", "cover_req", "cover_under", "cover_over"})
# The arrays every problem has; `pin` and `previous` are optional (None).
_OPTIONAL = frozenset({"pin", "previous"})
_ARRAYS = frozenset(f.name for f in fields(Lists)) - _OPTIONAL


@dataclass(frozen=True, eq=False)
class Problem:
    """The compiled problem. Built from arrays (`Problem(...)`) or from lists (`from_lists`);
    in the second case each array is made from `lists` on first access, so a solve that never
    hands the problem to C builds none of them."""

    shift_ids: tuple[str, ...]
    employee_ids: tuple[str, ...]
    length: I32
    forbidden: U8
    max_shifts: I32
    min_minutes: I32
    max_minutes: I32
    max_consec: I32
    min_consec: I32
    min_off: I32
    max_weekends: I32
    day_off: U8
    weekend: I32
    n_weekends: int
    on_ptr: I32
    on_shift: I32
    on_weight: I32
    off_ptr: I32
    off_shift: I32
    off_weight: I32
    cover_req: I32
    cover_under: I32
    cover_over: I32
    pin: I32 | None = None
    previous: I32 | None = None
    change_weight: int = 0

    @classmethod
    def from_lists(
        cls,
        shift_ids: tuple[str, ...],
        employee_ids: tuple[str, ...],
        n_days: int,
        n_weekends: int,
        lists: Lists,
        change_weight: int = 0,
    ) -> Problem:
        problem = object.__new__(cls)
        # Written past the frozen `__setattr__`, as `cached_property` does; the array fields
        # stay unset until `__getattr__` builds them. The optional ones are set here: their
        # class-level default (None) would hide them from `__getattr__`.
        problem.__dict__.update(
            shift_ids=shift_ids,
            employee_ids=employee_ids,
            n_weekends=n_weekends,
            n_days=n_days,
            lists=lists,
            change_weight=change_weight,
            pin=None if lists.pin is None else np.array(lists.pin, dtype=np.int32),
            previous=None
            if lists.previous is None
            else np.array(lists.previous, dtype=np.int32),
        )
        return problem

    if not TYPE_CHECKING:  # mypy would otherwise accept any attribute name on a Problem

        def __getattr__(self, name: str) -> Any:
            # Only reached for an attribute not set yet: an array of a `from_lists` problem.
            lists = self.__dict__.get("lists")
            if lists is None or name not in _ARRAYS:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            value = np.array(getattr(lists, name), dtype=np.uint8 if name in _UINT8 else np.int32)
            if value.ndim == 1 and name in _GRIDS:
                value = value.reshape(self._shape(name))  # np.array of [] is 1-D
            self.__dict__[name] = value
            return value

    def _shape(self, name: str) -> tuple[int, int]:
        e, d, s = len(self.employee_ids), self.n_days, len(self.shift_ids)
        if name == "forbidden":
            return s, s
        if name == "max_shifts":
            return e, s
        if name == "day_off":
            return e, d
        return d, s

    @property
    def n_employees(self) -> int:
        return len(self.employee_ids)

    @cached_property
    def n_days(self) -> int:
        return int(self.day_off.shape[1])

    @property
    def n_shifts(self) -> int:
        return len(self.shift_ids)

    @cached_property
    def lists(self) -> Lists:
        """The arrays as Python lists, for code that reads them cell by cell (the greedy solver,
        the rules): indexing a list is several times cheaper than indexing an array."""
        lists = Lists(**{name: getattr(self, name).tolist() for name in _ARRAYS})
        if self.pin is not None:
            lists.pin = self.pin.tolist()
        if self.previous is not None:
            lists.previous = self.previous.tolist()
        return lists

    def empty_roster(self) -> I32:
        return np.full((self.n_employees, self.n_days), -1, dtype=np.int32)

    def decode(self, roster: I32) -> list[list[str | None]]:
        ids = self.shift_ids
        return [[None if s < 0 else ids[s] for s in row] for row in roster.tolist()]

    def encode(self, rows: list[list[str | None]]) -> I32:
        """Shift ids per employee and day back to a roster array; unknown ids raise KeyError."""
        index = {s: i for i, s in enumerate(self.shift_ids)}
        roster = self.empty_roster()
        for e, row in enumerate(rows):
            for d, s in enumerate(row):
                if s:
                    roster[e, d] = index[s]
        return roster


def weekend_index(start_weekday: int, days: int) -> tuple[I32, int]:
    """Weekend number of each day (-1 on weekdays) and the number of weekends."""
    weekend, n = _weekend_list(start_weekday, days)
    return np.array(weekend, dtype=np.int32), n


def _weekend_list(start_weekday: int, days: int) -> tuple[list[int], int]:
    weekend = [-1] * days
    week_to_index: dict[int, int] = {}
    for d in range(days):
        absolute = start_weekday + d  # 0 = the Monday of day 0's week
        if absolute % 7 >= 5:
            weekend[d] = week_to_index.setdefault(absolute // 7, len(week_to_index))
    return weekend, len(week_to_index)


def _csr(
    cell: list[int], shift: list[int], weight: list[int], n_cells: int
) -> tuple[list[int], list[int], list[int]]:
    """Requests as (cell, shift, weight) in the order given, grouped by cell (the order within
    a cell kept). Flat lists and a stable sort: a list per cell would be millions of objects
    at the size limits, and the garbage collector's passes over them took seconds."""
    if not cell:  # no requests at all
        return [0] * (n_cells + 1), [], []
    cells = np.asarray(cell, dtype=np.int64)
    order = np.argsort(cells, kind="stable")
    ptr = np.zeros(n_cells + 1, dtype=np.int64)
    np.cumsum(np.bincount(cells, minlength=n_cells), out=ptr[1:])
    return (
        ptr.tolist(),
        np.asarray(shift, dtype=np.int64)[order].tolist(),
        np.asarray(weight, dtype=np.int64)[order].tolist(),
    )


def compile_request(req: SolveRequest) -> Problem:
    days = req.horizon.days
    shifts = req.shift_types
    s_index = {s.id: i for i, s in enumerate(shifts)}
    n_s, n_e = len(shifts), len(req.employees)

    forbidden = [[0] * n_s for _ in range(n_s)]
    for a, st in enumerate(shifts):
        for follower in st.cannot_follow:
            forbidden[a][s_index[follower]] = 1
    if req.min_rest_minutes is not None:
        for a, sa in enumerate(shifts):
            for b, sb in enumerate(shifts):
                assert sa.start is not None and sb.start is not None  # checked by the model
                end_a = sa.start.hour * 60 + sa.start.minute + sa.length_minutes
                start_b = MINUTES_PER_DAY + sb.start.hour * 60 + sb.start.minute
                if start_b - end_a < req.min_rest_minutes:
                    forbidden[a][b] = 1

    weekend, n_weekends = _weekend_list(req.horizon.start_date.weekday(), days)

    max_shifts = [[0] * n_s for _ in range(n_e)]
    day_off = [[0] * days for _ in range(n_e)]
    # (cell, shift, weight) of every on and off request, in the request's order.
    on: tuple[list[int], list[int], list[int]] = ([], [], [])
    off: tuple[list[int], list[int], list[int]] = ([], [], [])
    required = [set(st.required_skills) for st in shifts]
    for e, emp in enumerate(req.employees):
        skills = set(emp.skills)
        limits = emp.max_shifts
        row = max_shifts[e]
        for s, st in enumerate(shifts):
            if required[s] <= skills:
                row[s] = min(limits.get(st.id, days), days)
        off_row = day_off[e]
        for d in emp.days_off:
            off_row[d] = 1
        for requests, (cell, shift, weight) in (
            (emp.shift_on_requests, on),
            (emp.shift_off_requests, off),
        ):
            for r in requests:
                cell.append(e * days + r.day)
                shift.append(s_index[r.shift])
                weight.append(r.weight)

    emps = req.employees
    no_minutes_limit = days * MINUTES_PER_DAY
    cover_req = [[0] * n_s for _ in range(days)]
    cover_under = [[0] * n_s for _ in range(days)]
    cover_over = [[0] * n_s for _ in range(days)]
    for c in req.cover:
        col = s_index[c.shift]
        cover_req[c.day][col] = c.required
        cover_under[c.day][col] = c.under_weight
        cover_over[c.day][col] = c.over_weight

    min_minutes = [e.min_minutes for e in emps]
    max_minutes = [
        no_minutes_limit if e.max_minutes is None else min(e.max_minutes, no_minutes_limit)
        for e in emps
    ]
    max_consec = [min(e.max_consecutive_shifts, days) for e in emps]
    min_consec = [min(e.min_consecutive_shifts, days) for e in emps]
    min_off = [min(e.min_consecutive_days_off, days) for e in emps]
    max_weekends = [
        n_weekends if e.max_weekends is None else min(e.max_weekends, n_weekends) for e in emps
    ]
    length = [s.length_minutes for s in shifts]
    pin: list[list[int]] | None = None
    if req.pinned or req.freeze_before_day is not None:
        pin = [[FREE] * days for _ in range(n_e)]
        for (e, d), v in req.effective_pins().items():
            pin[e][d] = -1 if v is None else v
    previous: list[list[int]] | None = None
    rows = req.previous_rows()
    if rows is not None:
        previous = [[FREE] * days for _ in range(n_e)]
        for e, prev in rows.items():
            previous[e] = [-1 if v is None else v for v in prev]
    on_ptr, on_shift, on_weight = _csr(*on, n_e * days)
    off_ptr, off_shift, off_weight = _csr(*off, n_e * days)
    # Kept as lists: the greedy solver and the rules read them as lists, and the arrays the C
    # solver takes are built from them only if it asks (`Problem.from_lists`).
    lists = Lists(
        length=length,
        forbidden=forbidden,
        max_shifts=max_shifts,
        min_minutes=min_minutes,
        max_minutes=max_minutes,
        max_consec=max_consec,
        min_consec=min_consec,
        min_off=min_off,
        max_weekends=max_weekends,
        day_off=day_off,
        weekend=weekend,
        on_ptr=on_ptr,
        on_shift=on_shift,
        on_weight=on_weight,
        off_ptr=off_ptr,
        off_shift=off_shift,
        off_weight=off_weight,
        cover_req=cover_req,
        cover_under=cover_under,
        cover_over=cover_over,
        pin=pin,
        previous=previous,
    )
    return Problem.from_lists(
        tuple(s.id for s in shifts),
        tuple(e.id for e in emps),
        days,
        n_weekends,
        lists,
        req.change_weight if previous is not None else 0,
    )


# ----------------------------------------------------------------------------- folding


def _merged_csr(
    ptr: npt.ArrayLike,
    shift: npt.ArrayLike,
    weight: npt.ArrayLike,
    cells: npt.NDArray[np.integer[Any]],
    new_shift: I32,
    w: int,
) -> tuple[I32, I32, I32]:
    """A CSR request list with one more request of weight `w` per entry of `cells`."""
    ptr_a = np.asarray(ptr, dtype=np.int64)
    n_cells = ptr_a.size - 1
    old_cells = np.repeat(np.arange(n_cells, dtype=np.int64), np.diff(ptr_a))
    all_cells = np.concatenate([old_cells, cells.astype(np.int64)])
    order = np.argsort(all_cells, kind="stable")
    shifts = np.concatenate([np.asarray(shift, dtype=np.int32), new_shift])[order]
    weights = np.concatenate(
        [np.asarray(weight, dtype=np.int32), np.full(cells.size, w, dtype=np.int32)]
    )[order]
    counts = np.bincount(all_cells, minlength=n_cells)
    new_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return new_ptr, shifts.astype(np.int32), weights.astype(np.int32)


def changes_as_requests(
    on: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    off: tuple[npt.ArrayLike, npt.ArrayLike, npt.ArrayLike],
    previous: I32,
    change_weight: int,
    n_shifts: int,
) -> tuple[tuple[I32, I32, I32], tuple[I32, I32, I32]]:
    """The (ptr, shift, weight) request lists, on and off, with the change costs folded in:
    a cell that held shift s costs `change_weight` unless it still does (a shift-on request),
    a previous day off costs it on every shift type (one shift-off request each). Both score
    every roster exactly as the `changes` rule does, so a solver that knows requests (the C
    solver, the greedy) minimises change without knowing about it."""
    prev = np.asarray(previous).reshape(-1)
    worked = np.flatnonzero(prev >= 0)
    new_on = _merged_csr(*on, worked, prev[worked].astype(np.int32), change_weight)
    free = np.flatnonzero(prev == -1)
    new_off = _merged_csr(
        *off,
        np.repeat(free, n_shifts),
        np.tile(np.arange(n_shifts, dtype=np.int32), free.size),
        change_weight,
    )
    return new_on, new_off


def with_changes_as_requests(problem: Problem) -> Problem:
    """The problem with its change costs folded into the request lists
    (`changes_as_requests`), and no `previous`."""
    if problem.previous is None:
        return problem
    lists = problem.lists
    new = Lists(**{f.name: getattr(lists, f.name) for f in fields(Lists)})
    new.previous = None
    if problem.change_weight > 0:
        on, off = changes_as_requests(
            (lists.on_ptr, lists.on_shift, lists.on_weight),
            (lists.off_ptr, lists.off_shift, lists.off_weight),
            np.asarray(problem.previous),
            problem.change_weight,
            problem.n_shifts,
        )
        new.on_ptr, new.on_shift, new.on_weight = (a.tolist() for a in on)
        new.off_ptr, new.off_shift, new.off_weight = (a.tolist() for a in off)
    return Problem.from_lists(
        problem.shift_ids, problem.employee_ids, problem.n_days, problem.n_weekends, new
    )


def with_pins_as_rules(problem: Problem, pin_weight: int) -> Problem:
    """The problem with its pins folded into what a solver without pins knows, and no `pin`:
    a pinned day off becomes a fixed day off, a pinned shift a shift-on request of
    `pin_weight`. For the greedy, which plans rows around fixed days off and requests; the
    caller still sets the pins on the roster it returns, since a request can be broken."""
    if problem.pin is None:
        return problem
    lists = problem.lists
    new = Lists(**{f.name: getattr(lists, f.name) for f in fields(Lists)})
    new.pin = None
    pin = np.asarray(problem.pin)
    new.day_off = np.where(pin == -1, 1, np.asarray(lists.day_off, dtype=np.int32)).tolist()
    flat = pin.reshape(-1)
    worked = np.flatnonzero(flat >= 0)
    new.on_ptr, new.on_shift, new.on_weight = (
        a.tolist()
        for a in _merged_csr(
            lists.on_ptr, lists.on_shift, lists.on_weight, worked,
            flat[worked].astype(np.int32), pin_weight,
        )
    )
    return Problem.from_lists(
        problem.shift_ids,
        problem.employee_ids,
        problem.n_days,
        problem.n_weekends,
        new,
        problem.change_weight,
    )


def set_pins(problem: Problem, roster: I32) -> I32:
    """`roster` with every pinned cell set to its pin (a copy when anything changes)."""
    if problem.pin is None:
        return roster
    pin = np.asarray(problem.pin)
    pinned = pin != FREE
    if np.array_equal(np.asarray(roster)[pinned], pin[pinned]):
        return roster
    out = np.array(roster, dtype=np.int32, copy=True)
    out[pinned] = pin[pinned]
    return out
