"""The greedy fallback solver: pure Python + numpy, a feasible roster at every size, in its limit.

It runs when the C solver fails, so it must return a rule-abiding roster whatever the instance,
and on time. Every hard rule of FORMAT.md lives inside one employee's row (cover, the only rule
between rows, is soft), so the roster is feasible as soon as each row is, and the solver works
row by row:

1. **Plan each row** against the cover the other rows leave (`RowPlanner`). The rules that tie a
   day to its neighbours (runs, rest between days off, rotation, fixed days off) are a small
   state machine (`Machine`). A backward pass over the days (`reach`) computes, for every day
   and state, the set of work totals (and worked weekends) the rest of the row can still add, as
   a bitset, so a forward pass never takes a step after which the minimum and maximum minutes
   or the weekend limit can no longer be met. The forward pass is a beam search (or, when time
   is short, a single walk) ranked by the cost so far plus a cost-to-go of the machine alone
   (`cost_to_go`), where a price per minute of work stands in for the minutes. The per-type
   maxima are counted by the forward pass.
2. **Improve** while time is left: one-cell changes and same-day swaps between rows that keep
   both rows feasible (`polish`), re-plans of each row against all the others, then ruin and
   recreate of a few rows at a time.

Requests with thousands of employees get their rows all at once, day by day with numpy
(`Greedy.bulk`), when planning them one by one would not fit the limit; rows that come out
infeasible are then planned one by one.

A row only ever changes into a row that keeps every hard rule (or, for a row that breaks one,
into one that keeps them all), and only when that lowers the penalty (ruin and recreate puts
the rows back otherwise), so the roster held at any moment is the best one so far: a cancel
or the deadline returns it as it is. Between two looks at the clock and the cancel flag there
is at most one row plan (which looks too, every `HALT_DAYS` days) or one day of moves. The
beam widths and the choice of bulk rows follow from the instance's size and the limit, not
from measured times, so a seed always gives the same roster unless the clock cuts a phase.

The hard rules are written once here in Python, one function per rule and counted as the
evaluator counts them (`ROW_RULES`); the one-cell check reuses the run rules on the runs around
the cell. `tests/test_greedy_rules.py` checks every copy (these, the one-cell check, the state
machine and its reach, the bulk rows) against the evaluator on random problems.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from shared.roster.compiled import I32, Problem
from shared.roster.evaluator import evaluate_rows
from shared.roster.solving import SolveControl, SolverRun

OFF = -1

# ----------------------------------------------------------------------------- one row's rules


@dataclass(frozen=True, eq=False)
class RowRules:
    """Everything one employee's row must satisfy (FORMAT.md hard rules 1-10)."""

    length: list[int]
    forbidden: list[list[int]]
    max_shifts: list[int]
    min_minutes: int
    max_minutes: int
    max_consec: int
    min_consec: int
    min_off: int
    max_weekends: int
    day_off: list[int]
    weekend: list[int]

    @classmethod
    def of(cls, p: Problem, e: int) -> RowRules:
        lists = p.lists
        return cls(
            length=lists.length,
            forbidden=lists.forbidden,
            max_shifts=lists.max_shifts[e],
            min_minutes=lists.min_minutes[e],
            max_minutes=lists.max_minutes[e],
            max_consec=lists.max_consec[e],
            min_consec=lists.min_consec[e],
            min_off=lists.min_off[e],
            max_weekends=lists.max_weekends[e],
            day_off=lists.day_off[e],
            weekend=lists.weekend,
        )


def runs(row: list[int], lo: int = 0, hi: int | None = None) -> Iterator[tuple[bool, int, int]]:
    """Maximal runs of worked or free days in row[lo:hi]: (worked, first day, length). The
    caller picks lo and hi on run boundaries, so each run is whole."""
    end = len(row) if hi is None else hi
    first = lo
    while first < end:
        worked = row[first] >= 0
        nxt = first + 1
        while nxt < end and (row[nxt] >= 0) is worked:
            nxt += 1
        yield worked, first, nxt - first
        first = nxt


def minutes_of(r: RowRules, row: list[int]) -> int:
    return sum(r.length[s] for s in row if s >= 0)


def shift_rotation(r: RowRules, row: list[int]) -> int:
    f = r.forbidden
    return sum(1 for a, b in pairwise(row) if a >= 0 and b >= 0 and f[a][b])


def max_shifts_per_type(r: RowRules, row: list[int]) -> int:
    return sum(1 for s, limit in enumerate(r.max_shifts) if row.count(s) > limit)


def max_total_minutes(r: RowRules, row: list[int]) -> int:
    return int(minutes_of(r, row) > r.max_minutes)


def min_total_minutes(r: RowRules, row: list[int]) -> int:
    return int(minutes_of(r, row) < r.min_minutes)


def max_consecutive_shifts(r: RowRules, row: list[int], lo: int = 0, hi: int | None = None) -> int:
    # Runs touching a horizon edge count too, inside the horizon only.
    return sum(1 for worked, _, n in runs(row, lo, hi) if worked and n > r.max_consec)


def _short_inner(row: list[int], lo: int, hi: int | None, want: bool, minimum: int) -> int:
    # Runs touching either horizon edge are exempt (FORMAT.md rules 7 and 8).
    if minimum <= 1:
        return 0
    last = len(row)
    return sum(
        1
        for worked, first, n in runs(row, lo, hi)
        if worked is want and n < minimum and first > 0 and first + n < last
    )


def min_consecutive_shifts(r: RowRules, row: list[int], lo: int = 0, hi: int | None = None) -> int:
    return _short_inner(row, lo, hi, True, r.min_consec)


def min_consecutive_days_off(
    r: RowRules, row: list[int], lo: int = 0, hi: int | None = None
) -> int:
    return _short_inner(row, lo, hi, False, r.min_off)


def max_weekends(r: RowRules, row: list[int]) -> int:
    worked = {w for w, s in zip(r.weekend, row, strict=True) if w >= 0 and s >= 0}
    return int(len(worked) > r.max_weekends)


def days_off(r: RowRules, row: list[int]) -> int:
    return sum(1 for fixed, s in zip(r.day_off, row, strict=True) if fixed and s >= 0)


# The hard rules of one row, named as in rules.py; each counts what that rule counts.
ROW_RULES: tuple[tuple[str, Callable[[RowRules, list[int]], int]], ...] = (
    ("shift_rotation", shift_rotation),
    ("max_shifts_per_type", max_shifts_per_type),
    ("max_total_minutes", max_total_minutes),
    ("min_total_minutes", min_total_minutes),
    ("max_consecutive_shifts", max_consecutive_shifts),
    ("min_consecutive_shifts", min_consecutive_shifts),
    ("min_consecutive_days_off", min_consecutive_days_off),
    ("max_weekends", max_weekends),
    ("days_off", days_off),
)
RUN_RULES = (max_consecutive_shifts, min_consecutive_shifts, min_consecutive_days_off)


def row_breaks(r: RowRules, row: list[int]) -> dict[str, int]:
    """Hard violations of one row per rule, as the evaluator counts them for this employee."""
    return {name: rule(r, row) for name, rule in ROW_RULES}


def row_feasible(r: RowRules, row: list[int]) -> bool:
    return not any(rule(r, row) for _, rule in ROW_RULES)


# ----------------------------------------------------------------------------- row planning


