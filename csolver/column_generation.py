"""Column generation: a roster as one row per employee, the rows priced by the C row DP.

Cover is the only rule that ties employees together; every other rule (skills, fixed days off,
rotation, run lengths, minutes, weekends, per-type maxima) lives inside one employee's row. So
the roster problem is a choice of one rule-abiding row per employee, and its LP relaxation over
rows (a "master problem", solved by HiGHS) is tight on the Curtois benchmark: within 4 points of
the proven optimum on Instances 2-8 and 10-12, 34 on 9 and 49 on 1 (docs/decisions/0008). The
rows come from pricing: under the LP's cover duals, each employee's cheapest row is exactly what
the row DP computes (`gr_price_rows`); a row whose reduced cost is negative joins the master,
until none does. A dive then turns the fractional LP into a roster: it fixes the (employee, day)
cells the LP has most nearly decided, prices again, and repeats until the LP is integral; the
dives restart from the root while time allows.

Every row is rule-abiding, so every roster offered here is hard-feasible; only cover can fall
short, and that is soft. The search stops at the deadline or when `stop()` says so, and offers
each better roster through `offer` as it finds one.
"""

from __future__ import annotations

import logging
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt

from csolver._generetic import ffi, lib

__all__ = ["ColumnOutcome", "solve_by_columns"]

_log = logging.getLogger(__name__)

# Prices go to C as integers in 1/SCALE points: the DP is exact on those, and its row is at most
# D / (2 SCALE) points off the true optimum (rounding), which the bound below allows for.
SCALE = 1000
# A cell whose LP share is at least this is fixed together with the most decided fractional one;
# 0.6 made fewer, coarser dive steps and lost 2-8 % on Instances 6, 8 and 9 (decision 0008).
DIVE_FIX = 0.8
# Each dive may take this share of the phase's time left (it paces its fixing to fit).
DIVE_SHARE = 0.5
# ... and the one dive from a root that ran out of time, this share: it is the phase's last
# step, so the rest is the GA's anyway, and a dive paced over more time fixes fewer cells a
# step. Instance 12 at 10 s: rosters of 4 299-4 328 from the dive, not 5 379-7 102 (its LP is
# 4 046), and 4 083 after the GA, not 4 100 (decision 0054).
ONLY_DIVE_SHARE = 0.9
# A new dive needs at least this much time to fix anything.
MIN_DIVE_SECONDS = 0.05
# LP solves (with pricing) after each dive step; re-converging fully made each step ~0.5 s on
# Instance 8, so few steps fitted and each fixed too much at once.
DIVE_ROUNDS = 5
DUAL_AFTER_BAR = 1  # HiGHS's dual simplex: 12.6 ms per dive solve on Instance 8, not 16.8
# Reduced cost below which a row joins the master (points; HiGHS's dual tolerance is 1e-7).
NEGATIVE = -1e-5
# The convexity row of an employee with no priced row yet is met by an artificial at this cost.
ARTIFICIAL = 1e9
# Above these sizes the master or the cost table is too large to be worth a try in seconds.
MAX_COVER_ROWS = 4096
MAX_COST_ENTRIES = 1 << 20
# Wentges smoothing of the root's cover prices toward those of the best Lagrangian bound so far.
SMOOTH = 0.5
# Up to this horizon and size (Instances 1-12: at most 28 days, 1680 cells) the GA alone is
# strong (decision 0002), so a root that does not converge in time leaves the rest of the time
# to it, as in 0008, unless its LP has settled near its bound or estimate: the GA then goes on
# from that root's dive (Instance 12 at 10 s: 4 158 -> 4 092 over eight seeds, decision 0054).
# Beyond, a root near convergence, or one that kept its pace, is dived from first.
GA_DAYS = 28
GA_CELLS = 2048
# Round 0 prices this many employees first, and goes on only if the rest fits in this share of
# the phase's time.
PROBE_EMPLOYEES = 8
ROUND0_SHARE = 0.3
# Pricing rounds a root takes to converge, for judging whether it can fit in its time.
ROOT_ROUNDS = 40
# A root that ran out of time is dived from when its LP is within this share of its bound
# (Instance 17 at 7 s: 0.2 %) or of its Lagrangian estimate (Instance 15 doubled: 1 %), or
# when it kept its pace (below); one given up by its pace and far from both is not: its dive
# is slow and poor (Instance 20 at 15 s: a roster 3.6 times the optimum) and the time is the
# GA's.
NEAR_ROOT = 0.05
# Beyond the GA's sizes, a root whose first PACE_FROM rounds say that ROOT_ROUNDS would take
# more than PACE_SLACK times its time left is given up and the time is the GA's (Instance 13:
# its rounds grow to 1 s, and it converges after ~40 s), its pace the slower of its mean and
# latest rounds (`_behind_pace`, decision 0037). A root that kept its pace but not
# converged in its time is dived from once, whatever its bound (Instance 15: its capped
# pricing leaves no bound, while its LP sits within 5 % of the optimum; decision 0026).
PACE = True
PACE_FROM = 3
# ... and its latest round is the median of this many: one round slowed by the machine's load
# gave a root up that was worth a dive (Instance 15 doubled, decision 0045)
RECENT_ROUNDS = 3
PACE_SLACK = 1.5
# Dives from the root before fix-and-optimise takes over from the best roster.
ROOT_DIVES = 1 << 30
# Fix-and-optimise: a region's first size in cells (employees x days), its time, the share of
# that for its LP, and the shortest window in days.
REGION_CELLS = 600
REGION_SECONDS = 1.0
REGION_ROUNDS = 12
REGION_MAX_SHARE = 0.1
REGION_LP_SHARE = 0.5
MIN_WINDOW = 7
FORBIDDEN = np.iinfo(np.int64).max
UNKNOWN = np.iinfo(np.int64).min
PROVEN_NONE = np.iinfo(np.int64).max  # gr_price_rows_bounded: no row keeps every rule
PIN_FREE = -2  # GR_FREE: a cell the request does not pin
NO_START = -2  # gr_price_rows_from: a start row whose first value this is gives no incumbent
# gr_price_rows: a rule-abiding row the label search could not prove cheapest (decision 0013)
CAPPED = -2
COST_LIMIT = 1 << 40
# A pricing call cannot be interrupted: a round is priced in slices of employees of about this
# many seconds, and stops between them when asked (a round of Instance 15 takes 0.5-1 s under
# load, of 13 0.5-2 s; the cancel must be seen within 200 ms).
SLICE_SECONDS = 0.05
# Labels the exact row search may keep per row in pricing beyond the GA's sizes (C's default is
# 2^17; 364-day rows stay quick). Near the root's optimum a few rows of Instance 15 ran to 2^17
# labels at 0.4-0.5 s each, and a round took 6-10 s; at 2^14 those rounds were 3.5x faster and
# the rows 1 % dearer in sum. A capped row is rule-abiding with a valid bound (0013, 0019).
LABEL_CAP = 1 << 14


