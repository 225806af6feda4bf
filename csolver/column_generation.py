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

import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt

from csolver._generetic import ffi, lib

__all__ = ["ColumnOutcome", "solve_by_columns"]

# Prices go to C as integers in 1/SCALE points: the DP is exact on those, and its row is at most
# D / (2 SCALE) points off the true optimum (rounding), which the bound below allows for.
SCALE = 1000
# A cell whose LP share is at least this is fixed together with the most decided fractional one;
# 0.6 made fewer, coarser dive steps and lost 2-8 % on Instances 6, 8 and 9 (decision 0008).
DIVE_FIX = 0.8
# Each dive may take this share of the phase's time left (it paces its fixing to fit).
DIVE_SHARE = 0.5
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
FORBIDDEN = np.iinfo(np.int64).max
COST_LIMIT = 1 << 40


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
    every employee's priced rows (else None); `proven_optimal` when the best roster meets it."""

    penalty: int | None
    lower_bound: float | None
    proven_optimal: bool


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
        empty_i, empty_v = np.array([], np.int32), np.array([], np.float64)
        for _ in range(e):
            h.addRow(1.0, 1.0, 0, empty_i, empty_v)
        req_f = np.asarray(req, np.float64).ravel()
        for k in range(d * s):
            h.addRow(req_f[k], req_f[k], 0, empty_i, empty_v)
        # column j < 2DS: slack j // 2 under (even) or over (odd); then one artificial per
        # employee; then the rows
        under_f = np.asarray(under, np.float64).ravel()
        over_f = np.asarray(over, np.float64).ravel()
        for k in range(d * s):
            h.addCol(under_f[k], 0.0, inf, 1, np.array([e + k], np.int32), np.array([1.0]))
            h.addCol(over_f[k], 0.0, inf, 1, np.array([e + k], np.int32), np.array([-1.0]))
        for i in range(e):
            h.addCol(ARTIFICIAL, 0.0, inf, 1, np.array([i], np.int32), np.array([1.0]))
        self.first = 2 * d * s + e
        self.h = h
        self.owner: list[int] = []
        self.rows: list[npt.NDArray[np.int32]] = []
        self.seen: set[tuple[int, bytes]] = set()
        self._barred = np.zeros(0, dtype=bool)
        self.just_barred = False
        self.strategy = 4

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
        return bool(self.h.getModelStatus() == highspy.HighsModelStatus.kOptimal)

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


def _pin_holder(pin: npt.NDArray[np.int32] | None,
                s: int) -> Callable[[npt.NDArray[np.int64]], None]:
    """What makes a cost table [E, D, S+1] keep the pins: every other value of a pinned cell
    forbidden, so each priced row (and each column of the master) holds them."""
    if pin is None:
        return lambda cost: None
    emp, day = np.nonzero(pin != -2)
    keep = np.where(pin[emp, day] < 0, s, pin[emp, day])

    def hold(cost: npt.NDArray[np.int64]) -> None:
        kept = cost[emp, day, keep]
        cost[emp, day, :] = FORBIDDEN
        cost[emp, day, keep] = kept

    return hold