class Machine:
    """The rules that tie a day to its neighbours, for one contract, as a state machine: the
    state after a day says what the row did lately, a move is the next day's value.

    States: 0 = free (off long enough, or off since day 0: anything may follow); k = 1 ..
    min_off-1 = off for k days after a run (must stay off); then one state per (run length
    r = 1..max_consec, rotation class of the last shift), at `n_off + (r-1) * n_cls + class`. A
    type's rotation class is its row of `forbidden` among the employee's types, so the types of
    a class allow the same successors. Types that agree on class, on the classes they may
    follow and on length form a group: the machine moves by group, the walk picks the type
    inside it (by cost, within its maximum). A run shorter than the minimum may only end if it
    started on day 0 (`short`); off after a run is allowed from run length `min_consec` on.
    """

    def __init__(
        self,
        types: tuple[int, ...],
        units: list[int],
        forbidden: list[list[int]],
        max_consec: int,
        min_consec: int,
        min_off: int,
    ) -> None:
        classes: dict[tuple[int, ...], int] = {}
        cls = {
            s: classes.setdefault(tuple(forbidden[s][t] for t in types), len(classes))
            for s in types
        }
        rep = {c: s for s, c in reversed(list(cls.items()))}
        self.n_cls = n_cls = len(classes)
        grouped: dict[tuple[int, tuple[bool, ...], int], list[int]] = {}
        for s in types:
            follows = tuple(not forbidden[rep[c]][s] for c in range(n_cls))
            grouped.setdefault((cls[s], follows, units[s]), []).append(s)
        self.types = types
        self.groups = [tuple(g) for g in grouped.values()]
        self.group_units = [key[2] for key in grouped]
        self.group_cls = [key[0] for key in grouped]
        self.max_units = max(self.group_units, default=0)
        self.max_consec, self.min_consec = max_consec, min_consec
        self.n_off = n_off = max(min_off, 1)
        self.n = n_off + max_consec * n_cls
        self.after_run = 1 if n_off > 1 else 0  # the state a run's first day off enters
        allowed = [[g for g, key in enumerate(grouped) if key[1][c]] for c in range(n_cls)]
        self.chain = self._chain(allowed)

        def work(r: int, c: int) -> int:
            return n_off + (r - 1) * n_cls + c

        # Per state: the state an off day leads to, the run length below the minimum (0 if
        # none), and the moves (group, next state) a work day may take.
        self.off_next = [0] + [0 if k + 1 >= n_off else k + 1 for k in range(1, n_off)]
        self.short = [0] * n_off
        self.moves: list[list[tuple[int, int]]] = [[] for _ in range(self.n)]
        self.moves[0] = [(g, work(1, key[0])) for g, key in enumerate(grouped)]
        for r in range(1, max_consec + 1):
            for c in range(n_cls):
                self.off_next.append(self.after_run)
                self.short.append(r if r < min_consec else 0)
                if r < max_consec:
                    self.moves[work(r, c)] = [
                        (g, work(r + 1, self.group_cls[g])) for g in allowed[c]
                    ]

    @staticmethod
    def _chain(allowed: list[list[int]]) -> list[tuple[int, int, list[int]]]:
        """An order of the classes in which each one's successor groups are an earlier class's
        (`base`, -1 for none) plus a few more: rotation by minimum rest makes these sets
        nested, so a combination over a class's successors costs about one step per class."""
        order = sorted(range(len(allowed)), key=lambda c: len(allowed[c]))
        out: list[tuple[int, int, list[int]]] = []
        done: list[int] = []
        for c in order:
            mine = set(allowed[c])
            base, size = -1, 0
            for b in done:
                theirs = set(allowed[b])
                if theirs <= mine and len(theirs) > size:
                    base, size = b, len(theirs)
            extra = sorted(mine - set(allowed[base])) if base >= 0 else sorted(mine)
            out.append((c, base, extra))
            done.append(c)
        return out


# Machines outlive a solve: a service solves many small requests with the same contracts.
_MACHINES: dict[tuple[Any, ...], Machine] = {}
_MACHINES_MAX = 1024


def _machine(
    types: tuple[int, ...],
    units: list[int],
    forbidden: list[list[int]],
    max_consec: int,
    min_consec: int,
    min_off: int,
) -> Machine:
    key = (
        types,
        tuple(units[s] for s in types),
        tuple(tuple(forbidden[s][t] for t in types) for s in types),
        max_consec,
        min_consec,
        min_off,
    )
    m = _MACHINES.get(key)
    if m is None:
        m = Machine(types, units, forbidden, max_consec, min_consec, min_off)
        if len(_MACHINES) >= _MACHINES_MAX:
            _MACHINES.clear()
        _MACHINES[key] = m
    return m


def reach(
    m: Machine,
    free: list[bool],
    full: int,
    weekend_shift: tuple[list[int], list[int]] | None = None,
    gone: frozenset[int] = frozenset(),
    start: int = 0,
) -> list[list[int]]:
    """R[d][state]: bitset of the work that days d.. can still add from `state` (entered after
    day d-1) while keeping every rule of the machine; bits outside `full` are dropped.

    Bit b is b work units; with `weekend_shift`, bit w * stride + b is b units on w more worked
    weekends: working day d from the free state adds weekend_shift[0][d] to the bit index,
    from a work state weekend_shift[1][d] (a Sunday after a worked Saturday adds nothing).
    Groups in `gone` (their types used up) are not taken; days before `start` stay unset."""
    days = len(free)
    n, n_off, n_cls, after_run = m.n, m.n_off, m.n_cls, m.after_run
    max_c, min_c = m.max_consec, m.min_consec
    live = [g for g in range(len(m.groups)) if g not in gone]
    units, gcls, chain = m.group_units, m.group_cls, m.chain
    from_free, from_work = weekend_shift if weekend_shift else ([0] * days, [0] * days)
    nxt = [1] * n
    out = [nxt] * (days + 1)
    blank = [0] * len(m.groups)
    for d in range(days - 1, start - 1, -1):
        cur = [0] * n
        for k in range(1, n_off):
            cur[k] = nxt[0 if k + 1 >= n_off else k + 1]
        rest = nxt[after_run]
        work = free[d]
        acc = nxt[0]
        if work:
            e = from_free[d]
            for g in live:
                acc |= nxt[n_off + gcls[g]] << (units[g] + e)
            e = from_work[d]
        cur[0] = acc & full
        for r in range(1, max_c + 1):
            first = n_off + (r - 1) * n_cls
            o = rest if r >= min_c or r == d else 0
            if work and r < max_c:
                nb = first + n_cls
                sh = list(blank)
                for g in live:
                    sh[g] = nxt[nb + gcls[g]] << (units[g] + e)
                ors = [0] * n_cls
                for c, b, extra in chain:
                    v = ors[b] if b >= 0 else 0
                    for g in extra:
                        v |= sh[g]
                    ors[c] = v
                    cur[first + c] = (v | o) & full
            elif o:
                for c in range(n_cls):
                    cur[first + c] = o
        out[d] = nxt = cur
    return out


def cost_to_go(
    m: Machine,
    free: list[bool],
    off_cost: list[float],
    group_cost: list[list[float]],
    alive: list[list[int]],
    weekend_cost: tuple[list[float], list[float]] | None = None,
) -> list[list[float]]:
    """V[d][state]: least cost of days d.. from `state` under the machine alone (no minutes),
    through states that can still finish (nonzero in `alive`, the bitsets of `reach`).
    `weekend_cost` adds a price for starting a worked weekend on day d, from the free state
    ([0][d]) or from a run ([1][d]): it stands in for the limit on weekends."""
    days = len(free)
    no_price = [0.0] * days
    from_free, from_work = weekend_cost if weekend_cost else (no_price, no_price)
    n, n_off, n_cls, after_run = m.n, m.n_off, m.n_cls, m.after_run
    max_c, min_c = m.max_consec, m.min_consec
    gcls, chain = m.group_cls, m.chain
    n_groups = len(m.groups)
    inf = math.inf
    nxt = [0.0] * n
    out = [nxt] * (days + 1)
    for d in range(days - 1, -1, -1):
        cur = [inf] * n
        co, gc = off_cost[d], group_cost[d]
        for k in range(1, n_off):
            cur[k] = co + nxt[0 if k + 1 >= n_off else k + 1]
        rest = co + nxt[after_run]
        work = free[d]
        best = co + nxt[0]
        if work:
            wf = from_free[d]
            for g in range(n_groups):
                v = gc[g] + wf + nxt[n_off + gcls[g]]
                if v < best:
                    best = v
        cur[0] = best
        ww = from_work[d]
        for r in range(1, max_c + 1):
            first = n_off + (r - 1) * n_cls
            o = rest if r >= min_c or r == d else inf
            if work and r < max_c:
                nb = first + n_cls
                val = [gc[g] + ww + nxt[nb + gcls[g]] for g in range(n_groups)]
                mins = [inf] * n_cls
                for c, b, extra in chain:
                    v = mins[b] if b >= 0 else inf
                    for g in extra:
                        if val[g] < v:
                            v = val[g]
                    mins[c] = v
                    cur[first + c] = v if v < o else o
            else:
                for c in range(n_cls):
                    cur[first + c] = o
        live = alive[d]
        for st in range(n):
            if not live[st]:
                cur[st] = inf
        out[d] = nxt = cur
    return out