def _latest_round(times: list[float]) -> float:
    """The time of a root's latest round, as its pace reads it: the median of the latest
    RECENT_ROUNDS rounds' `times` (oldest first; 0 before the first), so that one round the
    machine's load slowed does not give a root up, while rounds that grow still count."""
    return statistics.median(times[-RECENT_ROUNDS:]) if times else 0.0


def _behind_pace(rounds: int, spent: float, last: float, left: float) -> bool:
    """Whether a root that took `spent` seconds for its `rounds` rounds, `last` for the
    latest (the median of the latest RECENT_ROUNDS), clearly cannot finish ROOT_ROUNDS in the
    `left` seconds it has (never judged before PACE_FROM rounds). A round costs more as the LP
    grows (Instance 20: 0.2 s at first, 0.75 s by round 20; Instance 13: 0.13 s, then 0.9 s),
    so the pace is the slower of the mean round and the latest: by the mean alone such a root
    was given up only after a sixth of a 60 s limit, all of it lost to the GA."""
    if rounds < PACE_FROM:
        return False
    per_round = max(spent / rounds, last)
    return per_round * (ROOT_ROUNDS - rounds) > PACE_SLACK * left


def _build_first_highs_quietly() -> None:
    """HiGHS prints a banner to file descriptor 1 when a process builds its first instance,
    before any option can be set (ERGO-Code/HiGHS#2749); the services' stdout carries their
    JSON logs. So the first instance is built here, at import, with fd 1 pointed at devnull."""
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


_build_first_highs_quietly()


@dataclass(frozen=True)
class ColumnOutcome:
    """What the column phase found (its rosters went to `offer` as they came): the best one's
    penalty; `lower_bound`, a valid bound on the objective once the root LP is optimal over
    every employee's priced rows (else None); `proven_optimal` when the best roster meets it;
    `dived` when the best roster offered came from a dive (not from round 0's rows on
    requests alone); `root_lp`, the root LP's last optimal objective (None before one)."""

    penalty: int | None
    lower_bound: float | None
    proven_optimal: bool
    dived: bool = False
    root_lp: float | None = None


class _Master:
    """The LP over rows: one convexity row per employee, one cover row per
    (day, type) with an under and an over slack, one column per priced row."""

    def __init__(self, e: int, d: int, s: int, req: Any, under: Any, over: Any) -> None:
        self.e, self.d, self.s = e, d, s
        h = highspy.Highs()  # type: ignore[no-untyped-call]
        for name, value in (("output_flag", False), ("threads", 1), ("presolve", "off"),
                            ("solver", "simplex"), ("simplex_strategy", 4)):
            h.setOptionValue(name, value)
        inf = highspy.kHighsInf
        self.req = np.asarray(req, np.float64).reshape(d, s)
        n = d * s
        req_f = self.req.ravel()
        h.addRows(e, np.ones(e), np.ones(e), 0, np.zeros(e + 1, np.int32),
                  np.array([], np.int32), np.array([], np.float64))
        h.addRows(n, req_f, req_f, 0, np.zeros(n + 1, np.int32), np.array([], np.int32),
                  np.array([], np.float64))
        # column j < 2DS: slack j // 2 under (even) or over (odd); then one artificial per
        # employee; then the rows
        cost = np.empty(2 * n)
        cost[0::2] = np.asarray(under, np.float64).ravel()
        cost[1::2] = np.asarray(over, np.float64).ravel()
        h.addCols(2 * n, cost, np.zeros(2 * n), np.full(2 * n, inf), 2 * n,
                  np.arange(2 * n, dtype=np.int32), np.repeat(e + np.arange(n), 2).astype(np.int32),
                  np.tile([1.0, -1.0], n))
        h.addCols(e, np.full(e, ARTIFICIAL), np.zeros(e), np.full(e, inf), e,
                  np.arange(e, dtype=np.int32), np.arange(e, dtype=np.int32), np.ones(e))
        self.first = 2 * d * s + e
        self.h = h
        self.owner: list[int] = []
        self.rows: list[npt.NDArray[np.int32]] = []
        self.seen: set[tuple[int, bytes]] = set()
        self._barred = np.zeros(0, dtype=bool)
        self.just_barred = False
        self.strategy = 4
        self.solved = math.inf  # the objective of the last LP solved to optimality

    def add(self, emp: int, row: npt.NDArray[np.int32], cost: int) -> bool:
        key = (emp, row.tobytes())
        if key in self.seen:
            return False
        self.seen.add(key)
        days = np.nonzero(row >= 0)[0]
        idx = np.concatenate(([emp], self.e + days * self.s + row[days])).astype(np.int32)
        self.h.addCol(float(cost), 0.0, highspy.kHighsInf, idx.size, idx, np.ones(idx.size))
        self.owner.append(emp)
        self.rows.append(row.copy())
        return True

    def solve(self, seconds: float) -> bool:
        # bars leave the basis primal infeasible but dual feasible; new rows the reverse
        strategy = DUAL_AFTER_BAR if self.just_barred else 4
        if strategy != self.strategy:
            self.h.setOptionValue("simplex_strategy", strategy)
            self.strategy = strategy
        self.just_barred = False
        self.limit(seconds)
        self.h.run()
        optimal = bool(self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal)
        if optimal:
            self.solved = self.objective()
        return optimal

    def limit(self, seconds: float) -> None:
        # HiGHS's time limit counts the instance's whole run time, not this run's
        self.h.setOptionValue("time_limit", self.h.getRunTime() + max(seconds, 0.01))

    def objective(self) -> float:
        return float(self.h.getInfo().objective_function_value)

    def duals(self) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        y = np.asarray(self.h.getSolution().row_dual, dtype=np.float64)
        return y[: self.e], y[self.e :].reshape(self.d, self.s)

    def values(self) -> npt.NDArray[np.float64]:
        return np.asarray(self.h.getSolution().col_value, dtype=np.float64)[self.first :]

    def reset(self) -> None:
        """Every row may be chosen again."""
        barred = np.nonzero(self.barred[: len(self.rows)])[0]
        if barred.size:
            n = int(barred.size)
            self.h.changeColsBounds(n, (self.first + barred).astype(np.int32), np.zeros(n),
                                    np.full(n, highspy.kHighsInf))
            self.barred[barred] = False

    def bar(self, columns: npt.NDArray[np.intp]) -> None:
        """Rows that may no longer be chosen (upper bound 0)."""
        new = columns[~self.barred[columns]] if columns.size else columns
        if new.size:
            self.just_barred = True
            self.barred[new] = True
            n = int(new.size)
            self.h.changeColsBounds(n, (self.first + new).astype(np.int32), np.zeros(n),
                                    np.zeros(n))

    @property
    def barred(self) -> npt.NDArray[np.bool_]:
        if self._barred.size < len(self.rows):
            grown = np.zeros(max(len(self.rows), 2 * self._barred.size), dtype=bool)
            grown[: self._barred.size] = self._barred
            self._barred = grown
        return self._barred