class _Pricer:
    def __init__(self, c_problem: Any, e: int, d: int, s: int) -> None:
        self.c = c_problem
        self.e, self.d, self.s = e, d, s
        self.rows = np.full((e, d), -1, dtype=np.int32)
        self.hard = np.full(e, -1, dtype=np.int64)

    def price(self, cost: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int32],
                                                           npt.NDArray[np.int64]]:
        code = lib.gr_price_rows(
            self.c,
            ffi.cast("int64_t *", ffi.from_buffer(cost)),
            ffi.cast("int32_t *", ffi.from_buffer(self.rows)),
            ffi.cast("int64_t *", ffi.from_buffer(self.hard)),
        )
        if code != 0:
            raise RuntimeError(f"gr_price_rows failed with code {code}")
        return self.rows, self.hard


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
    bound: Callable[[float], None] = lambda b: None,
) -> ColumnOutcome | None:
    """Column generation and dives until `deadline` (time.monotonic()); the
    phase gives up after the first roster when the root LP is not optimal by `root_deadline`.
    Returns None when the problem is too large for it; `offer` sees each better roster and
    `priced` the number of rows each pricing round computed and `bound` the lower bound once
    the root LP proves one (progress)."""
    e, d = shape
    s = int(arrays["length"].size)
    v = s + 1
    if d * s > MAX_COVER_ROWS or e * d * v > MAX_COST_ENTRIES:
        return None
    pen = request_penalties(arrays, e, d, s)
    hold_pins = _pin_holder(arrays.get("pin"), s)
    master = _Master(e, d, s, arrays["cover_req"], arrays["cover_under"], arrays["cover_over"])
    pricer = _Pricer(c_problem, e, d, s)
    fixed: dict[tuple[int, int], int] = {}
    best: list[int | None] = [None]

    def score(roster: npt.NDArray[np.int32]) -> int | None:
        hard = ffi.new("int64_t *")
        penalty = ffi.new("int64_t *")
        code = lib.gr_score(c_problem, ffi.cast("int32_t *", ffi.from_buffer(roster)), hard,
                            penalty)
        return int(penalty[0]) if code == 0 and hard[0] == 0 else None

    def consider(roster: npt.NDArray[np.int32]) -> None:
        penalty = score(roster)
        if penalty is not None and (best[0] is None or penalty < best[0]):
            best[0] = penalty
            offer(roster.copy(), penalty)

    def row_cost(emp: int, row: npt.NDArray[np.int32]) -> int:
        return int(pen[emp, np.arange(d), np.where(row < 0, s, row)].sum())

    def price_round(pi: npt.NDArray[np.float64], mu: npt.NDArray[np.float64]) -> tuple[int, float]:
        """Adds every improving row; returns (rows added, sum of the negative reduced costs,
        -inf when some employee could not be priced)."""
        table = pen.astype(np.float64)
        table[:, :, :s] -= mu[None, :, :]
        cost = np.clip(np.rint(table * SCALE), -COST_LIMIT, COST_LIMIT).astype(np.int64)
        hold_pins(cost)
        for (emp, day), val in fixed.items():
            keep = cost[emp, day, val]
            cost[emp, day, :] = FORBIDDEN
            cost[emp, day, val] = keep
        rows, hard = pricer.price(np.ascontiguousarray(cost))
        priced(e)
        added, slack = 0, 0.0
        for emp in range(e):
            # -1: no row; -2: a rule-abiding row that is not proven cheapest (the DP capped
            # its search, decision 0013): a valid column, but no bound
            if hard[emp] == -1:
                slack = -math.inf
                continue
            if hard[emp] == -2:
                slack = -math.inf
            row = rows[emp]
            cells = row >= 0
            requests = row_cost(emp, row)
            rc = requests - pi[emp] - float(mu[np.nonzero(cells)[0], row[cells]].sum())
            slack += min(0.0, rc)
            if hard[emp] in (0, -2) and rc < NEGATIVE and master.add(emp, row, requests):
                added += 1
        return added, slack

    def generate(until: float = deadline, most: int = 1 << 30) -> float:
        """Columns until none improves (or time is up, or after `most` LP solves); returns the
        Lagrangian slack of the last pricing, -inf unless converged."""
        for n in range(most + 1):
            if stop():
                break
            left = until - time.monotonic()
            if left <= 0 or not master.solve(left):
                break
            if n == most:  # the LP is solved over the last rows added; stop there
                break
            added, slack = price_round(*master.duals())
            if added == 0:
                return slack
        return -math.inf

    # round 0: every employee's cheapest row on requests alone, a roster at once
    cost0 = np.clip(pen * SCALE, -COST_LIMIT, COST_LIMIT)
    hold_pins(cost0)
    rows0, hard0 = pricer.price(np.ascontiguousarray(cost0))
    priced(e)
    for emp in range(e):
        if hard0[emp] in (0, -2):
            master.add(emp, rows0[emp], row_cost(emp, rows0[emp]))
    if all((hard0 == 0) | (hard0 == -2)):
        consider(rows0)
    slack = generate(min(deadline, root_deadline))
    if slack == -math.inf:
        # no root LP in time (Instance 12 needs ~4 s), or some employee's rows cannot be priced
        # (state space too large for the DP): a dive from such an LP is a guess, and the time
        # is the GA's
        return ColumnOutcome(penalty=best[0], lower_bound=None, proven_optimal=False)
    # Lagrangian bound: LP value plus each employee's most negative reduced cost (the DP
    # enumerates a superset of the rule-abiding rows), less the rounding of the prices
    lower = master.objective() + slack - e * d * 0.5 / SCALE
    bound(lower)

    def proven() -> bool:
        return best[0] is not None and best[0] <= math.ceil(lower - 1e-6)

    dives = 0
    # Dives until the deadline, each from the root again, with the rows the earlier ones
    # priced. One dive is a lottery (Instance 10: 4631 or 5262 by the
    # pacing); the dives alternate between fixing only worked cells and fixing any cell.
    while not stop() and not proven():
        now = time.monotonic()
        left = deadline - now
        if dives and left < MIN_DIVE_SECONDS:
            break
        if dives:
            master.reset()
            fixed.clear()
            generate()
        roster = _dive(master, fixed, generate, stop, now + left * DIVE_SHARE,
                       work_only=dives % 2 == 0)
        dives += 1
        if roster is None:
            break
        consider(roster)
    return ColumnOutcome(penalty=best[0], lower_bound=lower, proven_optimal=proven())


def _dive(
    master: _Master,
    fixed: dict[tuple[int, int], int],
    generate: Callable[..., float],
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
        picks = set(surest.values())
        bar = np.zeros(owner.size, dtype=bool)
        for emp, day, val in picks:
            fixed[(int(emp), int(day))] = int(val)
            bar |= (owner == emp) & (rows[:, day] != (-1 if val == s else val))
        master.bar(np.nonzero(bar)[0])
        steps += 1
        generate(most=DIVE_ROUNDS)
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