RETRIES = 4
# Cost per shift of falling one shift behind an even spread of the minutes over the free days.
PACE = 10.0
# Weekends are tracked exactly by the reach (one bitset row per weekend) up to this many bits;
# beyond it the plan first tries a fixed choice of weekends, which is far cheaper.
TRACK_BITS = 12_000
# A walk looks at the cancel flag and the clock every this many days.
HALT_DAYS = 32


class RowPlanner:
    """Plans one employee's row under given cell costs, keeping every hard rule of the row.

    Exact (finds a row whenever one exists) for the rules of the machine, fixed days off,
    weekends and the minimum and maximum minutes, through `reach`; weekends are either tracked
    by the reach or fixed before it (the most useful ones), see `TRACK_BITS`. The per-type
    maxima are kept by the walk, which can run out of types and then retries with the used-up
    types priced higher (`RETRIES`) before it gives up (returns None)."""

    def __init__(self, r: RowRules, m: Machine, unit: int, weekend_days: list[list[int]]) -> None:
        self.r, self.m = r, m
        self.days = days = len(r.day_off)
        self.min_u = min_u = -(-r.min_minutes // unit)
        self.max_u = max_u = min(r.max_minutes // unit, days * m.max_units)
        self.weekend_days = weekend_days
        self.fixed_free = [not x for x in r.day_off]
        self.group_types = [list(g) for g in m.groups]
        self.units = np.array(m.group_units, dtype=np.float64)
        units_mask = (1 << (max_u + 1)) - 1 if max_u >= 0 else 0
        # Bits b of a state's bitset with acc + b inside [min_u, max_u]: `window >> acc`.
        self.window = units_mask ^ ((1 << min_u) - 1) if min_u <= max_u else 0
        workable = sum(1 for days_w in weekend_days if any(self.fixed_free[d] for d in days_w))
        self.limit_w = limit = r.max_weekends
        # Padding above max_u keeps a shifted bit from spilling into the next weekend row.
        self.stride = stride = max_u + 1 + m.max_units
        self.tracked = limit < workable and (limit + 1) * stride <= TRACK_BITS
        self.needs_weekends = limit < workable
        self.full_untracked = units_mask
        self.full_tracked = sum(units_mask << (w * stride) for w in range(limit + 1))
        weekend = r.weekend
        self.weekend_shift = (
            [stride if weekend[d] >= 0 else 0 for d in range(days)],
            [
                stride if weekend[d] >= 0 and (d == 0 or weekend[d - 1] != weekend[d]) else 0
                for d in range(days)
            ],
        )
        self._tiles: dict[int, int] = {}
        self.blamed: frozenset[int] = frozenset()
        # Asked every few days of a walk: a cancelled solve must not wait for a long plan.
        self.halt: Callable[[], bool] = lambda: False

    def tile(self, acc: int) -> int:
        """Bits w * stride + b with acc + b inside the window, for every weekend row w."""
        t = self._tiles.get(acc)
        if t is None:
            base = self.window >> acc
            t = self._tiles[acc] = sum(base << (w * self.stride) for w in range(self.limit_w + 1))
        return t

    def free_days(self, allowed: list[bool]) -> list[bool]:
        free = list(self.fixed_free)
        for w, ok in enumerate(allowed):
            if not ok:
                for d in self.weekend_days[w]:
                    free[d] = False
        return free

    def price(self, gain: Any, free: list[bool]) -> float:
        """A cost per work unit that makes about as many units worth working as the row
        needs: the machine's cost-to-go knows nothing of the minutes otherwise."""
        best = gain / self.units[None, :]
        g = best.argmin(axis=1)
        per_unit = best[np.arange(self.days), g]
        units = self.units[g]
        mask = np.array(free, dtype=bool)
        order = np.argsort(per_unit[mask], kind="stable")
        cum = np.cumsum(units[mask][order])
        if not len(cum):
            return 0.0
        profitable = int(np.searchsorted(per_unit[mask][order], 0.0))
        have = cum[profitable - 1] if profitable else 0.0
        if have < self.min_u:
            target = self.min_u
        elif have > self.max_u:
            target = self.max_u
        else:
            return 0.0
        i = min(int(np.searchsorted(cum, target)), len(cum) - 1)
        return float(-per_unit[mask][order][i])

    def weekend_price(self, gain: Any, free: list[bool]) -> float:
        """A price for each worked weekend that leaves about `max_weekends` of them worth it:
        the value of the best weekend past the limit (working both days of a weekend, or the
        better one, against having it off)."""
        if not gain.shape[1]:
            return 0.0
        day_value = np.maximum(0.0, -gain.min(axis=1))
        values = sorted(
            (float(sum(day_value[d] for d in days if free[d])) for days in self.weekend_days),
            reverse=True,
        )
        return values[self.limit_w] if self.limit_w < len(values) else 0.0

    def weekends(self, gain: Any, jitter: Any) -> list[bool]:
        """The weekends a plan with fixed weekends may work: the `max_weekends` most useful."""
        n = len(self.weekend_days)
        day_gain = np.maximum(0.0, -gain.min(axis=1)) if gain.shape[1] else np.zeros(self.days)
        benefit = [float(sum(day_gain[d] for d in days)) for days in self.weekend_days]
        order = sorted(range(n), key=lambda w: (-benefit[w], jitter[w]))
        allowed = [False] * n
        for w in order[: self.limit_w]:
            allowed[w] = True
        return allowed

    def spread(self) -> list[bool]:
        """Weekends evenly spaced: the fallback when the most useful ones leave no feasible row."""
        n, limit = len(self.weekend_days), self.limit_w
        allowed = [False] * n
        for i in range(limit):
            allowed[(i * n) // max(limit, 1)] = True
        return allowed

    def reach(self, free: list[bool], tracked: bool, gone: frozenset[int]) -> list[list[int]]:
        if tracked:
            return reach(self.m, free, self.full_tracked, self.weekend_shift, gone)
        return reach(self.m, free, self.full_untracked, None, gone)

    def finishable(self, rs: list[list[int]], tracked: bool) -> bool:
        return bool(rs[0][0] & (self.tile(0) if tracked else self.window))

    def oracle(
        self, gain: Any, jitter: Any, gone: frozenset[int]
    ) -> tuple[list[bool], list[list[int]], bool] | None:
        """The free days, the reach and whether it tracks weekends, for a feasible plan."""
        if not self.needs_weekends:
            rs = self.reach(self.fixed_free, False, gone)
            return (self.fixed_free, rs, False) if self.finishable(rs, False) else None
        if not self.tracked:
            for allowed in (self.weekends(gain, jitter), self.spread()):
                free = self.free_days(allowed)
                rs = self.reach(free, False, gone)
                if self.finishable(rs, False):
                    return free, rs, False
        rs = self.reach(self.fixed_free, True, gone)
        return (self.fixed_free, rs, True) if self.finishable(rs, True) else None

    def plan(self, cost: Any, off_cost: Any, jitter: Any, width: int = 1) -> list[int] | None:
        """The row for cell costs cost[d, s] (work) and off_cost[d] (day off), or None.

        A beam search of `width` rows (`beam`) when width > 1, else (or when the beam dies out)
        the single walk. When the walk runs into a dead end because a group's maximum ran out,
        the next attempt plans without the groups to blame: a row that needs none of them
        cannot get stuck on them (one that needs them gets None; the caller keeps its row)."""
        m = self.m
        if m.groups:
            kappa = np.stack([cost[:, g].min(axis=1) for g in self.group_types], axis=1)
        else:
            kappa = np.zeros((self.days, 0))
        gain = kappa - off_cost[:, None]
        offc = off_cost.tolist()
        cells = cost.tolist()
        gone: frozenset[int] = frozenset()
        for _ in range(RETRIES):
            found = self.oracle(gain, jitter, gone)
            if found is None:
                return None
            free, rs, tracked = found
            p = self.price(gain, free)
            group_cost = kappa + p * self.units[None, :]
            lam = self.weekend_price(group_cost - off_cost[:, None], free) if tracked else 0.0
            if gone:
                group_cost[:, sorted(gone)] = math.inf
            from_free, from_work = self.weekend_shift
            wk_cost = ([lam * (x > 0) for x in from_free], [lam * (x > 0) for x in from_work])
            vs = cost_to_go(m, free, offc, group_cost.tolist(), rs, wk_cost)
            if width > 1 and not gone:
                row = self.beam(rs, vs, free, cells, offc, p, tracked, width, lam)
                if row is not None:
                    return row
            row = self.walk(rs, vs, free, cells, offc, p, tracked, gone, lam)
            if row is not None:
                return row
            if self.blamed <= gone:
                return None
            gone |= self.blamed
        return None

    def beam(
        self,
        rs: list[list[int]],
        vs: list[list[float]],
        free: list[bool],
        cost: list[list[float]],
        off_cost: list[float],
        p: float,
        tracked: bool,
        width: int,
        lam: float = 0.0,
    ) -> list[int] | None:
        """The walk with `width` partial rows kept per day, ranked by cost so far plus
        cost-to-go (both with the prices per work unit and weekend the cost-to-go was made
        with), the cheapest finished row by its cost alone; rows that agree on state, work
        total and weekends are merged (the cheaper stays). Each partial row counts its shifts
        per group against the group's maximum; the types inside a group are shared out
        afterwards (`share_types`)."""
        m = self.m
        off_next, short, moves, units = m.off_next, m.short, m.moves, m.group_units
        types, caps = self.group_types, self.r.max_shifts
        gcap = [sum(caps[s] for s in g) for g in types]
        stride, limit = self.stride, self.limit_w
        if tracked:
            tile = self.tile
            from_free, from_work = self.weekend_shift
        else:
            win = self.window
            from_free = from_work = [0] * self.days
        inf = math.inf
        # (cost so far, state, work units, weekends, shifts per group, path)
        Node = tuple[float, int, int, int, tuple[int, ...], Any]
        beam: list[Node] = [(0.0, 0, 0, 0, (0,) * len(types), None)]
        halt = self.halt
        for d in range(self.days):
            if d % HALT_DAYS == 0 and halt():
                return None
            rn, vn = rs[d + 1], vs[d + 1]
            cd, co = cost[d], off_cost[d]
            best_type = []
            for g in types:
                s_best = min(g, key=cd.__getitem__)
                best_type.append((s_best, cd[s_best]))
            kids: dict[tuple[int, int, int], tuple[float, Node]] = {}
            for g0, st, acc, used, cnt, path in beam:
                k = short[st]
                if k == 0 or k == d:
                    dst = off_next[st]
                    if tracked:
                        fit = tile(acc) & ((1 << ((limit - used + 1) * stride)) - 1)
                    else:
                        fit = win >> acc
                    if rn[dst] & fit:
                        f = g0 + co + p * acc + lam * used + vn[dst]
                        key = (dst, acc, used)
                        old = kids.get(key)
                        if old is None or f < old[0]:
                            kids[key] = (f, (g0 + co, dst, acc, used, cnt, (OFF, path)))
                if not free[d]:
                    continue
                w = 1 if (from_free[d] if st == 0 else from_work[d]) else 0
                if tracked and used + w > limit:
                    continue
                for grp, dst in moves[st]:
                    if cnt[grp] >= gcap[grp]:
                        continue
                    u = units[grp]
                    if tracked:
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if not rn[dst] & fit:
                        continue
                    s, c = best_type[grp]
                    g1 = g0 + c
                    f = g1 + p * (acc + u) + lam * (used + w) + vn[dst]
                    key = (dst, acc + u, used + w)
                    old = kids.get(key)
                    if old is None or f < old[0]:
                        c2 = (*cnt[:grp], cnt[grp] + 1, *cnt[grp + 1 :])
                        kids[key] = (f, (g1, dst, acc + u, used + w, c2, (s, path)))
            if not kids:
                return None
            if len(kids) > width:
                beam = [x[1] for x in sorted(kids.values(), key=lambda x: x[0])[:width]]
            else:
                beam = [x[1] for x in kids.values()]
        top = min(beam, key=lambda x: x[0]) if beam else None
        if top is None or top[0] == inf:
            return None
        row: list[int] = []
        node = top[5]
        while node is not None:
            row.append(node[0])
            node = node[1]
        row.reverse()
        return self.share_types(row, cost)

    def share_types(self, row: list[int], cost: list[list[float]]) -> list[int] | None:
        """Keep each type within its maximum by moving its dearest days to other types of its
        group (same rotation, same length), or None if the group has no room left."""
        caps = self.r.max_shifts
        counts: dict[int, int] = {}
        for s in row:
            if s >= 0:
                counts[s] = counts.get(s, 0) + 1
        over = [s for s, n in counts.items() if n > caps[s]]
        if not over:
            return row
        group_of = {s: g for g in self.group_types for s in g}
        for s in over:
            days = sorted((d for d, v in enumerate(row) if v == s), key=lambda d: -cost[d][s])
            for d in days[: counts[s] - caps[s]]:
                room = [t for t in group_of[s] if counts.get(t, 0) < caps[t]]
                if not room:
                    return None
                t = min(room, key=cost[d].__getitem__)
                row[d] = t
                counts[t] = counts.get(t, 0) + 1
                counts[s] -= 1
        return row

    def walk(
        self,
        rs: list[list[int]],
        vs: list[list[float]],
        free: list[bool],
        cost: list[list[float]],
        off_cost: list[float],
        p: float,
        tracked: bool,
        gone: frozenset[int] = frozenset(),
        lam: float = 0.0,
    ) -> list[int] | None:
        """Day by day, the value of least cost plus cost-to-go among those that keep the row
        finishable. Taking the last shift a group has left is checked against the reach of
        the row without that group (which the walk then follows), so running out of a type
        leads into no dead end the reach can see."""
        m = self.m
        off_next, short, moves, units, types = (
            m.off_next,
            m.short,
            m.moves,
            m.group_units,
            self.group_types,
        )
        caps = self.r.max_shifts
        counts = [0] * len(caps)
        left = [sum(caps[s] for s in g) for g in types]
        stride = self.stride
        if tracked:
            tile, limit = self.tile, self.limit_w
            full, wshift = self.full_tracked, self.weekend_shift
            from_free, from_work = wshift
        else:
            win = self.window
            full, wshift = self.full_untracked, None
            from_free = from_work = [0] * self.days
        inf = math.inf
        row = [OFF] * self.days
        st = acc = used = 0
        # Where the work total should be by each day if spread over the free days: falling
        # behind makes work cheaper, so the row does not reach its last weeks short of minutes.
        n_free = max(1, sum(free))
        pace_cost = PACE / max(1.0, float(self.units.mean()) if len(self.units) else 1.0)
        target = (self.min_u + self.max_u) / 2 if self.min_u else 0.0
        pace, seen = [], 0
        for f in free:
            pace.append(target * seen / n_free)
            seen += f

        halt = self.halt
        for d in range(self.days):
            if d % HALT_DAYS == 0 and halt():
                self.blamed = frozenset()
                return None
            rn, vn = rs[d + 1], vs[d + 1]
            if tracked:
                low = (1 << ((limit - used + 1) * stride)) - 1
                fit_off = tile(acc) & low
            else:
                fit_off = win >> acc
            best, best_v, best_st, best_u, best_g, best_w = inf, -2, 0, 0, -1, 0
            push = pace_cost * (pace[d] - acc)
            k = short[st]
            if k == 0 or k == d:
                dst = off_next[st]
                if rn[dst] & fit_off:
                    best, best_v, best_st = off_cost[d] + vn[dst], OFF, dst
            last: list[tuple[float, int, int, int, int, int]] = []
            if free[d]:
                cd = cost[d]
                w = 1 if (from_free[d] if st == 0 else from_work[d]) else 0
                for g, dst in moves[st]:
                    if g in gone:
                        continue
                    u = units[g]
                    if tracked:
                        if used + w > limit:
                            break
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if not rn[dst] & fit:
                        continue
                    s_best, c_best = -1, inf
                    for s in types[g]:
                        if counts[s] < caps[s] and cd[s] < c_best:
                            s_best, c_best = s, cd[s]
                    score = c_best + p * u + lam * w + vn[dst] - push
                    if left[g] == 1:
                        last.append((score, s_best, dst, u, g, w))
                    elif score < best:
                        best, best_v, best_st, best_u, best_g, best_w = score, s_best, dst, u, g, w
                for score, s, dst, u, g, w in sorted(last):
                    if score >= best:
                        break
                    # The group's last shift: taken only if the row can finish without it.
                    without = reach(m, free, full, wshift, gone | {g}, d + 1)
                    if tracked:
                        fit = tile(acc + u) & ((1 << ((limit - used - w + 1) * stride)) - 1)
                    else:
                        fit = win >> (acc + u)
                    if without[d + 1][dst] & fit:
                        best, best_v, best_st, best_u, best_g, best_w = score, s, dst, u, g, w
                        rs, gone = without, gone | {g}
                        break
            if best_v == -2:
                # Blame the groups that ran out, or would have with the shift refused above.
                self.blamed = frozenset(g for g, n in enumerate(left) if n <= 1)
                return None
            row[d] = best_v
            if best_v >= 0:
                counts[best_v] += 1
                left[best_g] -= 1
            st, acc, used = best_st, acc + best_u, used + best_w
        return row


# ----------------------------------------------------------------------------- the solver

# Seeding a numpy generator costs more than solving a tiny roster, so each thread keeps one
# generator and resets it to a remembered per-seed start state (same stream as a fresh one).
# A `Greedy` therefore owns its thread's generator until it is done, which `solve_greedy`
# guarantees by running one to completion before returning.
_SEED_STATES: dict[int, Mapping[str, Any]] = {}
_SEED_STATES_MAX = 256
_thread_rng = threading.local()


def _rng(seed: int) -> np.random.Generator:
    state = _SEED_STATES.get(seed)
    if state is None:
        state = np.random.default_rng(seed).bit_generator.state
        if len(_SEED_STATES) < _SEED_STATES_MAX:
            _SEED_STATES[seed] = state
    gen: np.random.Generator | None = getattr(_thread_rng, "gen", None)
    if gen is None:
        gen = _thread_rng.gen = np.random.default_rng(0)
    gen.bit_generator.state = state
    return gen


# A random cost below any real one per cell: equal cells then differ, so rows planned against
# the same cover spread over them instead of all taking the first.
NOISE = 0.05
# Beam widths: at most this wide, and sized so that a sweep over the rows takes this share of
# the time limit (the first plans, then each improving sweep), nor one plan longer than
# PLAN_SECONDS. A plan costs about PLAN_SECONDS_PER_STEP per step of its passes over the days
# (measured in CPU time: 240-770 ns), and each unit of beam width adds BEAM_STEP_FACTOR of that.
MAX_WIDTH = 24
PLAN_SECONDS = 0.05
PLAN_SECONDS_PER_STEP = 6e-7
BEAM_STEP_FACTOR = 0.08
CONSTRUCT_SHARE = 0.05
SWEEP_SHARE = 0.25
# Ruin and recreate: up to this many rows at a time, until this many tries per employee in a
# row bring nothing.
RUIN_ROWS = 4
RUIN_PATIENCE = 10
# Rows are made in bulk when planning them one by one would take more than this share of the
# limit; after PROBE_ROWS plans, also when the plans so far say the rest would not fit.
PROBE_ROWS = 4
BULK_SHARE = 0.8
# Time kept back for scoring the roster at the end, per cell (measured: about 0.5 us per
# cell for a feasible roster of 5000 x 366), and at most this share of the limit.
SCORE_SECONDS_PER_CELL = 1e-6
SCORE_SHARE = 0.3
SCORE_VS_SETUP = 4.0
# How far ahead of an even spread of its minimum minutes a bulk-made row keeps.
PACE_AHEAD = 1.05
Request = tuple[int, int, int]  # (day, shift, weight)


class Greedy:
    def __init__(
        self,
        p: Problem,
        seed: int,
        control: SolveControl,
        time_limit: float = math.inf,
        deadline: float = math.inf,
    ) -> None:
        self.p, self.control, self.deadline = p, control, deadline
        self.timed_out = False
        self.rng = _rng(seed)
        self.E, self.D, self.S = E, D, S = p.n_employees, p.n_days, p.n_shifts
        lists = p.lists
        unit = 0
        for x in lists.length:
            unit = math.gcd(unit, x)
        self.unit = unit or 1
        self.units = [x // self.unit for x in lists.length]
        self.weekend_days: list[list[int]] = [[] for _ in range(p.n_weekends)]
        for d, w in enumerate(lists.weekend):
            if w >= 0:
                self.weekend_days[w].append(d)
        self.length = lists.length
        self.req_l, self.under_l, self.over_l = lists.cover_req, lists.cover_under, lists.cover_over
        self.req = np.array(lists.cover_req, dtype=np.int64).reshape(D, S)
        self.under = np.array(lists.cover_under, dtype=np.float64).reshape(D, S)
        self.over = np.array(lists.cover_over, dtype=np.float64).reshape(D, S)
        self.z = [[0] * S for _ in range(D)]  # cover per day and shift
        self.roster: list[list[int]] = [[OFF] * D for _ in range(E)]
        self.rules = [RowRules.of(p, e) for e in range(E)]
        # An all-off row breaks only the minimum minutes (its one free run touches both edges).
        self.hard = [int(r.min_minutes > 0) for r in self.rules]
        # Per-row tallies for the one-cell checks: shifts per type, minutes, days worked in
        # each weekend and weekends worked.
        self.counts = [[0] * S for _ in range(E)]
        self.minutes = [0] * E
        self.wk = [[0] * max(1, p.n_weekends) for _ in range(E)]
        self.wk_used = [0] * E
        self.on_req = self._requests(lists.on_ptr, lists.on_shift, lists.on_weight)
        self.off_req = self._requests(lists.off_ptr, lists.off_shift, lists.off_weight)
        self.on_at = [self._by_day(x) for x in self.on_req]
        self.off_at = [self._by_day(x) for x in self.off_req]
        self.penalty = self.full_penalty()
        self.evaluations = 0
        self.width = 1
        self.plan_seconds = 0.0
        self._planners: dict[int, RowPlanner] = {}
        self._machines: dict[tuple[Any, ...], Machine] = {}
        self.time_limit = time_limit
        self.sweep_seconds = self.plan_work()

    def _requests(self, ptr: list[int], shift: list[int], weight: list[int]) -> list[list[Request]]:
        out: list[list[Request]] = [[] for _ in range(self.E)]
        if not shift:
            return out
        starts = np.nonzero(np.diff(np.asarray(ptr)))[0].tolist()
        for cell in starts:
            e, d = divmod(cell, self.D)
            out[e].extend((d, shift[k], weight[k]) for k in range(ptr[cell], ptr[cell + 1]))
        return out

    @staticmethod
    def _by_day(requests: list[Request]) -> dict[int, list[tuple[int, int]]]:
        out: dict[int, list[tuple[int, int]]] = {}
        for d, s, w in requests:
            out.setdefault(d, []).append((s, w))
        return out

    # ------------------------------------------------------------------ bookkeeping

    def stop(self) -> bool:
        if self.control.cancel.is_set():
            return True
        if time.perf_counter() > self.deadline:
            self.timed_out = True
            return True
        return False

    def planner(self, e: int) -> RowPlanner:
        pl = self._planners.get(e)
        if pl is None:
            r = self.rules[e]
            pl = self._planners[e] = RowPlanner(r, self.machine(e), self.unit, self.weekend_days)
            pl.halt = self.stop
        return pl

    def full_penalty(self) -> int:
        """The soft penalty of the roster held, from scratch (what the evaluator's soft rules
        sum); `penalty` is kept up to date from the changes after that."""
        z = np.array(self.z, dtype=np.int64).reshape(self.D, self.S)
        short = np.maximum(self.req - z, 0)
        extra = np.maximum(z - self.req, 0)
        total = float((short * self.under).sum() + (extra * self.over).sum())
        for e in range(self.E):
            row = self.roster[e]
            total += sum(w for d, s, w in self.on_req[e] if row[d] != s)
            total += sum(w for d, s, w in self.off_req[e] if row[d] == s)
        return round(total)

    def row_costs(self, e: int) -> tuple[Any, Any]:
        """cost[d, s] of working s on day d and off[d] of a day off for employee e, against
        the cover the other rows leave: each is exactly that cell's change of the penalty."""
        zo = np.array(self.z, dtype=np.int64).reshape(self.D, self.S)
        worked = [(d, s) for d, s in enumerate(self.roster[e]) if s >= 0]
        if worked:
            ds = np.array(worked)
            zo[ds[:, 0], ds[:, 1]] -= 1
        cost = np.where(zo < self.req, -self.under, self.over)
        off = np.zeros(self.D)
        for d, s, w in self.on_req[e]:
            cost[d] += w
            cost[d, s] -= w
            off[d] += w
        for d, s, w in self.off_req[e]:
            cost[d, s] += w
        return cost, off

    @staticmethod
    def row_cost(cost: Any, off: Any, row: list[int]) -> float:
        idx = np.array(row)
        worked = idx >= 0
        days = np.arange(len(row))
        return float(cost[days[worked], idx[worked]].sum() + off[~worked].sum())

    def set_row(self, e: int, row: list[int]) -> None:
        old, z = self.roster[e], self.z
        for d, (a, b) in enumerate(zip(old, row, strict=True)):
            if a != b:
                if a >= 0:
                    z[d][a] -= 1
                if b >= 0:
                    z[d][b] += 1
        self.roster[e] = row
        counts = [0] * self.S
        wk = [0] * len(self.wk[e])
        weekend = self.rules[e].weekend
        for d, s in enumerate(row):
            if s >= 0:
                counts[s] += 1
                if weekend[d] >= 0:
                    wk[weekend[d]] += 1
        self.counts[e], self.wk[e] = counts, wk
        self.minutes[e] = sum(n * x for n, x in zip(counts, self.length, strict=True))
        self.wk_used[e] = len(wk) - wk.count(0)

    def set_cell(self, e: int, d: int, v: int) -> None:
        row = self.roster[e]
        a = row[d]
        if a == v:
            return
        self.penalty += round(self.cell_delta(e, d, v))
        w = self.rules[e].weekend[d]
        if a >= 0:
            self.z[d][a] -= 1
            self.counts[e][a] -= 1
            self.minutes[e] -= self.length[a]
            if w >= 0:
                self.wk[e][w] -= 1
                if not self.wk[e][w]:
                    self.wk_used[e] -= 1
        if v >= 0:
            self.z[d][v] += 1
            self.counts[e][v] += 1
            self.minutes[e] += self.length[v]
            if w >= 0:
                if not self.wk[e][w]:
                    self.wk_used[e] += 1
                self.wk[e][w] += 1
        row[d] = v

    def cell_delta(self, e: int, d: int, v: int) -> float:
        """The penalty change of putting v (a shift or OFF) in cell (e, d)."""
        a = self.roster[e][d]
        if a == v:
            return 0.0
        z, req = self.z[d], self.req_l[d]
        delta = 0.0
        if a >= 0:
            delta += self.under_l[d][a] if z[a] <= req[a] else -self.over_l[d][a]
        if v >= 0:
            delta += -self.under_l[d][v] if z[v] < req[v] else self.over_l[d][v]
        on = self.on_at[e].get(d)
        if on:
            delta += sum(w for t, w in on if t != v) - sum(w for t, w in on if t != a)
        off = self.off_at[e].get(d)
        if off:
            delta += sum(w for t, w in off if t == v) - sum(w for t, w in off if t == a)
        return delta

    def cell_ok(self, e: int, d: int, v: int) -> bool:
        """Whether feasible row e stays feasible with v in cell (e, d): the rules a one-cell
        change can break, the run rules on the runs around d (the same functions as the whole
        row's check, `ROW_RULES`), the others from the tallies."""
        r, row = self.rules[e], self.roster[e]
        a = row[d]
        if a == v:
            return True
        last = self.D - 1
        if v >= 0:
            f = r.forbidden
            if r.day_off[d] or self.counts[e][v] >= r.max_shifts[v]:
                return False
            if (d > 0 and row[d - 1] >= 0 and f[row[d - 1]][v]) or (
                d < last and row[d + 1] >= 0 and f[v][row[d + 1]]
            ):
                return False
        minutes = self.minutes[e] + (self.length[v] if v >= 0 else 0)
        minutes -= self.length[a] if a >= 0 else 0
        if not r.min_minutes <= minutes <= r.max_minutes:
            return False
        if (a >= 0) == (v >= 0):
            return True
        w = r.weekend[d]
        if v >= 0 and w >= 0 and not self.wk[e][w] and self.wk_used[e] >= r.max_weekends:
            return False
        row[d] = v
        try:
            lo = max(d - 1, 0)
            kind = row[lo] >= 0
            while lo > 0 and (row[lo - 1] >= 0) is kind:
                lo -= 1
            hi = min(d + 1, last)
            kind = row[hi] >= 0
            while hi < last and (row[hi + 1] >= 0) is kind:
                hi += 1
            return not any(rule(r, row, lo, hi + 1) for rule in RUN_RULES)
        finally:
            row[d] = a

    def publish(self) -> None:
        progress = self.control.progress
        progress.best_hard = sum(self.hard)
        progress.best_penalty = self.penalty
        progress.evaluations = self.evaluations

    # ------------------------------------------------------------------ rows

    def replan(self, e: int, keep_equal: bool = False) -> bool:
        """Plan row e afresh against the others; keep it if it is better (fewer broken rules,
        then less penalty; or as good, with `keep_equal`)."""
        started = time.perf_counter()
        cost, off = self.row_costs(e)
        noisy = cost + self.rng.random(cost.shape) * NOISE
        pl = self.planner(e)
        row = pl.plan(noisy, off, self.rng.random(len(self.weekend_days)), self.width)
        self.evaluations += 1
        self.plan_seconds += time.perf_counter() - started
        if row is None or not row_feasible(self.rules[e], row):
            return False
        old = self.roster[e]
        delta = self.row_cost(cost, off, row) - self.row_cost(cost, off, old)
        if self.hard[e] == 0 and delta > (0.5 if keep_equal else -0.5):
            return False
        self.set_row(e, row)
        self.hard[e] = 0
        self.penalty += round(delta)
        return True

    def clear_row(self, e: int) -> None:
        cost, off = self.row_costs(e)
        empty = [OFF] * self.D
        before = self.row_cost(cost, off, self.roster[e])
        self.penalty += round(self.row_cost(cost, off, empty) - before)
        self.set_row(e, empty)
        self.hard[e] = int(self.rules[e].min_minutes > 0)

    def put_row(self, e: int, row: list[int], hard: int) -> None:
        cost, off = self.row_costs(e)
        before = self.row_cost(cost, off, self.roster[e])
        self.penalty += round(self.row_cost(cost, off, row) - before)
        self.set_row(e, row)
        self.hard[e] = hard

    def machine(self, e: int) -> Machine:
        r = self.rules[e]
        types = tuple(s for s in range(self.S) if r.max_shifts[s] > 0)
        key = (types, r.max_consec, r.min_consec, r.min_off)
        m = self._machines.get(key)
        if m is None:
            m = self._machines[key] = _machine(
                types, self.units, r.forbidden, r.max_consec, r.min_consec, r.min_off
            )
        return m

    def plan_work(self) -> float:
        """Seconds a sweep of row plans at width 1 takes (`PLAN_SECONDS_PER_STEP` per state
        and group a row's passes over the days visit): the instance's size alone decides the
        widths and whether rows are made in bulk, so a seed gives the same roster whatever
        the machine's load (until the clock cuts a phase short)."""
        steps = 0
        for e in range(self.E):
            m = self.machine(e)
            steps += m.n + m.max_consec * len(m.groups)
        return steps * self.D * PLAN_SECONDS_PER_STEP

    def width_for(self, share: float) -> int:
        """The widest beam that lets a sweep take at most `share` of the time limit, and one
        plan at most `PLAN_SECONDS` (a cancel waits for the plan's next look at the flag)."""
        work = self.sweep_seconds
        if work <= 0:
            return MAX_WIDTH
        by_limit = (share * self.time_limit / work - 1.0) / BEAM_STEP_FACTOR
        by_plan = (PLAN_SECONDS * self.E / work - 1.0) / BEAM_STEP_FACTOR
        return max(1, min(MAX_WIDTH, int(min(by_limit, by_plan))))

    def construct(self) -> None:
        """Every row planned once, in a random order, each against the rows before it. When
        planning row by row would take more than a share of the time (`plan_work`, or the
        plans so far), the remaining rows are made all at once (`bulk`) and only the ones
        that came out infeasible are planned one by one."""
        if not any(self.hard):
            # Every empty row already keeps the rules (no minimum minutes): one-cell moves
            # alone fill the cover of a small request, far quicker than planning rows.
            self.polish()
            if self.perfect():
                self.publish()
                return
        self.width = self.width_for(CONSTRUCT_SHARE)
        order = self.rng.permutation(self.E).tolist()
        if self.sweep_seconds > BULK_SHARE * self.time_limit:
            self.bulk(order)
        else:
            for i, e in enumerate(order):
                if self.stop():
                    return
                if i >= PROBE_ROWS:
                    # Far slower than expected (a loaded machine): the rest in bulk after all.
                    left = self.deadline - time.perf_counter()
                    if self.plan_seconds / i * (self.E - i) > left:
                        self.bulk(order[i:])
                        break
                self.replan(e)
                self.control.progress.evaluations = self.evaluations
        for e in order:
            if self.hard[e] and not self.stop():
                self.replan(e)
        self.publish()

    def improve(self) -> None:
        """Re-plan each row against all the others and make the one-cell moves, sweep after
        sweep while a sweep helps; then ruin and recreate a few rows at a time while that
        helps (`ruin`). The roster held never gets worse."""
        while not self.perfect() and not self.stop():
            better = self.polish()
            if self.perfect():
                break
            self.width = self.width_for(SWEEP_SHARE)
            for e in self.rng.permutation(self.E).tolist():
                if self.stop():
                    break
                better += self.replan(e)
            self.publish()
            if not better:
                break
        stale = 0
        while stale < RUIN_PATIENCE * self.E and not self.perfect() and not self.stop():
            stale = 0 if self.ruin() else stale + 1
            if stale % 16 == 0:
                self.publish()
        self.publish()

    def perfect(self) -> bool:
        return self.penalty == 0 and not any(self.hard)

    def ruin(self) -> bool:
        """Clear a few random rows and plan them again one after the other; keep the result
        when it is no worse (so the search can drift across ties), else put the rows back.
        True if the penalty dropped."""
        k = min(self.E, int(self.rng.integers(2, RUIN_ROWS + 1)))
        rows = self.rng.choice(self.E, size=k, replace=False).tolist()
        saved = [(e, self.roster[e], self.hard[e]) for e in rows]
        before, hard_before = self.penalty, sum(self.hard[e] for e in rows)
        for e in rows:
            self.clear_row(e)
        for e in rows:
            self.replan(e)
        hard_after = sum(self.hard[e] for e in rows)
        if (hard_after, self.penalty) <= (hard_before, before):
            return (hard_after, self.penalty) < (hard_before, before)
        for e, row, hard in saved:
            self.put_row(e, row, hard)
        return False

    # ------------------------------------------------------------------ one-cell moves

    def polish(self) -> int:
        """Cheap moves between rows that keep every row feasible: fill each under-covered
        cell from someone off that day or on an over-covered shift, then move or drop the
        shifts of over-covered cells, then swap two employees' cells on a day to grant a
        request. Returns how many moves were made."""
        made = 0
        for d in self.rng.permutation(self.D).tolist():
            if self.stop():
                return made
            made += self.fill_day(d) + self.thin_day(d)
        return made + self.grant_requests()

    def fill_day(self, d: int) -> int:
        """Fill the day's under-covered shifts one head at a time from whoever gains most;
        between equal gains, whoever has the most minutes to spare, so work spreads out."""
        z, req, roster, hard = self.z[d], self.req_l[d], self.roster, self.hard
        max_minutes, minutes = self.p.lists.max_minutes, self.minutes
        made = 0
        for s in range(self.S):
            while z[s] < req[s] and self.under_l[d][s] > 0:
                best, best_key = -1, (0.0, 0)
                for e in range(self.E):
                    a = roster[e][d]
                    if hard[e] or a == s or (a >= 0 and z[a] <= req[a]):
                        continue
                    delta = self.cell_delta(e, d, s)
                    if delta > -0.5:
                        continue
                    key = (delta, minutes[e] - max_minutes[e])
                    if (best < 0 or key < best_key) and self.cell_ok(e, d, s):
                        best, best_key = e, key
                if best < 0:
                    break
                self.set_cell(best, d, s)
                made += 1
        return made

    def thin_day(self, d: int) -> int:
        z, req, roster, hard = self.z[d], self.req_l[d], self.roster, self.hard
        made = 0
        for s in range(self.S):
            if z[s] <= req[s]:
                continue
            for e in range(self.E):
                if z[s] <= req[s]:
                    break
                if hard[e] or roster[e][d] != s:
                    continue
                best, best_delta = s, -0.5
                for v in [OFF, *range(self.S)]:
                    if v == s:
                        continue
                    delta = self.cell_delta(e, d, v)
                    if delta < best_delta and self.cell_ok(e, d, v):
                        best, best_delta = v, delta
                if best != s:
                    self.set_cell(e, d, best)
                    made += 1
        return made

    def grant_requests(self) -> int:
        """Swap two employees' values on a day when that lowers the request penalty: the cover
        is unchanged, so only the two rows' feasibility needs checking."""
        made = 0
        roster, hard = self.roster, self.hard
        for e in range(self.E):
            if self.stop():
                break
            if hard[e]:
                continue
            for d in set(self.on_at[e]) | set(self.off_at[e]):
                u = roster[e][d]
                if self.request_cost(e, d, u) == 0:
                    continue
                for f in range(self.E):
                    v = roster[f][d]
                    if f == e or v == u or hard[f]:
                        continue
                    gain = (
                        self.request_cost(e, d, u)
                        + self.request_cost(f, d, v)
                        - self.request_cost(e, d, v)
                        - self.request_cost(f, d, u)
                    )
                    if gain <= 0 or not self.cell_ok(e, d, v):
                        continue
                    self.set_cell(e, d, v)
                    if self.cell_ok(f, d, u):
                        self.set_cell(f, d, u)
                        made += 1
                        break
                    self.set_cell(e, d, u)
        return made

    def request_cost(self, e: int, d: int, v: int) -> int:
        on, off = self.on_at[e].get(d), self.off_at[e].get(d)
        cost = sum(w for t, w in on if t != v) if on else 0
        return cost + (sum(w for t, w in off if t == v) if off else 0)

    # ------------------------------------------------------------------ many rows at once

    def bulk(self, todo: list[int]) -> None:
        """Rows for the employees in `todo` all at once, day by day with numpy: the fallback
        when planning row by row would not fit the time limit (thousands of employees).

        Each day every employee is off, forced to work (a run shorter than its minimum, or
        too far behind its minimum minutes) or free to choose; the forced ones take the type
        the cover needs most, then the open heads of cover go to the free ones furthest
        behind their minutes. The rules of one day are checked before each choice, and a run
        only starts where it can reach its minimum length before a fixed day off; what a
        day-by-day choice cannot see (a row left short of its minimum minutes) is found by
        the rows' own check afterwards and planned again row by row."""
        lists, D, S = self.p.lists, self.D, self.S
        ix = np.array(todo)
        n = len(todo)
        maxc = np.array(lists.max_consec)[ix]
        minc = np.array(lists.min_consec)[ix]
        min_off = np.array(lists.min_off)[ix]
        min_m = np.array(lists.min_minutes)[ix]
        max_m = np.array(lists.max_minutes)[ix]
        max_w = np.array(lists.max_weekends)[ix]
        caps = np.array(lists.max_shifts).reshape(self.E, S)[ix]
        fixed = np.array([lists.day_off[e] for e in todo], dtype=bool).reshape(n, D)
        length = np.array(lists.length, dtype=np.int64)
        forbidden = np.array(lists.forbidden, dtype=bool).reshape(S, S)
        weekend = lists.weekend
        # free_run[:, d]: days d, d+1, ... before the next fixed day off.
        free_run = np.zeros((n, D + 1), dtype=np.int64)
        for d in range(D - 1, -1, -1):
            free_run[:, d] = np.where(fixed[:, d], 0, free_run[:, d + 1] + 1)
        free_left = np.zeros((n, D + 1), dtype=np.int64)  # free days from d on
        free_left[:, :D] = (~fixed)[:, ::-1].cumsum(axis=1)[:, ::-1]
        free_total = np.maximum(1, free_left[:, 0])
        # weekends_ahead[k, d]: weekends touched by days d .. d+k-1 (a run of k from day d).
        top_minc = int(minc.max()) if n else 1
        weekends_ahead = np.zeros((top_minc + 1, D), dtype=np.int64)
        for k in range(1, top_minc + 1):
            for d in range(D):
                weekends_ahead[k, d] = len({weekend[x] for x in range(d, min(D, d + k))} - {-1})
        # Requests by day: (rows, shifts, weight to work that shift: + asked, - asked not).
        wishes: dict[int, list[tuple[int, int, int]]] = {}
        for i, e in enumerate(todo):
            for d, t, w in self.on_req[e]:
                wishes.setdefault(d, []).append((i, t, w))
            for d, t, w in self.off_req[e]:
                wishes.setdefault(d, []).append((i, t, -w))
        run = np.zeros(n, dtype=np.int64)
        off = np.full(n, D + 1, dtype=np.int64)  # off since before day 0: no minimum applies
        last = np.full(n, -1, dtype=np.int64)
        mins = np.zeros(n, dtype=np.int64)
        used = np.zeros(n, dtype=np.int64)
        counts = np.zeros((n, S), dtype=np.int64)
        from_day0 = np.zeros(n, dtype=bool)
        this_weekend = np.zeros(n, dtype=bool)
        stuck = np.zeros(n, dtype=bool)
        out = np.full((n, D), OFF, dtype=np.int64)
        z = np.array(self.z, dtype=np.int64).reshape(D, S)
        req = self.req
        everyone = np.arange(n)
        for d in range(D):
            if d % 8 == 0 and self.stop():
                return
            w = weekend[d]
            if w >= 0 and (d == 0 or weekend[d - 1] != w):
                this_weekend[:] = False
            short = (run > 0) & (run < minc) & ~from_day0
            blocked = fixed[:, d] | (run >= maxc) | ((run == 0) & (off < min_off))
            if w >= 0:
                blocked |= ~this_weekend & (used >= max_w)
            # A run may start only if it can reach its minimum length: before a fixed day
            # off, within the weekends left, the minutes left and the type's maximum.
            start = run == 0
            reach_end = d + minc >= D
            blocked |= start & (free_run[:, d] < minc) & ~reach_end
            blocked |= start & (used + weekends_ahead[np.minimum(minc, top_minc), d] > max_w)
            allowed = ~blocked[:, None] & (counts < caps)
            allowed &= mins[:, None] + length[None, :] <= max_m[:, None]
            first = start & ~reach_end & (minc > 1)
            if first.any():
                span = minc[first][:, None]
                allowed[first] &= (mins[first][:, None] + span * length[None, :]) <= max_m[
                    first
                ][:, None]
                allowed[first] &= counts[first] + span <= caps[first]
            worked_before = run > 0
            if worked_before.any():
                allowed[worked_before] &= ~forbidden[last[worked_before]]
            can = allowed.any(axis=1)
            stuck |= short & ~can
            # Keep up with an even spread of the minimum minutes over the free days.
            due = min_m * (1.0 - free_left[:, d + 1] / free_total) * PACE_AHEAD
            behind = due - mins
            must = short | (behind > 0)
            need = req[d] - z[d]
            noise = self.rng.random(n)
            wish = None
            if d in wishes:
                wi, wt, ww = (np.array(x) for x in zip(*wishes[d], strict=True))
                wish = np.zeros((n, S))
                np.add.at(wish, (wi, wt), ww)
            choice = np.full(n, OFF, dtype=np.int64)
            forced = np.nonzero(must & can)[0]
            if len(forced):
                score = 1.0 + 2.0 * (need > 0)[None, :] + noise[forced, None]
                if wish is not None:
                    score = score + wish[forced]
                choice[forced] = np.where(allowed[forced], score, -np.inf).argmax(axis=1)
                np.add.at(need, choice[forced], -1)
            free = can & ~must
            priority = behind / np.maximum(1.0, min_m) + noise
            for s in np.argsort(-need).tolist():
                if need[s] <= 0:
                    break
                cand = np.nonzero(free & allowed[:, s] & (choice < 0))[0]
                if not len(cand):
                    continue
                key = priority[cand] + (wish[cand, s] if wish is not None else 0.0)
                k = int(need[s])
                if k < len(cand):
                    cand = cand[np.argpartition(-key, k - 1)[:k]]
                choice[cand] = s
                need[s] -= len(cand)
            worked = choice >= 0
            from_day0 = np.where(worked & (run == 0), d == 0, from_day0)
            run = np.where(worked, run + 1, 0)
            off = np.where(worked, 0, off + 1)
            last = np.where(worked, choice, -1)
            hit = everyone[worked]
            mins[hit] += length[choice[hit]]
            counts[hit, choice[hit]] += 1
            if w >= 0:
                used += worked & ~this_weekend
                this_weekend |= worked
            z[d] += np.bincount(choice[hit], minlength=S)
            out[:, d] = choice
        # The tallies straight from the arrays: a row at a time would take longer than the
        # whole sweep.
        rows, count_rows, minutes = out.tolist(), counts.tolist(), mins.tolist()
        wk = np.zeros((n, len(self.weekend_days)), dtype=np.int64)
        for w, days in enumerate(self.weekend_days):
            wk[:, w] = (out[:, days] >= 0).sum(axis=1)
        wk_rows, wk_used = wk.tolist(), (wk > 0).sum(axis=1).tolist()
        for i, e in enumerate(todo):
            self.roster[e] = rows[i]
            self.counts[e], self.minutes[e] = count_rows[i], minutes[i]
            if wk_rows[i]:
                self.wk[e], self.wk_used[e] = wk_rows[i], wk_used[i]
            if stuck[i] or mins[i] < min_m[i]:
                self.hard[e] = sum(row_breaks(self.rules[e], rows[i]).values())
            else:
                self.hard[e] = 0
        self.z = z.tolist()
        self.penalty = self.full_penalty()

    def roster_array(self) -> I32:
        return np.array(self.roster, dtype=np.int32).reshape(self.E, self.D)


def solve_greedy(
    problem: Problem, *, time_limit: float, seed: int, control: SolveControl
) -> SolverRun:
    started = time.perf_counter()
    g = Greedy(problem, seed, control, time_limit)
    # Scoring the roster at the end walks every cell, as setting up did, only more slowly: the
    # time setting up took says how busy the machine is now.
    cells = problem.n_employees * problem.n_days
    setup = time.perf_counter() - started
    reserve = max(SCORE_SECONDS_PER_CELL * cells, SCORE_VS_SETUP * setup)
    g.deadline = started + time_limit - min(SCORE_SHARE * time_limit, reserve)
    control.progress.total_generations = 0  # time-limited: progress runs with the clock
    g.construct()
    first_feasible = None if any(g.hard) else (time.perf_counter() - started) * 1000
    g.improve()
    # The roster is scored as lists: the rows are valid by construction (every value is a
    # shift index or OFF), so there is no array to convert back and check.
    score = evaluate_rows(problem, g.roster)
    elapsed_ms = (time.perf_counter() - started) * 1000
    progress = control.progress
    progress.best_hard = score.hard_violations
    progress.best_penalty = score.penalty
    progress.evaluations = g.evaluations + 1
    return SolverRun(
        roster=g.roster_array(),
        iterations=1,
        evaluations=g.evaluations + 1,
        time_to_first_feasible_ms=first_feasible if score.hard_violations == 0 else None,
        time_to_best_ms=elapsed_ms,
        cancelled=control.cancel.is_set(),
        timed_out=g.timed_out,
        evaluation=score,
    )