def hold_pins(cost: npt.NDArray[np.int64], pin: npt.NDArray[np.int32], s: int) -> None:
    """Forbids every value of a pinned cell but its pin in a cost table [E, D, S+1], the pins
    [E, D] (PIN_FREE: none; -1: off)."""
    i, day = np.nonzero(pin != PIN_FREE)
    if i.size:
        val = pin[i, day]
        keep = np.where(val < 0, s, val)
        kept = cost[i, day, keep]
        cost[i, day, :] = FORBIDDEN
        cost[i, day, keep] = kept


def request_penalties(arrays: dict[str, npt.NDArray[Any]], e: int, d: int,
                      s: int) -> npt.NDArray[np.int64]:
    """[E, D, S+1] request penalty of each value in each cell (index S = off), from the CSR
    request lists."""
    pen = np.zeros((e * d, s + 1), dtype=np.int64)
    cells = np.repeat(np.arange(e * d), np.diff(arrays["on_ptr"]))
    w = arrays["on_weight"].astype(np.int64)
    # an on-request is broken by every value but the asked-for shift
    pen[:, :] += np.bincount(cells, weights=w, minlength=e * d).astype(np.int64)[:, None]
    np.add.at(pen, (cells, arrays["on_shift"]), -w)
    cells = np.repeat(np.arange(e * d), np.diff(arrays["off_ptr"]))
    np.add.at(pen, (cells, arrays["off_shift"]), arrays["off_weight"].astype(np.int64))
    return pen.reshape(e, d, s + 1)


class _Pricer:
    def __init__(self, c_problem: Any, e: int, d: int, s: int, keep: Any = None,
                 label_cap: int = -1) -> None:
        self.c = c_problem
        self.label_cap = label_cap  # gr_price_rows_from's (-1: C's default)
        self.keep = keep  # the buffers a sub-problem's struct points into
        self.e, self.d, self.s = e, d, s
        self.rows = np.full((e, d), -1, dtype=np.int32)
        self.hard = np.full(e, -1, dtype=np.int64)
        # a lower bound on each employee's cheapest row (in 1/SCALE points); INT64_MIN: none
        self.bound = np.zeros(e, dtype=np.int64)
        self.slice = 1  # employees priced per C call (grown to SLICE_SECONDS a call)

    def price(self, cost: npt.NDArray[np.int64], stop: Callable[[], bool] = lambda: False,
              start: npt.NDArray[np.int32] | None = None,
              ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64]] | None:
        """Each employee's cheapest row under `cost` and its status: 0 rule-abiding and
        cheapest, CAPPED rule-abiding but not proven cheapest (`bound` then holds a lower
        bound), -1 no row. None when `stop` said so between two slices of employees. `start`
        [e, d]: a known row per employee (first value NO_START: none) that the search begins
        from as its incumbent (gr_price_rows_from)."""
        first_rows = (ffi.NULL if start is None
                      else ffi.cast("int32_t *", ffi.from_buffer(start)))
        args = (self.c, ffi.cast("int64_t *", ffi.from_buffer(cost)),
                ffi.cast("int32_t *", ffi.from_buffer(self.rows)),
                ffi.cast("int64_t *", ffi.from_buffer(self.hard)),
                ffi.cast("int64_t *", ffi.from_buffer(self.bound)))
        first = 0
        while first < self.e:
            if stop():
                return None
            count = min(self.e - first, self.slice)
            began = time.monotonic()
            code = lib.gr_price_rows_from(*args, self.label_cap, first, count, first_rows)
            if code != 0:
                raise RuntimeError(f"gr_price_rows_from failed with code {code}")
            # the next slice sized to take about SLICE_SECONDS at this slice's speed
            spent = max(time.monotonic() - began, 1e-6)
            self.slice = int(min(self.e, max(1, SLICE_SECONDS * count / spent)))
            first += count
        return self.rows, self.hard


_PER_EMPLOYEE = ("max_shifts", "min_minutes", "max_minutes", "max_consec", "min_consec",
                 "min_off", "max_weekends", "day_off")
_SHARED = ("length", "forbidden", "weekend", "cover_req", "cover_under", "cover_over")


def _employee_pricer(c_problem: Any, arrays: dict[str, npt.NDArray[Any]],
                     emps: npt.NDArray[np.intp], d: int, s: int, label_cap: int = -1,
                     ) -> _Pricer:
    """A pricer for some employees only: the problem's struct cut down to their rules. Pricing
    reads requests and cover from the cost table alone, so the cut struct has no requests."""
    keep: dict[str, npt.NDArray[Any]] = {
        name: np.ascontiguousarray(arrays[name][emps]) for name in _PER_EMPLOYEE}
    keep.update({name: arrays[name] for name in _SHARED})
    n = int(emps.size)
    none_i = np.zeros(1, np.int32)
    keep["on_ptr"] = keep["off_ptr"] = np.zeros(n * d + 1, np.int32)
    keep["on_shift"] = keep["on_weight"] = keep["off_shift"] = keep["off_weight"] = none_i
    c = ffi.new("gr_problem *")
    c.n_employees, c.n_days, c.n_shifts = n, d, s
    c.n_weekends = c_problem.n_weekends
    c.n_on = c.n_off = 0
    if "pin" in arrays:
        keep["pin"] = np.ascontiguousarray(arrays["pin"][emps])
    casts = []
    for name, buf in keep.items():
        ptr = ffi.cast("uint8_t *" if buf.dtype == np.uint8 else "int32_t *",
                       ffi.from_buffer(buf))
        casts.append(ptr)
        setattr(c, name, ptr)
    return _Pricer(c, n, d, s, keep=(keep, casts), label_cap=label_cap)


