"""The greedy fallback solver: pure Python + numpy, a feasible roster at every size, in its limit.

It runs when the C solver fails, so it must return a rule-abiding roster whatever the instance,
and on time. Every hard rule of bench/curtois/FORMAT.md lives inside one employee's row (cover,
the only rule between rows, is soft), so the roster is feasible as soon as each row is:

1. **Plan each row** against the cover the other rows leave (`RowPlanner`, in
   shared/roster/rowplan.py, which finds a rule-abiding row whenever one exists).
2. **Improve** while that helps and time is left: one-cell changes and same-day swaps between
   rows that keep both rows feasible (`polish`), re-plans of each row against all the others,
   then ruin and recreate of a few rows at a time (`ruin`).

A request with thousands of employees gets its rows all at once, day by day with numpy
(`Greedy.bulk`), when planning them one by one would not fit the limit; the rows that come out
infeasible are then planned one by one. A small request whose empty rows already keep the rules
is filled by one-cell moves before any row is planned.

A row only ever changes into one that keeps every hard rule (a row that breaks one, into one
that keeps them all), and only when that lowers the penalty (ruin and recreate puts the rows
back otherwise), so the roster held at any moment is the best one so far: a cancel or the
deadline returns it as it is. Between two looks at the clock and the cancel flag there is at
most one row plan (which looks too, every `HALT_DAYS` days) or one day of moves, and the time
the final scoring takes is kept back from the limit. The beam widths and the choice of bulk
rows follow from the instance's size and the limit, not from measured times, so a seed always
gives the same roster unless the clock cuts a phase short.

The hard rules are written once, one function per rule (shared/roster/rowrules.py); the
one-cell check here reuses its run rules on the runs around the cell, and
`tests/test_greedy_rules.py` checks each copy against the evaluator on random problems.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from shared.roster.compiled import (
    I32,
    Problem,
    set_pins,
    with_changes_as_requests,
    with_pins_as_rules,
)
from shared.roster.evaluator import Evaluation, evaluate, evaluate_rows
from shared.roster.rowplan import Machine, RowPlanner, machine
from shared.roster.rowrules import OFF, RUN_RULES, RowRules, row_breaks, row_feasible
from shared.roster.solving import SolveControl, SolverRun

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
# The improvement stops once the model says it took this share of the limit, and a one-cell
# check costs this much by the model.
WORK_SHARE = 0.3
CHECK_SECONDS = 2e-6
# Ruin and recreate: up to this many rows at a time, until this many tries per employee in a
# row bring nothing.
RUIN_ROWS = 4
RUIN_PATIENCE = 10
# Rows are made in bulk when planning them one by one would take more than this share of the
# limit; after PROBE_ROWS plans, also when the plans so far say the rest would not fit.
PROBE_ROWS = 4
BULK_SHARE = 0.8
# While the rows are first planned, the roster so far is published every this many rows.
PUBLISH_ROWS = 10
# Time kept back for scoring the roster at the end, per cell (measured: 0.5 us per cell for a
# feasible roster of 5000 x 366 on an idle machine, 1.3 us on a busy one) or as a multiple of
# the setup's time (which walks the same cells), and at most this share of the limit (a
# request that big and a limit that short get no search at all).
SCORE_SECONDS_PER_CELL = 1.5e-6
# ... and with a `score` given (the C evaluator): 0.02-0.05 us a cell measured at the limits,
# plus making the rows an array (~0.03 us), kept back at a few times that.
FAST_SCORE_SECONDS_PER_CELL = 0.15e-6
SCORE_SHARE = 0.9
SCORE_VS_SETUP = 6.0
# How far ahead of an even spread of its minimum minutes a bulk-made row keeps.
PACE_AHEAD = 1.05
Request = tuple[int, int, int]  # (day, shift, weight)
# A pinned shift reaches the greedy as a shift-on request of this weight (a pinned day off as a
# fixed day off): far above any cover weight, so a row is only planned off a pin when no
# rule-abiding row keeps it, and then `solve_greedy` sets the pin back anyway.
PIN_WEIGHT = 1_000_000


class Greedy:
    """One solve: the roster held (always the best so far), the cover it gives, and per row
    the tallies the one-cell moves check against (shifts per type, minutes, weekends); the
    soft penalty and the hard violations per row are kept up to date with every change."""

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
        # The same roster as an array, kept up to date as rows and cells change: converting the
        # lists at the end took ~30 ms at 5,000 x 366, all of it after a cancel.
        self.grid = np.full((E, D), OFF, dtype=np.int32)
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
        self.started = time.perf_counter()
        self.best = (sum(self.hard) + 1, 0)  # worse than any roster, so the first counts
        self.best_ms = 0.0
        self.first_feasible_ms: float | None = None
        self.rounds = 0  # improving sweeps and ruin-and-recreate tries
        # The seconds the plans and checks so far take by the cost model (not the clock): the
        # improvement stops at a share of the limit by this count, so that a seed gives the
        # same roster on a machine anything up to 1/WORK_SHARE times slower than the model.
        self.work = 0.0
        self.seeded = False

    def _requests(self, ptr: list[int], shift: list[int], weight: list[int]) -> list[list[Request]]:
        out: list[list[Request]] = [[] for _ in range(self.E)]
        # Requests are few and cells many (1.8 million at the size limits): find each
        # request's cell by bisection rather than walking the cells.
        for k, (s, w) in enumerate(zip(shift, weight, strict=True)):
            e, d = divmod(bisect.bisect_right(ptr, k) - 1, self.D)
            out[e].append((d, s, w))
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
        self.grid[e] = row
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
        self.grid[e, d] = v

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
        self.work += CHECK_SECONDS
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
        """Show the roster held as the best so far (it is: nothing ever makes it worse)."""
        hard = sum(self.hard)
        now_ms = (time.perf_counter() - self.started) * 1000
        if (hard, self.penalty) < self.best:
            self.best, self.best_ms = (hard, self.penalty), now_ms
        if hard == 0 and self.first_feasible_ms is None:
            self.first_feasible_ms = now_ms
        progress = self.control.progress
        progress.best_hard = hard
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
        self.work += self.sweep_seconds / self.E * (1.0 + BEAM_STEP_FACTOR * self.width)
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
            m = self._machines[key] = machine(
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

    def seed(self, rows: list[list[int]]) -> None:
        """Start from these rows (a re-roster's previous roster, pins set) rather than from
        empty ones: `construct` then plans only the rows that break a rule, so every other
        row stays as it was until a change pays for itself."""
        for e, row in enumerate(rows):
            self.put_row(e, list(row), sum(row_breaks(self.rules[e], row).values()))
        self.seeded = True

    def clear_fixed_days(self, e: int) -> None:
        """A seeded row no rule-abiding row can replace (pins that leave none, e.g. a run the
        frozen past cuts short) keeps its cells but works no fixed day off: an absence is
        honoured even when some other rule cannot be."""
        r = self.rules[e]
        row = [OFF if off else v for off, v in zip(r.day_off, self.roster[e], strict=True)]
        if row != self.roster[e]:
            self.put_row(e, row, sum(row_breaks(r, row).values()))

    def construct(self) -> None:
        """Every row planned once, in a random order, each against the rows before it. When
        planning row by row would take more than a share of the time (`plan_work`, or the
        plans so far), the remaining rows are made all at once (`bulk`) and only the ones
        that came out infeasible are planned one by one. A seeded solve (`seed`) plans only
        the rows that break a rule."""
        if self.seeded:
            self.width = self.width_for(CONSTRUCT_SHARE)
            for e in self.rng.permutation(self.E).tolist():
                if self.hard[e] and not self.stop() and not self.replan(e):
                    self.clear_fixed_days(e)
            self.publish()
            return
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
                if i % PUBLISH_ROWS == PUBLISH_ROWS - 1:
                    self.publish()  # a partly planned roster is still the best so far
        for e in order:
            if self.hard[e] and not self.stop():
                self.replan(e)
        self.publish()

    def improve(self) -> None:
        """Re-plan each row against all the others and make the one-cell moves, sweep after
        sweep while a sweep helps; then ruin and recreate a few rows at a time while that
        helps (`ruin`). The roster held never gets worse."""
        self.work = 0.0
        while not self.done():
            better = self.polish()
            if self.done():
                break
            self.width = self.width_for(SWEEP_SHARE)
            self.rounds += 1
            for e in self.rng.permutation(self.E).tolist():
                if self.done():
                    break
                better += self.replan(e)
            self.publish()
            if not better:
                break
        stale = 0
        while stale < RUIN_PATIENCE * self.E and not self.done():
            stale = 0 if self.ruin() else stale + 1
            self.rounds += 1
            if stale % 16 == 0:
                self.publish()
        self.publish()

    def ruin_rows(self, k: int) -> list[int]:
        if self.rng.random() < 0.5:
            z = np.array(self.z, dtype=np.int64).reshape(self.D, self.S)
            short = np.argwhere((z < self.req) & (self.under > 0))
            if len(short):
                s = int(short[int(self.rng.integers(len(short))), 1])
                able = [e for e in range(self.E) if self.rules[e].max_shifts[s] > 0]
                if len(able) >= k:
                    picked = self.rng.choice(len(able), size=k, replace=False).tolist()
                    return [able[i] for i in picked]
        return self.rng.choice(self.E, size=k, replace=False).tolist()  # type: ignore[no-any-return]

    def perfect(self) -> bool:
        return self.penalty == 0 and not any(self.hard)

    def done(self) -> bool:
        """Nothing left to improve, or the improvement's budget spent, or told to stop."""
        if self.perfect() or self.work > WORK_SHARE * self.time_limit:
            return True
        return self.stop()

    def ruin(self) -> bool:
        """Clear a few rows and plan them again one after the other; keep the result when it
        is no worse (so the search can drift across ties), else put the rows back. True if
        the penalty dropped. Half the time the rows are ones that could fill an under-covered
        cell (eligible for its shift type), the rest of the time any."""
        k = min(self.E, int(self.rng.integers(2, RUIN_ROWS + 1)))
        rows = self.ruin_rows(k)
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
                if self.stop():  # one head looks at every row: thousands, in a large request
                    return made
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
        # Weekends touched by days d .. d+k-1: the weekends starting in that span (starts[] is
        # their running count), plus the one day d is inside of if it began before d.
        first = [w >= 0 and (d == 0 or weekend[d - 1] != w) for d, w in enumerate(weekend)]
        starts = np.concatenate(([0], np.cumsum(first)))
        inside = np.array([w >= 0 and not f for w, f in zip(weekend, first, strict=True)])
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
            # Every day: a day's numpy work over 5,000 rows took 10-40 ms on a loaded machine,
            # so looking every 8 days held a cancel up to ~0.3 s.
            if self.stop():
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
            ahead = starts[np.minimum(d + minc, D)] - starts[d] + inside[d]
            blocked |= start & (used + ahead > max_w)
            allowed = ~blocked[:, None] & (counts < caps)
            allowed &= mins[:, None] + length[None, :] <= max_m[:, None]
            first = start & ~reach_end & (minc > 1)
            if first.any():
                span = minc[first][:, None]
                allowed[first] &= (mins[first][:, None] + span * length[None, :]) <= max_m[first][
                    :, None
                ]
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
            hard = 0
            if stuck[i] or mins[i] < min_m[i]:
                hard = sum(row_breaks(self.rules[e], rows[i]).values())
            if hard > self.hard[e]:
                # Worse than the row it would replace (an empty row with no minimum): keep
                # that one, so that no row, and no roster, ever gets worse.
                worked = out[i] >= 0
                np.subtract.at(z, (np.nonzero(worked)[0], out[i][worked]), 1)
                continue
            self.roster[e] = rows[i]
            self.grid[e] = out[i]
            self.counts[e], self.minutes[e] = count_rows[i], minutes[i]
            if wk_rows[i]:
                self.wk[e], self.wk_used[e] = wk_rows[i], wk_used[i]
            self.hard[e] = hard
        self.z = z.tolist()
        self.penalty = self.full_penalty()

    def roster_array(self) -> I32:
        return self.grid.copy()


def solve_greedy(
    problem: Problem,
    *,
    time_limit: float,
    seed: int,
    control: SolveControl,
    score: Callable[[I32], Evaluation] | None = None,
) -> SolverRun:
    """`score`, when given, is what scores the roster at the end (the C evaluator, which
    `shared.solving.dispatch` passes for large rosters): it must return what `evaluate` does,
    and it takes so little time that only `FAST_SCORE_SECONDS_PER_CELL` is kept back for it."""
    started = time.perf_counter()
    # Re-rostering: pins and change costs folded into what the planner knows (fixed days off,
    # requests), so it keeps the pins and prefers each cell's previous value.
    search = with_pins_as_rules(with_changes_as_requests(problem), PIN_WEIGHT)
    g = Greedy(search, seed, control, time_limit)
    g.started = started
    if problem.previous is not None:
        g.seed(set_pins(problem, np.maximum(problem.previous, OFF)).tolist())
    # Scoring the roster at the end walks every cell, as setting up did, only more slowly: the
    # time setting up took says how busy the machine is now.
    cells = problem.n_employees * problem.n_days
    setup = time.perf_counter() - started
    # The setup's time says how busy the machine is, up to a point: a first solve in a fresh
    # process pays for the garbage collector's passes over the request too, and reserving
    # six times that left no time to make any row at the size limits: at most 1.5 times the
    # cells' estimate.
    if score is not None:
        reserve = FAST_SCORE_SECONDS_PER_CELL * cells
    else:
        by_cells = SCORE_SECONDS_PER_CELL * cells
        reserve = max(by_cells, min(SCORE_VS_SETUP * setup, 1.5 * by_cells))
    g.deadline = started + time_limit - min(SCORE_SHARE * time_limit, reserve)
    control.progress.total_generations = 0  # time-limited: progress runs with the clock
    control.progress.phase = "greedy"  # shared.solving.progress.GREEDY
    g.construct()
    g.improve()
    g.publish()  # the roster held is the best: this also dates it
    # Without `score` the roster is scored as lists: the rows are valid by construction (every
    # value is a shift index or OFF), so there is no array to convert back and check.
    if score is not None:
        roster = g.roster_array()
        if search is not problem:
            roster = set_pins(problem, roster)
        verdict = score(roster)
    elif search is problem:
        roster = None
        verdict = evaluate_rows(problem, g.roster)
    else:
        roster = set_pins(problem, g.roster_array())
        verdict = evaluate(problem, roster)
    progress = control.progress
    progress.best_hard = verdict.hard_violations
    progress.best_penalty = verdict.penalty
    progress.evaluations = g.evaluations + 1
    return SolverRun(
        roster=g.roster_array() if roster is None else roster,
        iterations=g.rounds,
        evaluations=g.evaluations + 1,
        time_to_first_feasible_ms=g.first_feasible_ms if verdict.hard_violations == 0 else None,
        time_to_best_ms=g.best_ms,
        cancelled=control.cancel.is_set(),
        timed_out=g.timed_out,
        evaluation=verdict,
    )