@dataclass
class _Region:
    """The part of the roster a master re-optimises: employees `emps` on days [a, b); every
    other cell keeps the base roster's value (no base: the whole problem)."""

    emps: npt.NDArray[np.intp]
    a: int
    b: int


class _Problem:
    """What every master of one solve shares: sizes, request penalties, cover, the pricer over
    all employees, the best roster so far."""

    def __init__(self, c_problem: Any, arrays: dict[str, npt.NDArray[Any]], e: int, d: int,
                 stop: Callable[[], bool], offer: Callable[[npt.NDArray[np.int32], int], None],
                 priced: Callable[[int], None]) -> None:
        s = int(arrays["length"].size)
        self.c, self.arrays = c_problem, arrays
        self.e, self.d, self.s = e, d, s
        self.pen = request_penalties(arrays, e, d, s)
        self.req = np.asarray(arrays["cover_req"], np.float64).reshape(d, s)
        self.under = np.asarray(arrays["cover_under"], np.float64).reshape(d, s)
        self.over = np.asarray(arrays["cover_over"], np.float64).reshape(d, s)
        # the label search's cap in pricing: C's default (2^17) up to the GA's sizes, where
        # the dives need the cheapest rows (Instance 8 at 10 s, seeds 3-8: 3.69 % at 2^17,
        # 7.03 % at 2^14); LABEL_CAP beyond
        self.label_cap = -1 if d <= GA_DAYS and e * d <= GA_CELLS else LABEL_CAP
        self.pricer = _Pricer(c_problem, e, d, s, label_cap=self.label_cap)
        self.stop, self._offer, self.priced = stop, offer, priced
        # cells pinned by the request (GR_FREE = -2: not pinned); every priced row keeps them
        pin = arrays.get("pin")
        self.pin = None if pin is None else np.asarray(pin, np.int32).reshape(e, d)
        self.best: int | None = None
        self.roster: npt.NDArray[np.int32] | None = None

    def hold_pins(self, cost: npt.NDArray[np.int64], emps: npt.NDArray[np.intp]) -> None:
        """Forbids every value of a pinned cell but its pin in a cost table [emps, D, S+1]."""
        if self.pin is not None:
            hold_pins(cost, self.pin[emps], self.s)

    def score(self, roster: npt.NDArray[np.int32]) -> int | None:
        hard = ffi.new("int64_t *")
        penalty = ffi.new("int64_t *")
        code = lib.gr_score(self.c, ffi.cast("int32_t *", ffi.from_buffer(roster)), hard,
                            penalty)
        return int(penalty[0]) if code == 0 and hard[0] == 0 else None

    def consider(self, roster: npt.NDArray[np.int32]) -> int | None:
        """Keeps and offers the roster if it is hard-feasible and no worse than the best; its
        penalty (None if infeasible)."""
        penalty = self.score(roster)
        if penalty is not None and (self.best is None or penalty <= self.best):
            better = self.best is None or penalty < self.best
            self.best, self.roster = penalty, roster.copy()
            if better:
                self._offer(roster.copy(), penalty)
        return penalty


class _Sub:
    """One master over a region, with its pricing, column generation and dives."""

    def __init__(self, pb: _Problem, region: _Region,
                 base: npt.NDArray[np.int32] | None) -> None:
        self.pb, self.region, self.base = pb, region, base
        e, d, s = pb.e, pb.d, pb.s
        emps, a, b = region.emps, region.a, region.b
        self.n_days = b - a
        req = pb.req[a:b].copy()
        if base is not None:
            # the cover of the employees outside the region is fixed: it only lowers the
            # requirement (an over-covered slot gets a negative one, met by its over slack)
            others = np.setdiff1d(np.arange(e), emps)
            part = base[others, a:b]
            for k in range(s):
                req[:, k] -= (part == k).sum(axis=0)
        self.master = _Master(int(emps.size), self.n_days, s, req, pb.under[a:b], pb.over[a:b])
        self.pricer = (pb.pricer if emps.size == e
                       else _employee_pricer(pb.c, pb.arrays, emps, d, s, pb.label_cap))
        self.pen = pb.pen[emps, a:b]  # [e', n, S+1]
        self.template = np.zeros((emps.size, d, s + 1), dtype=np.int64)
        if base is not None:
            # outside the window every cell keeps its base value, free of cost
            outside = np.ones(d, dtype=bool)
            outside[a:b] = False
            self.template[:, outside, :] = FORBIDDEN
            days = np.nonzero(outside)[0]
            vals = base[emps][:, days]
            self.template[np.arange(emps.size)[:, None], days[None, :],
                          np.where(vals < 0, s, vals)] = 0
            for i, emp in enumerate(emps):
                row = base[emp, a:b]
                self.master.add(i, row, self.row_cost(i, row))
        self.fixed: dict[tuple[int, int], int] = {}
        self.whole = base is None
        self.pricing, self.rounds = 0.0, 0  # time in pricing calls, and their number
        self.paced_out = False  # `generate` gave up by its pace, not at its time
        # the best Lagrangian bound seen (whole problem, nothing fixed), and its prices
        self.lower = -math.inf
        self.center: npt.NDArray[np.float64] | None = None
        self.estimate = -math.inf  # the Lagrangian estimate at the centre

    def settled(self) -> bool:
        """Whether the last LP solved is within NEAR_ROOT of its bound or of its Lagrangian
        estimate: nearly as good as converged for a dive. The estimate is what says so where
        capped pricing leaves the bound far below (Instances 15 and 15 doubled)."""
        solved = self.master.solved
        return solved < ARTIFICIAL and (
            solved - max(self.lower, self.estimate) <= NEAR_ROOT * abs(solved))

    def base_cost(self) -> float:
        """The base roster's objective in this master (its rows and the region's cover)."""
        assert self.base is not None
        s, emps, a, b = self.pb.s, self.region.emps, self.region.a, self.region.b
        rows = self.base[emps, a:b]
        total = float(sum(self.row_cost(i, rows[i]) for i in range(emps.size)))
        count = np.stack([(rows == k).sum(axis=0) for k in range(s)], axis=1)
        req = self.master.req
        total += float((np.maximum(req - count, 0) * self.pb.under[a:b]).sum())
        total += float((np.maximum(count - req, 0) * self.pb.over[a:b]).sum())
        return total

    def row_cost(self, i: int, row: npt.NDArray[np.int32]) -> int:
        s = self.pb.s
        return int(self.pen[i, np.arange(self.n_days), np.where(row < 0, s, row)].sum())

    def price_round(self, pi: npt.NDArray[np.float64], mu: npt.NDArray[np.float64],
                    at: npt.NDArray[np.float64]) -> int:
        """Prices every row under the cover prices `at`, adds each whose reduced cost under the
        LP's duals (pi, mu) is negative; returns the rows added (-1: some employee could not be
        priced). On the whole problem, also updates the Lagrangian bound at `at`."""
        pb = self.pb
        s, n, a, b = pb.s, self.n_days, self.region.a, self.region.b
        table = self.pen.astype(np.float64)
        table[:, :, :s] -= at[None, :, :]
        cost = self.template.copy()
        cost[:, a:b, :] = np.clip(np.rint(table * SCALE), -COST_LIMIT, COST_LIMIT)
        pb.hold_pins(cost, self.region.emps)
        for (i, day), val in self.fixed.items():
            keep = cost[i, a + day, val]
            cost[i, a + day, :] = FORBIDDEN
            cost[i, a + day, val] = keep
        began = time.monotonic()
        got = self.pricer.price(cost, pb.stop, self._support_rows())
        self.pricing += time.monotonic() - began
        if got is None:
            return -1  # stopped: not a round that found nothing
        rows, hard = got
        self.rounds += 1
        pb.priced(int(self.region.emps.size))
        if ((hard == -1) & (self.pricer.bound == PROVEN_NONE)).any():
            return -1
        # a search that stopped at its cap before it found a row (hard -1, with a bound)
        # leaves that employee without a new column this round; the others still count
        valid = (hard == 0) | (hard == CAPPED)
        local = rows[:, a:b]
        m = local.shape[0]
        vals = np.where(local < 0, s, local)
        requests = self.pen[np.arange(m)[:, None], np.arange(n)[None, :], vals].sum(axis=1)
        worked = local >= 0
        safe = np.where(worked, local, 0)
        days = np.arange(n)[None, :]
        lp_mu = np.where(worked, mu[days, safe], 0.0).sum(axis=1)
        rc = requests - pi - lp_mu
        added = 0
        for j in np.nonzero(valid & (rc < NEGATIVE))[0]:
            if self.master.add(int(j), local[j], int(requests[j])):
                added += 1
        if not self.fixed:
            # Lagrangian bound at `at` (inside the slacks' box, so they add nothing): each
            # employee's cheapest rule-abiding row (exact, or the label search's bound on it
            # when capped), less the rounding of the prices. A region's bound is only its own
            # (its rows are pinned outside it): it centres the smoothing, never reported.
            at_mu = np.where(worked, at[days, safe], 0.0).sum(axis=1)
            cheapest = np.where(hard == 0, requests - at_mu, self.pricer.bound / SCALE)
            bound = (float((self.master.req * at).sum()) + float(cheapest.sum())
                     - m * n * 0.5 / SCALE)
            known = (hard == 0).all() or (self.pricer.bound[hard != 0] != UNKNOWN).all()
            if known and bound > self.lower:
                self.lower = bound
            # The smoothing's centre: the prices where the Lagrangian function, estimated
            # with the rows found (a capped row's cost is at least the cheapest's), is
            # highest. It equals the bound when every row is exact. Centred on the bound
            # alone, a capped search's weak bound kept the centre at early prices (Instance
            # 15: the bound stalled at round 10 and most later rounds mispriced).
            found = np.where(valid, requests - at_mu, self.pricer.bound / SCALE)
            estimate = float((self.master.req * at).sum()) + float(found.sum())
            if (valid | (self.pricer.bound != UNKNOWN)).all() and estimate > self.estimate:
                self.estimate, self.center = estimate, at.copy()
        return added

    def _support_rows(self) -> npt.NDArray[np.int32] | None:
        """Each employee's row with the largest value in the LP just solved (NO_START where it
        has none), for pricing to start from: a search that hits its cap then still returns a
        row no dearer than one the LP uses, and prunes by its cost from the start (Instance
        15: capped searches returned rows dearer than the LP's own, and the root stopped 3.8 %
        above the optimum; decision 0039). The whole problem only: a region's master holds
        rows of its days alone."""
        master = self.master
        if self.base is not None or not master.rows:
            return None
        x = master.values()[: len(master.rows)]
        owner = np.asarray(master.owner)
        order = np.lexsort((x, owner))  # by employee, then by value: each one's last is its best
        last = order[np.r_[owner[order][1:] != owner[order][:-1], True]]
        start = np.full((self.pb.e, self.pb.d), NO_START, dtype=np.int32)
        for j in last[x[last] > 1e-9]:
            start[owner[j]] = master.rows[j]
        return start

    def generate(self, until: float, most: int = 1 << 30, smooth: float = 0.0,
                 pace: bool = False) -> bool:
        """Columns until none improves (True), or time is up, or after `most` LP solves. With
        `smooth` > 0, pricing is at the prices pulled that far toward the best bound's
        (Wentges smoothing), and at the LP's own when that finds nothing. With `pace`, it
        gives up once ROOT_ROUNDS rounds at the speed of those so far (or of the latest ones,
        when they were slower: `_latest_round`) clearly cannot fit, unless its LP has settled
        (`settled`): then it goes on to `until`."""
        master = self.master
        began = last = time.monotonic()
        recent: list[float] = []  # each round's time, newest last
        for k in range(most + 1):
            if self.pb.stop():
                break
            now = time.monotonic()
            if k:
                recent.append(now - last)
            # a root that has settled goes on to its deadline: its LP still improves, and a
            # dive then starts from it (Instance 15 doubled, two solves at a time: given up
            # at round 24-26, its LP 3.5-4.8 % above its estimate, one seed in three past 5 %)
            if (pace and _behind_pace(k, now - began, _latest_round(recent), until - now)
                    and not self.settled()):
                _log.debug("root given up after %d rounds", k)
                self.paced_out = True
                break
            last = now
            left = until - time.monotonic()
            if left <= 0 or not master.solve(left):
                break
            if k == most:  # the LP is solved over the last rows added; stop there
                break
            pi, mu = master.duals()
            _log.debug("LP %d: %.1f, bound %.1f, %d rows, pricing %.2f s in %d rounds", k,
                       master.objective(), self.lower, len(master.rows), self.pricing,
                       self.rounds)
            if smooth > 0 and self.center is not None:
                at = smooth * self.center + (1 - smooth) * mu
                added = self.price_round(pi, mu, self._boxed(at))
                if added != 0:
                    continue
            added = self.price_round(pi, mu, self._boxed(mu))
            if added == 0:
                return True
            if added < 0:
                return False
        return False

    def _boxed(self, mu: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return np.clip(mu, -self.pb.over[self.region.a:self.region.b],
                       self.pb.under[self.region.a:self.region.b])

    def dive(self, deadline: float, work_only: bool) -> npt.NDArray[np.int32] | None:
        """A dive from the current LP; the full roster it gives (the base outside the
        region), or None."""
        local = _dive(self.master, self.fixed,
                      lambda most: self.generate(deadline, most=most),
                      self.pb.stop, deadline, work_only=work_only)
        if local is None:
            return None
        pb = self.pb
        roster = (np.full((pb.e, pb.d), -1, dtype=np.int32) if self.base is None
                  else self.base.copy())
        roster[self.region.emps, self.region.a:self.region.b] = local
        return roster

    def restart(self) -> None:
        self.master.reset()
        self.fixed.clear()


def solve_by_columns(
    c_problem: Any,
    arrays: dict[str, npt.NDArray[Any]],
    shape: tuple[int, int],
    *,
    deadline: float,
    root_deadline: float,
    stop: Callable[[], bool],
    offer: Callable[[npt.NDArray[np.int32], int], None],
    priced: Callable[[int], None] = lambda n: None,
    seed: int = 0,
    start: npt.NDArray[np.int32] | None = None,
    root: bool = True,
    improve: bool = False,
    bound: Callable[[float], None] = lambda b: None,
    begun: Callable[[], None] = lambda: None,
    pace_root: bool = True,
    rescue: Callable[[], npt.NDArray[np.int32] | None] | None = None,
) -> ColumnOutcome | None:
    """Column generation and dives until `deadline` (time.monotonic()). The root LP over the
    whole problem gets until `root_deadline`; if it is not optimal by then (or cannot be in
    time), the phase ends with its first roster (and one dive when the root is near its bound or
    its estimate, or, on a problem beyond the GA's sizes, when it kept its pace to its
    deadline), and the time is the GA's. With `improve`, the phase instead re-optimises regions
    of the best roster until its deadline (`_improve`, fix-and-optimise; off by default: at
    today's pricing speed the GA alone does better on Instances 13, 20 and 22, decision 0014).
    `start` is a roster to begin from, `root=False` skips the root. Returns None when the
    problem is too large for the cost table; `offer` sees each better roster, `priced` the
    number of rows each pricing round computed, `bound` the lower bound once the root has one
    and `begun` when the phase goes on past its round 0 (on long horizons it ends there, its
    time the GA's) (progress). With `pace_root` False the root is tried whatever its round 0
    took and runs to `root_deadline` however slow its rounds; no pace gives it up, so a root
    of PACE_FROM rounds that ran out of time is dived from (the weekend plan's root, decision
    0060). `rescue` gives a hard-feasible roster from elsewhere (a short walk) when round 0
    leaves an employee without a row (decision 0065)."""
    e, d = shape
    s = int(arrays["length"].size)
    if e * d * (s + 1) > MAX_COST_ENTRIES:
        return None
    pb = _Problem(c_problem, arrays, e, d, stop, offer, priced)
    if start is not None:
        pb.consider(np.ascontiguousarray(start, dtype=np.int32))
    whole = _Region(np.arange(e), 0, d)
    root_sub = _Sub(pb, whole, None)
    # round 0: every employee's cheapest row on requests alone, a roster at once. A pricing
    # call cannot be interrupted, so a few employees go first to time it: where the whole
    # round would eat the phase (Instance 24: 43 s for 150 rows of 364 days x 32 types), the
    # time is the GA's.
    began = time.monotonic()
    costs0 = np.ascontiguousarray(np.clip(pb.pen * SCALE, -COST_LIMIT, COST_LIMIT))
    pb.hold_pins(costs0, np.arange(e))
    first = np.arange(min(e, PROBE_EMPLOYEES))
    probe = (pb.pricer if first.size == e
             else _employee_pricer(c_problem, arrays, first, d, s, pb.label_cap))
    got = probe.price(np.ascontiguousarray(costs0[first]), stop)
    if got is None:
        return ColumnOutcome(penalty=pb.best, lower_bound=None, proven_optimal=False)
    rows_a, hard_a = got
    rows0, hard0 = np.full((e, d), -1, np.int32), np.full(e, -1, np.int64)
    rows0[first], hard0[first] = rows_a, hard_a
    if first.size < e:
        per_row = (time.monotonic() - began) / first.size
        if per_row * (e - first.size) > ROUND0_SHARE * (deadline - time.monotonic()):
            return ColumnOutcome(penalty=None, lower_bound=None, proven_optimal=False)
        rest = np.arange(first.size, e)
        got = _employee_pricer(c_problem, arrays, rest, d, s, pb.label_cap).price(
            np.ascontiguousarray(costs0[rest]), stop)
        if got is None:
            return ColumnOutcome(penalty=pb.best, lower_bound=None, proven_optimal=False)
        rows_b, hard_b = got
        rows0[rest], hard0[rest] = rows_b, hard_b
    priced(e)
    # the root converges in some tens of pricing rounds (Instances 17, 18: 34-60); when that
    # many do not fit in its time, it is not tried and the time goes to fix-and-optimise --
    # unless it runs for its bound and its dive whatever its pace (`pace_root`, decision 0060)
    if pace_root and (time.monotonic() - began) * ROOT_ROUNDS > root_deadline - time.monotonic():
        root = False
    rooted = root and d * s <= MAX_COVER_ROWS  # the root LP runs
    small = d <= GA_DAYS and e * d <= GA_CELLS
    if rooted or improve:
        # past round 0 (each row on requests alone), which long horizons end the phase with
        begun()
    abiding = (hard0 == 0) | (hard0 == CAPPED)
    if not abiding.all() and rescue is not None and not stop():
        # The row search gave up on an employee within its label cap (a minutes window
        # narrower than one shift: a cut of Instance 24 to 84 days x 40 staff). Without a row
        # for everyone there is no roster until the root's dives, seconds away, and a cancel
        # before them finds none: a walk's rows stand in for the missing ones. Only in this
        # roster: the root goes on as before (with them among its columns, the cut's 60 s
        # solves were level too: 1 028 against 1 017, seeds 1-3; decision 0065).
        walked = rescue()
        if walked is not None:
            merged = rows0.copy()
            merged[~abiding] = walked[~abiding]
            pb.consider(merged)
    for emp in np.nonzero(abiding)[0]:
        root_sub.master.add(int(emp), rows0[emp], root_sub.row_cost(int(emp), rows0[emp]))
    if abiding.all():
        pb.consider(rows0)
    converged = False
    if rooted:
        converged = root_sub.generate(min(deadline, root_deadline), smooth=SMOOTH,
                                      pace=PACE and pace_root and not small)
    lower = root_sub.lower if root and root_sub.lower > -math.inf else None
    if lower is not None:
        bound(lower)
    _log.debug("root: converged %s, LP %.1f (solved %.1f), bound %s, estimate %.1f, %d rows",
               converged, root_sub.master.objective(), root_sub.master.solved, lower,
               root_sub.estimate, len(root_sub.master.rows))

    near = root_sub.settled()
    if not converged and ((small and not near) or not root) and (not improve or pb.roster is None):
        # a root too slow for its time and far from its bound (Instance 12 at 5 s, decision
        # 0008), or not tried: the time is the GA's, unless fix-and-optimise was asked for
        return ColumnOutcome(penalty=pb.best, lower_bound=lower, proven_optimal=False)

    def proven() -> bool:
        return (lower is not None and pb.best is not None
                and pb.best <= math.ceil(lower - 1e-6))

    dives, dived = 0, False
    # Dives from the root, each from the root again with the rows the earlier ones priced.
    # One dive is a lottery (Instance 10: 4631 or 5262 by the pacing); the dives alternate
    # between fixing only worked cells and fixing any cell. A root that did not converge in
    # time still gets one dive when every employee has a row in it and its LP is near its
    # bound or its Lagrangian estimate, or when it kept its pace to its deadline (its pace
    # judged over at least PACE_FROM rounds): Instance 15's capped pricing leaves no bound
    # near its LP, which sits within 5 % of the optimum, and its dive's roster beats the
    # GA's start. The estimate is what says a root is nearly done when its pace gave it up
    # in its last seconds: Instance 15 doubled (90 staff) was given up after 31-38 rounds,
    # its LP within 1 % of the estimate, and without the dive ended 9 % worse (decision 0045).
    # An unpaced root (`pace_root` False) is never given up, so it always counts as one that
    # kept its pace: the weekend plan dives from it, near its bound or not (decision 0060).
    # every employee on a priced row in the root's last optimal LP, or None
    root_lp = root_sub.master.solved if root_sub.master.solved < ARTIFICIAL else None
    paced = not root_sub.paced_out and root_sub.rounds >= PACE_FROM and root_lp is not None
    tried = rooted and (near or paced)
    while (converged or (tried and dives == 0)) and not stop() and not proven():
        if dives >= (ROOT_DIVES if pb.roster is not None else ROOT_DIVES + 1):
            break
        now = time.monotonic()
        left = deadline - now
        if dives and left < MIN_DIVE_SECONDS:
            break
        if dives:
            root_sub.restart()
            root_sub.generate(deadline)
        elif not converged:
            # the root's last solve may have stopped at its time limit, mid-pivot: the dive
            # reads the LP's values, so they must be an optimum over the rows it has
            root_sub.master.solve(left * DIVE_SHARE)
        share = DIVE_SHARE if converged else ONLY_DIVE_SHARE
        roster = root_sub.dive(now + left * share, work_only=dives % 2 == 0)
        dives += 1
        if roster is None:
            break
        before = pb.best
        penalty = pb.consider(roster)
        # the roster offered last is then a dive's, not round 0's: the GA may start from it
        dived |= penalty is not None and (before is None or penalty < before)
        _log.debug("dive %d: %s (best %s)", dives, penalty, pb.best)
    if improve and pb.roster is not None and not proven():
        _improve(pb, deadline, np.random.default_rng(seed), proven, root_sub,
                 sweep=dives == 0 and start is None)
    return ColumnOutcome(penalty=pb.best, lower_bound=lower, proven_optimal=proven(),
                         dived=dived, root_lp=root_lp)


def _improve(pb: _Problem, deadline: float, rng: np.random.Generator,
             proven: Callable[[], bool], root: _Sub, sweep: bool) -> None:
    """Fix-and-optimise: re-optimise a region of the best roster by columns and a dive, the
    rest of the roster fixed, and keep the result if it is no worse. The regions alternate
    between a window of days over all employees (sliding along the horizon) and a group of
    employees over the whole horizon (which can move work between weeks: a row's minutes and
    per-type maxima span the horizon, and a window cannot move them). Each kind's size adapts
    so that its LP converges in about half of the region's time. With `sweep`, a first pass
    of windows runs from the first day to the last (a rolling horizon): the start roster's
    cover is then poor everywhere, and random windows kept meeting each other."""
    e, d = pb.e, pb.d
    size = {"days": float(REGION_CELLS), "staff": float(REGION_CELLS)}
    # a region's time: enough pricing rounds at the speed of the last region's (a round on
    # Instance 20 prices 50 rows of 182 days: 0.15 s, on Instance 17 some ms)
    seconds = REGION_SECONDS
    began = time.monotonic()
    swept = 0
    rounds = 0
    while not pb.stop() and not proven():
        now = time.monotonic()
        if deadline - now < MIN_DIVE_SECONDS:
            break
        assert pb.roster is not None
        budget = min(deadline - now, seconds)
        kind = "staff" if rounds % 2 and not sweep else "days"
        cells = size[kind]
        if kind == "staff":
            days = d
            n = int(min(e - 1, cells / d))
            if n < 2:  # a group of one is only a row move: a window instead
                kind, cells = "days", size["days"]
        if kind == "days":
            days = int(min(d, max(MIN_WINDOW, round(cells / e / 7) * 7)))
            n = int(min(e, max(2, cells / days)))
        emps = np.arange(e) if n >= e else np.sort(rng.choice(e, size=n, replace=False))
        if sweep:
            a = int(min(swept, d - days))
            swept = a + days
            sweep = swept < d
        else:
            # windows start anywhere: a sweep in fixed steps kept meeting the same boundaries
            a = int(rng.integers(0, d - days + 1))
        sub = _Sub(pb, _Region(emps, a, a + days), pb.roster)
        if days == d:
            # the root's rows of these employees are rows of this region too
            mine = np.isin(np.asarray(root.master.owner, dtype=np.intp), emps)
            where = np.searchsorted(emps, np.asarray(root.master.owner)[mine])
            for i, j in zip(where, np.nonzero(mine)[0], strict=True):
                row = root.master.rows[int(j)]
                sub.master.add(int(i), row, sub.row_cost(int(i), row))
        until = now + budget
        converged = sub.generate(now + budget * REGION_LP_SHARE, smooth=SMOOTH)
        lp, base = sub.master.objective(), sub.base_cost()
        roster = None
        if not pb.stop() and not (converged and lp > base - 1 + 1e-6):
            roster = sub.dive(until, work_only=rounds % 4 < 2)
        rounds += 1
        penalty = pb.consider(roster) if roster is not None else None
        _log.debug("%s region %d days x %d staff from %d: LP %.1f base %.1f -> %s converged %s "
                   "(best %s) %.2f s", kind, days, emps.size, a, lp, base, penalty, converged,
                   pb.best, time.monotonic() - now)
        size[kind] = cells * 1.15 if converged else cells / 1.3
        # a window keeps all staff: fewer made it a staff group that cannot move its cover
        floor = MIN_WINDOW * e if kind == "days" else 2.0 * d
        size[kind] = min(max(size[kind], floor), float(e * d))
        if sub.rounds:
            seconds = min(max(REGION_SECONDS, REGION_ROUNDS * sub.pricing / sub.rounds),
                          REGION_MAX_SHARE * (deadline - began))


def _dive(
    master: _Master,
    fixed: dict[tuple[int, int], int],
    generate: Callable[[int], bool],
    stop: Callable[[], bool],
    deadline: float,
    *,
    work_only: bool,
) -> npt.NDArray[np.int32] | None:
    """Fix the most decided cells, price again, until the LP is integral; then each employee
    takes the row with the largest LP value (also when time ran out first). None when some
    employee has no row at all."""
    e, d, s = master.e, master.d, master.s
    steps = 0
    started = time.monotonic()
    while not stop() and time.monotonic() < deadline and master.rows:
        x = master.values()
        owner = np.asarray(master.owner)
        rows = np.asarray(master.rows)
        used = x > 1e-6
        share = np.zeros((e, d, s + 1))
        vals = np.where(rows[used] < 0, s, rows[used])
        np.add.at(share, (np.repeat(owner[used], d), np.tile(np.arange(d), int(used.sum())),
                          vals.ravel()), np.repeat(x[used], d))
        open_ = np.where((share > 1e-6) & (share < 1 - 1e-6), share, -1.0)
        if open_.max() < 0:
            break
        if work_only and open_[:, :, :s].max() > 0:
            open_[:, :, s] = -1.0
        picks = set(zip(*np.nonzero(open_ >= DIVE_FIX), strict=True))
        flat = open_.ravel()
        n_open = int((flat > 0).sum())
        # pace: as many steps as the time left affords at the steps' speed so far
        now = time.monotonic()
        if steps:
            per_step = (now - started) / steps
            affordable = max(1.0, 0.8 * (deadline - now) / per_step)
            k = max(1, min(n_open, math.ceil(n_open / affordable)))
        else:
            k = 1
        for i in np.argpartition(-flat, k - 1)[:k]:
            picks.add(np.unravel_index(int(i), open_.shape))
        # one value per cell, the one with the largest share: two values of one cell in a step
        # barred every row of that employee
        surest: dict[tuple[int, int], tuple[int, int, int]] = {}
        for emp, day, val in picks:
            key = (int(emp), int(day))
            if key not in surest or open_[emp, day, val] > open_[surest[key]]:
                surest[key] = (int(emp), int(day), int(val))
        picks = _consistent(surest.values(), open_, owner[used], rows[used], s)
        bar = np.zeros(owner.size, dtype=bool)
        for emp, day, val in picks:
            fixed[(int(emp), int(day))] = int(val)
            bar |= (owner == emp) & (rows[:, day] != (-1 if val == s else val))
        master.bar(np.nonzero(bar)[0])
        steps += 1
        done = generate(DIVE_ROUNDS)
        _log.debug("dive step %d: %d cells fixed, LP %.1f (%s)", steps, len(fixed),
                   master.objective(), done)
    if not master.rows:
        return None
    x = master.values()
    owner = np.asarray(master.owner)
    roster = np.full((e, d), -1, dtype=np.int32)
    for emp in range(e):
        mine = np.nonzero(owner == emp)[0]
        if mine.size == 0:
            return None
        roster[emp] = master.rows[int(mine[np.argmax(x[mine])])]
    return roster


def _consistent(picks: Iterable[tuple[int, int, int]], share: npt.NDArray[np.float64],
                owner: npt.NDArray[np.intp], rows: npt.NDArray[np.int32],
                s: int) -> set[tuple[int, int, int]]:
    """The picks an employee's rows in the LP's support can keep all at once, surest first.
    Picks taken from different rows could together leave an employee no rule-abiding row
    (a worked day from one, the next day off from another): the LP then met that employee by
    its artificial, and the dive's roster had holes (Instance 13: 17 708-43 413 from a root
    at 1 348)."""
    mine: dict[int, list[tuple[float, int, int]]] = {}
    for emp, day, val in picks:
        mine.setdefault(emp, []).append((float(share[emp, day, val]), day, val))
    kept: set[tuple[int, int, int]] = set()
    for emp, wanted in mine.items():
        alive = rows[owner == emp]
        for _, day, val in sorted(wanted, reverse=True):
            match = alive[:, day] == (-1 if val == s else val)
            if match.any():
                alive = alive[match]
                kept.add((emp, day, val))
    return kept
