"""The greedy fallback solver: pure Python + numpy, a feasible roster in well under a second.

It is what runs when the C solver is unavailable, so it favours robustness over quality:

1. Fill the cover cells (day, shift) that have the fewest eligible, available employees per
   required head first, one head at a time, only with assignments that keep every hard rule
   that can be checked locally (eligibility and MaxShifts, fixed days off, rotation with both
   neighbours, max minutes, max consecutive, min days off between runs, max weekends).
2. Extend working runs shorter than the minimum (or drop them), then give employees below
   their minimum minutes more shifts, preferring days that extend a run and cells under cover.
3. Repair rows that still break a rule with small changes (blocks of days, moving a shift)
   chosen on a graded violation measure; a row no small change fixes is re-planned whole by a
   beam search over its days that keeps every hard rule by construction.
4. Spend what is left of a small, fixed effort on the soft penalty: re-plan each row against
   the cover the others leave, keeping the new row when it is feasible and cheaper; then try
   every single-cell change that lowers the penalty and keeps its row feasible, and swaps of
   two employees' cells on one day that grant a wish.

Every phase is bounded by counts, not by the clock, so a seed always gives the same roster
(unless the time limit cuts phase 4 short, which the run reports as timed out). The
hard-violation count published through `control.progress` comes from the evaluator, not from
the measure used here: the two agree on zero but count differently.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shared.roster.compiled import I32, Problem
from shared.roster.evaluator import evaluate_rows
from shared.roster.solving import SolveControl, SolverRun

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


OFF = -1
_NO_REQUESTS: dict[int, int] = {}
# Repair rounds are bounded by count, not by time, so a seed always gives the same roster.
REPAIR_ROUNDS_PER_EMPLOYEE = 12
BROKEN = 1000
BEAM_WIDTH = 64
# The soft-penalty pass: a narrower beam, a fixed number of sweeps (deterministic).
IMPROVE_WIDTH = 16
IMPROVE_SWEEPS = 2


@dataclass
class _State:
    """The compiled problem as Python lists (fast scalar access) plus running tallies."""

    p: Problem
    roster: list[list[int]]
    count: list[list[int]]  # [E][S] shifts of each type
    minutes: list[int]
    weekend_days: list[list[int]]  # [E][W] worked days in each weekend
    z: list[list[int]]  # [D][S] cover
    evaluations: int = 0

    @classmethod
    def start(cls, p: Problem) -> _State:
        e, d, s = p.n_employees, p.n_days, p.n_shifts
        return cls(
            p=p,
            roster=[[OFF] * d for _ in range(e)],
            count=[[0] * s for _ in range(e)],
            minutes=[0] * e,
            weekend_days=[[0] * max(p.n_weekends, 1) for _ in range(e)],
            z=[[0] * s for _ in range(d)],
        )


class Greedy:
    def __init__(
        self, p: Problem, seed: int, control: SolveControl, deadline: float = float("inf")
    ) -> None:
        self.p = p
        self.control = control
        self.deadline = deadline
        self.timed_out = False
        self.rng = _rng(seed)
        self.E, self.D, self.S = p.n_employees, p.n_days, p.n_shifts
        lists = p.lists
        self.length = lists.length
        self.min_len = max(1, min(self.length))
        # The flags are 0/1 ints; every use below only tests their truth.
        self.forbidden = lists.forbidden
        self.max_shifts = lists.max_shifts
        self.min_minutes = lists.min_minutes
        self.max_minutes = lists.max_minutes
        self.max_consec = lists.max_consec
        self.min_consec = lists.min_consec
        self.min_off = lists.min_off
        self.max_weekends = lists.max_weekends
        self.day_off = lists.day_off
        self.weekend = lists.weekend
        self.req = lists.cover_req
        self.under = lists.cover_under
        self.over = lists.cover_over
        # Request weights per cell: on[e][d] = {shift: weight}, same for off.
        self.on: list[list[dict[int, int]]] = self._requests(
            lists.on_ptr, lists.on_shift, lists.on_weight
        )
        self.off: list[list[dict[int, int]]] = self._requests(
            lists.off_ptr, lists.off_shift, lists.off_weight
        )
        self.any_requests = bool(lists.on_shift or lists.off_shift)
        # Random tie-breaks, fixed per employee so the run is reproducible for a seed.
        self.jitter = self.rng.random(self.E).tolist()
        self.st = _State.start(p)

    def _requests(
        self, ptr: list[int], shift: list[int], weight: list[int]
    ) -> list[list[dict[int, int]]]:
        # Cells without a request share one empty dict, which nothing writes to.
        out: list[list[dict[int, int]]] = [[_NO_REQUESTS] * self.D for _ in range(self.E)]
        if ptr[-1] == 0:
            return out
        for cell in range(self.E * self.D):
            if ptr[cell] == ptr[cell + 1]:
                continue
            e, d = divmod(cell, self.D)
            wishes: dict[int, int] = {}
            for k in range(ptr[cell], ptr[cell + 1]):
                wishes[shift[k]] = wishes.get(shift[k], 0) + weight[k]
            out[e][d] = wishes
        return out

    def soft_penalty(self) -> int:
        """The roster's soft penalty from the tallies (what the evaluator's soft rules sum)."""
        st = self.st
        total = 0
        for d in range(self.D):
            z, req, under, over = st.z[d], self.req[d], self.under[d], self.over[d]
            if z == req:
                continue  # the usual case, compared in one go
            for s in range(self.S):
                if z[s] < req[s]:
                    total += (req[s] - z[s]) * under[s]
                elif z[s] > req[s]:
                    total += (z[s] - req[s]) * over[s]
        if not self.any_requests:
            return total
        for e in range(self.E):
            row, on_e, off_e = st.roster[e], self.on[e], self.off[e]
            for d in range(self.D):
                if on_e[d]:
                    total += sum(w for t, w in on_e[d].items() if t != row[d])
                if off_e[d]:
                    total += off_e[d].get(row[d], 0)
        return total

    # ------------------------------------------------------------------ moves and tallies

    def set(self, e: int, d: int, s: int) -> None:
        st = self.st
        old = st.roster[e][d]
        if old == s:
            return
        w = self.weekend[d]
        if old >= 0:
            st.count[e][old] -= 1
            st.minutes[e] -= self.length[old]
            st.z[d][old] -= 1
            if w >= 0:
                st.weekend_days[e][w] -= 1
        if s >= 0:
            st.count[e][s] += 1
            st.minutes[e] += self.length[s]
            st.z[d][s] += 1
            if w >= 0:
                st.weekend_days[e][w] += 1
        st.roster[e][d] = s

    def cell_penalty_delta(self, e: int, d: int, s: int) -> int:
        """Soft penalty change of putting s (or OFF) in cell (e, d)."""
        old = self.st.roster[e][d]
        if old == s:
            return 0
        z = self.st.z[d]
        delta = 0
        if old >= 0:
            delta += self.under[d][old] if z[old] <= self.req[d][old] else -self.over[d][old]
            delta -= self.off[e][d].get(old, 0)
        if s >= 0:
            delta += -self.under[d][s] if z[s] < self.req[d][s] else self.over[d][s]
            delta += self.off[e][d].get(s, 0)
        on = self.on[e][d]
        if on:
            delta += sum(w for t, w in on.items() if t != s) - sum(
                w for t, w in on.items() if t != old
            )
        return delta

    def can_add(self, e: int, d: int, s: int) -> bool:
        """Whether (e, d) may take shift s without breaking a locally checkable hard rule."""
        return self.run_if_added(e, d, s) is not None

    def run_if_added(self, e: int, d: int, s: int) -> tuple[int, int] | None:
        """The bounds of the run day d would join if (e, d) took shift s, or None when that
        breaks a locally checkable hard rule (`can_add`)."""
        st = self.st
        row = st.roster[e]
        if row[d] != OFF or self.day_off[e][d]:
            return None
        if st.count[e][s] >= self.max_shifts[e][s]:
            return None
        if st.minutes[e] + self.length[s] > self.max_minutes[e]:
            return None
        if d > 0 and row[d - 1] >= 0 and self.forbidden[row[d - 1]][s]:
            return None
        if d + 1 < self.D and row[d + 1] >= 0 and self.forbidden[s][row[d + 1]]:
            return None
        w = self.weekend[d]
        if w >= 0 and st.weekend_days[e][w] == 0:
            worked = sum(1 for x in st.weekend_days[e] if x > 0)
            if worked + 1 > self.max_weekends[e]:
                return None
        left = d
        while left > 0 and row[left - 1] >= 0:
            left -= 1
        right = d
        while right + 1 < self.D and row[right + 1] >= 0:
            right += 1
        if right - left + 1 > self.max_consec[e]:
            return None
        min_off = self.min_off[e]
        if min_off > 1:
            # The day-off gaps this assignment leaves on either side must stay long enough
            # (gaps touching a horizon edge are exempt).
            gap_end = left - 1
            g = gap_end
            while g >= 0 and row[g] == OFF:
                g -= 1
            if g >= 0 and 0 < gap_end - g < min_off:
                return None
            gap_start = right + 1
            g = gap_start
            while g < self.D and row[g] == OFF:
                g += 1
            if g < self.D and 0 < g - gap_start < min_off:
                return None
        return left, right

    def run_bonus(self, e: int, d: int) -> int:
        """How much working day d helps this employee's runs: joining a run is worth more while
        the run is still shorter than the minimum."""
        row = self.st.roster[e]
        joined = 0
        if d > 0 and row[d - 1] >= 0:
            joined += 1
        if d + 1 < self.D and row[d + 1] >= 0:
            joined += 1
        if not joined:
            return 0
        left = d
        while left > 0 and row[left - 1] >= 0:
            left -= 1
        right = d
        while right + 1 < self.D and row[right + 1] >= 0:
            right += 1
        short = (right - left) < self.min_consec[e]
        return 3 if short else 1

    def run_bounds(self, e: int, d: int) -> tuple[int, int]:
        row = self.st.roster[e]
        left = d
        while left > 0 and row[left - 1] >= 0:
            left -= 1
        right = d
        while right + 1 < self.D and row[right + 1] >= 0:
            right += 1
        return left, right

    # ------------------------------------------------------------------ phase 1: cover

    def fill_cover(self) -> None:
        wanted = []
        req, max_shifts, day_off = self.req, self.max_shifts, self.day_off
        n_eligible = [sum(1 for row in max_shifts if row[s] > 0) for s in range(self.S)]
        fixed_off = [e for e in range(self.E) if any(day_off[e])]
        for d, req_d in enumerate(req):
            off_today = [e for e in fixed_off if day_off[e][d]] if fixed_off else fixed_off
            for s, need in enumerate(req_d):
                if need <= 0:
                    continue
                avail = n_eligible[s]
                if off_today:
                    avail -= sum(1 for e in off_today if max_shifts[e][s] > 0)
                wanted.append((avail / need, d, s))
        # One draw for all cells yields the same numbers as one draw per cell, much cheaper.
        ties = self.rng.random(len(wanted)).tolist()
        cells = [(r, tie, d, s) for (r, d, s), tie in zip(wanted, ties, strict=True)]
        cells.sort()
        cancelled, pick, st = self.control.cancel.is_set, self.picker(), self.st
        roster, count, minutes, z, weekend_days = (
            st.roster,
            st.count,
            st.minutes,
            st.z,
            st.weekend_days,
        )
        weekend, length = self.weekend, self.length
        for _, _, d, s in cells:
            for _ in range(req[d][s] - z[d][s]):
                if cancelled():
                    return
                e = pick(d, s)
                if e < 0:
                    break
                # `set(e, d, s)` written out for a cell `pick` only chooses when it is off.
                count[e][s] += 1
                minutes[e] += length[s]
                z[d][s] += 1
                if weekend[d] >= 0:
                    weekend_days[e][weekend[d]] += 1
                roster[e][d] = s

    def picker(self) -> Callable[[int, int], int]:
        """`pick(d, s)`: the employee to put on shift s on day d, -1 if nobody can take it.

        A closure over the tallies (lists `set` updates in place), so its many lookups are done
        once per phase rather than once per head of cover."""
        st = self.st
        roster, count, minutes, weekend_days = st.roster, st.count, st.minutes, st.weekend_days
        min_minutes, max_minutes, max_shifts = self.min_minutes, self.max_minutes, self.max_shifts
        max_consec, min_consec, min_offs = self.max_consec, self.min_consec, self.min_off
        max_weekends, day_off, forbidden = self.max_weekends, self.day_off, self.forbidden
        on, off, jitter, min_len = self.on, self.off, self.jitter, self.min_len
        weekend, length, D, employees = self.weekend, self.length, self.D, range(self.E)

        def pick(d: int, s: int) -> int:
            # The key is (score, jitter), compared by hand, and min/max are written as
            # conditionals: the same values as the builtins, without their call overhead.
            best, best_score, best_jitter = -1, 0.0, 0.0
            w = weekend[d]
            length_s = length[s]
            follows = forbidden[s]
            span = length_s * (D - d)
            for e in employees:
                # `run_if_added(e, d, s)` written out (same checks, same order): the call and its
                # lookups cost more than the checks for the few employees of a small roster.
                row = roster[e]
                if row[d] != OFF or day_off[e][d]:
                    continue
                if count[e][s] >= max_shifts[e][s]:
                    continue
                if minutes[e] + length_s > max_minutes[e]:
                    continue
                if d > 0 and row[d - 1] >= 0 and forbidden[row[d - 1]][s]:
                    continue
                if d + 1 < D and row[d + 1] >= 0 and follows[row[d + 1]]:
                    continue
                if w >= 0:
                    days_in = weekend_days[e]
                    # tallies are never negative, so the weekends worked are the nonzero entries
                    if days_in[w] == 0 and len(days_in) - days_in.count(0) + 1 > max_weekends[e]:
                        continue
                left = d
                while left > 0 and row[left - 1] >= 0:
                    left -= 1
                right = d
                while right + 1 < D and row[right + 1] >= 0:
                    right += 1
                if right - left + 1 > max_consec[e]:
                    continue
                min_off = min_offs[e]
                if min_off > 1:
                    gap_end = left - 1
                    g = gap_end
                    while g >= 0 and row[g] == OFF:
                        g -= 1
                    if g >= 0 and 0 < gap_end - g < min_off:
                        continue
                    gap_start = right + 1
                    g = gap_start
                    while g < D and row[g] == OFF:
                        g += 1
                    if g < D and 0 < g - gap_start < min_off:
                        continue
                # `run_bonus` from the run bounds already found; working the other half of a weekend
                # already worked costs no weekend allowance.
                run_bonus = 0 if left == d == right else 3 if right - left < min_consec[e] else 1
                weekend_bonus = 0 if w < 0 else (2 if weekend_days[e][w] > 0 else -1)
                short = min_minutes[e] - minutes[e]
                deficit = (short if short > 0 else 0) / min_len
                on_cell, off_cell = on[e][d], off[e][d]
                wish = 0
                if on_cell:
                    wish = on_cell.get(s, 0) * 4
                    if s not in on_cell:
                        wish -= 2
                if off_cell:
                    wish -= off_cell.get(s, 0) * 4
                # Capacity left relative to the horizon: spread work over those who can take it.
                room = (max_minutes[e] - minutes[e]) / span
                score = (
                    wish
                    + 3 * run_bonus
                    + weekend_bonus
                    + (8 if deficit > 8 else deficit)
                    + (1.0 if room > 1.0 else room)
                )
                if (
                    best < 0
                    or score > best_score
                    or (score == best_score and jitter[e] > best_jitter)
                ):
                    best, best_score, best_jitter = e, score, jitter[e]
            return best

        return pick

    # ------------------------------------------------------------------ phase 2: runs

    def fix_short_runs(self) -> None:
        """Extend working runs shorter than the minimum; drop the ones that cannot grow."""
        for e in range(self.E):
            need = self.min_consec[e]
            if need <= 1:
                continue
            d = 1
            while d < self.D:
                row = self.st.roster[e]
                if row[d] < 0 or row[d - 1] >= 0:
                    d += 1
                    continue
                left, right = self.run_bounds(e, d)
                while right - left + 1 < need and right < self.D - 1:
                    grown = self.grow(e, left, right)
                    if grown is None:
                        break
                    left, right = grown
                if right - left + 1 < need and right < self.D - 1:
                    for x in range(left, right + 1):
                        self.set(e, x, OFF)
                d = right + 1

    def grow(self, e: int, left: int, right: int) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        best_pen = 0
        for x in (right + 1, left - 1):
            if not 0 <= x < self.D:
                continue
            for s in range(self.S):
                if self.can_add(e, x, s):
                    pen = self.cell_penalty_delta(e, x, s)
                    if best is None or pen < best_pen:
                        best, best_pen = (x, s), pen
        if best is None:
            return None
        self.set(e, best[0], best[1])
        return self.run_bounds(e, left if best[0] > left else best[0])

    # ------------------------------------------------------------------ phase 3: minutes

    def fill_minutes(self) -> None:
        order = sorted(range(self.E), key=lambda e: self.st.minutes[e] - self.min_minutes[e])
        for e in order:
            while self.st.minutes[e] < self.min_minutes[e]:
                if self.control.cancel.is_set():
                    return
                best, best_key = None, (0,)
                for d in range(self.D):
                    if self.st.roster[e][d] != OFF:
                        continue
                    for s in range(self.S):
                        if not self.can_add(e, d, s):
                            continue
                        key = (-self.cell_penalty_delta(e, d, s) + 20 * self.run_bonus(e, d),)
                        if best is None or key > best_key:
                            best, best_key = (d, s), key
                if best is None:
                    break
                self.set(e, best[0], best[1])

    # ------------------------------------------------------------------ phase 4: repair

    def row_violations(self, e: int, row: list[int]) -> int:
        """A graded violation measure of one row: 0 iff the row breaks no hard rule, otherwise
        the number of broken rule instances (scaled by BROKEN, so a repair never trades one broken
        rule for two) plus how far each is from holding, so repairs can make progress."""
        self.st.evaluations += 1
        D = self.D
        h = 0
        count = [0] * self.S
        minutes = 0
        max_c, min_c, min_off = self.max_consec[e], self.min_consec[e], self.min_off[e]
        forbidden, length, day_off = self.forbidden, self.length, self.day_off[e]
        prev = OFF
        run = 0
        run_start = 0
        off_run = 0
        off_start = 0
        for d in range(D):
            s = row[d]
            if s >= 0:
                if day_off[d]:
                    h += BROKEN + 1
                count[s] += 1
                minutes += length[s]
                if prev >= 0 and forbidden[prev][s]:
                    h += BROKEN + 1
                if run == 0:
                    if off_start > 0 and off_run < min_off:
                        h += BROKEN + min_off - off_run
                    run_start = d
                run += 1
                off_run = 0
            else:
                if run:
                    if run > max_c:
                        h += BROKEN + run - max_c
                    if run < min_c and run_start > 0:
                        h += BROKEN + min_c - run
                    run = 0
                if off_run == 0:
                    off_start = d
                off_run += 1
            prev = s
        if run > max_c:
            h += BROKEN + run - max_c
        for s in range(self.S):
            if count[s] > self.max_shifts[e][s]:
                h += BROKEN + count[s] - self.max_shifts[e][s]
        if minutes > self.max_minutes[e]:
            h += BROKEN + -(-(minutes - self.max_minutes[e]) // self.min_len)
        if minutes < self.min_minutes[e]:
            h += BROKEN + -(-(self.min_minutes[e] - minutes) // self.min_len)
        if self.p.n_weekends:
            worked = {self.weekend[d] for d in range(D) if self.weekend[d] >= 0 and row[d] >= 0}
            if len(worked) > self.max_weekends[e]:
                h += BROKEN + len(worked) - self.max_weekends[e]
        return h

    def repair(self) -> None:
        for e in range(self.E):
            current = -1  # the row's measure, -1 when a move has made it stale
            for _ in range(REPAIR_ROUNDS_PER_EMPLOYEE):
                if self.control.cancel.is_set():
                    return
                row = self.st.roster[e]
                current = self.row_violations(e, row)
                if current == 0:
                    break
                move = self.best_move(e, row, current)
                if move is None:
                    break
                for d, s in move:
                    self.set(e, d, s)
                current = -1
            if current < 0:
                current = self.row_violations(e, self.st.roster[e])
            for width in (BEAM_WIDTH, 4 * BEAM_WIDTH):
                if current == 0 or self.control.cancel.is_set():
                    break
                current = self.replan(e, current, width)

    def moves(self, e: int, row: list[int]) -> Iterator[list[list[tuple[int, int]]]]:
        """Candidate row changes in tiers of growing cost: blocks of 1, 2 and 3 days set to one
        value, then moving one shift to another day (which fixes minutes and runs that no
        block can, when the row is hemmed in by its own pattern)."""
        options = [OFF, *[s for s in range(self.S) if self.max_shifts[e][s] > 0]]
        free = [not x for x in self.day_off[e]]
        for width in (1, 2, 3):
            tier = []
            for d in range(self.D - width + 1):
                span = range(d, d + width)
                for s in options:
                    if all(row[x] == s for x in span):
                        continue
                    if s >= 0 and not all(free[x] for x in span):
                        continue
                    tier.append([(x, s) for x in span])
            yield tier
        worked = [d for d in range(self.D) if row[d] >= 0]
        idle = [d for d in range(self.D) if row[d] < 0 and free[d]]
        yield [[(a, OFF), (b, row[a])] for a in worked for b in idle]

    def best_move(self, e: int, row: list[int], current: int) -> list[tuple[int, int]] | None:
        """The candidate change that lowers the row's violation measure most, from the
        cheapest tier that has one; the soft penalty breaks ties."""
        trial = list(row)
        for tier in self.moves(e, row):
            best: list[tuple[int, int]] | None = None
            best_key = (current, 0)
            for change in tier:
                for x, s in change:
                    trial[x] = s
                h = self.row_violations(e, trial)
                for x, _ in change:
                    trial[x] = row[x]
                if h >= current or h > best_key[0]:
                    continue
                pen = self.change_penalty(e, change)
                if best is None or (h, pen) < best_key:
                    best, best_key = change, (h, pen)
            if best is not None:
                return best
        return None

    def change_penalty(self, e: int, change: list[tuple[int, int]]) -> int:
        # Cells of one row lie on distinct days, so their cover effects are independent.
        return sum(self.cell_penalty_delta(e, x, s) for x, s in change)

    # ------------------------------------------------------------------ row re-planning

    def replan(self, e: int, current: int, width: int) -> int:
        """Plan the employee's row afresh with a beam search over days that keeps every hard
        rule, against the cover the others leave; keep it only if it is better."""
        old = list(self.st.roster[e])
        for d in range(self.D):
            self.set(e, d, OFF)
        row = self.beam_row(e, width)
        better = row is not None and self.row_violations(e, row) < current
        chosen = row if row is not None and better else old
        for d in range(self.D):
            self.set(e, d, chosen[d])
        return self.row_violations(e, chosen)

    def beam_row(self, e: int, width: int) -> list[int] | None:
        D, S = self.D, self.S
        length, forbidden = self.length, self.forbidden
        max_s, day_off = self.max_shifts[e], self.day_off[e]
        max_m, min_m = self.max_minutes[e], self.min_minutes[e]
        max_c, min_c, min_off, max_w = (
            self.max_consec[e],
            self.min_consec[e],
            self.min_off[e],
            self.max_weekends[e],
        )
        eligible = [s for s in range(S) if max_s[s] > 0]
        # Until the minimum minutes are reached, working dominates any cover consideration:
        # a row that misses them is infeasible whatever it covers.
        need_weight = 10 * max(max(max(r) for r in self.under), 1)
        # state: (score, last, run, run_inner, off, off_inner, minutes, weekends, last_w,
        #         counts, path)
        State = tuple[float, int, int, bool, int, bool, int, int, int, tuple[int, ...], object]
        beam: list[State] = [(0.0, OFF, 0, False, 0, False, 0, 0, -1, (0,) * S, None)]
        for d in range(D):
            z, req = self.st.z[d], self.req[d]
            on, off_req = self.on[e][d], self.off[e][d]
            w = self.weekend[d]
            best: dict[tuple[object, ...], State] = {}
            for score, last, run, run_in, off, off_in, minutes, wk, last_w, counts, path in beam:
                # a day off
                if not (run and run_in and run < min_c):
                    sc = score - sum(on.values())
                    n_off, n_in = (off + 1, off_in) if run == 0 else (1, True)
                    st: State = (
                        sc,
                        OFF,
                        0,
                        False,
                        n_off,
                        n_in,
                        minutes,
                        wk,
                        last_w,
                        counts,
                        (OFF, path),
                    )
                    key = st[1:10]
                    if key not in best or best[key][0] < sc:
                        best[key] = st
                if day_off[d]:
                    continue
                if run == 0 and off and off_in and off < min_off:
                    continue
                if run + 1 > max_c:
                    continue
                n_wk, n_lw = wk, last_w
                if w >= 0 and w != last_w:
                    n_wk, n_lw = wk + 1, w
                    if n_wk > max_w:
                        continue
                for s in eligible:
                    if counts[s] >= max_s[s] or minutes + length[s] > max_m:
                        continue
                    if last >= 0 and forbidden[last][s]:
                        continue
                    gain: float = self.under[d][s] if z[s] < req[s] else -self.over[d][s]
                    gain -= off_req.get(s, 0) + sum(v for t, v in on.items() if t != s)
                    if minutes < min_m:
                        gain += need_weight * min(length[s], min_m - minutes) / self.min_len
                    c2 = (*counts[:s], counts[s] + 1, *counts[s + 1 :])
                    st = (
                        score + gain,
                        s,
                        run + 1,
                        run_in if run else d > 0,
                        0,
                        False,
                        minutes + length[s],
                        n_wk,
                        n_lw,
                        c2,
                        (s, path),
                    )
                    key = st[1:10]
                    if key not in best or best[key][0] < st[0]:
                        best[key] = st
            beam = self.diverse(sorted(best.values(), key=lambda x: -x[0]), width, min_off)
            if not beam:
                return None
        done = [b for b in beam if b[6] >= min_m]
        if not done:
            return None
        row: list[int] = []
        path = max(done, key=lambda x: x[0])[10]
        while path is not None:
            assert isinstance(path, tuple)
            row.append(path[0])
            path = path[1]
        row.reverse()
        return row

    # ------------------------------------------------------------------ phase 5: improve

    def improve(self) -> None:
        """Coordinate descent on the soft penalty: re-plan one row at a time against the cover
        the others leave, keeping a new row only if it is feasible and cheaper."""
        order = self.rng.permutation(self.E).tolist()
        for _ in range(IMPROVE_SWEEPS):
            changed = False
            for e in order:
                if self.control.cancel.is_set():
                    return
                if time.perf_counter() > self.deadline:
                    self.timed_out = True
                    return
                old = list(self.st.roster[e])
                for d in range(self.D):
                    self.set(e, d, OFF)
                row = self.beam_row(e, IMPROVE_WIDTH)
                for d in range(self.D):
                    self.set(e, d, old[d])
                if row is None or self.row_violations(e, row) != 0:
                    continue
                change = [(d, row[d]) for d in range(self.D) if row[d] != old[d]]
                if change and self.change_penalty(e, change) < 0:
                    for d, s in change:
                        self.set(e, d, s)
                    changed = True
            if not changed:
                return

    def polish(self) -> None:
        """Single-cell changes that lower the soft penalty and keep the row feasible; the
        cheap penalty delta filters candidates before the row is checked."""
        for e in range(self.E):
            row = self.st.roster[e]
            if self.control.cancel.is_set():
                return
            if self.row_violations(e, row) != 0:
                continue
            options = [OFF, *[s for s in range(self.S) if self.max_shifts[e][s] > 0]]
            for d in range(self.D):
                if self.day_off[e][d]:
                    continue
                old = row[d]
                best, best_delta = old, 0
                for v in options:
                    if v == old:
                        continue
                    delta = self.cell_penalty_delta(e, d, v)
                    if delta >= best_delta:
                        continue
                    row[d] = v
                    ok = self.row_violations(e, row) == 0
                    row[d] = old
                    if ok:
                        best, best_delta = v, delta
                if best != old:
                    self.set(e, d, best)

    def request_cost(self, e: int, d: int, v: int) -> int:
        on = self.on[e][d]
        return sum(w for t, w in on.items() if t != v) + self.off[e][d].get(v, 0)

    def swap_requests(self) -> None:
        """Exchange two employees' cells on one day to grant a wish: the cover is unchanged,
        so only the request penalties and the two rows' feasibility need checking."""
        roster = self.st.roster
        for e in range(self.E):
            if self.control.cancel.is_set():
                return
            for d in range(self.D):
                u = roster[e][d]
                if self.request_cost(e, d, u) == 0:
                    continue
                for f in range(self.E):
                    v = roster[f][d]
                    if f == e or v == u:
                        continue
                    delta = (
                        self.request_cost(e, d, v)
                        - self.request_cost(e, d, u)
                        + self.request_cost(f, d, u)
                        - self.request_cost(f, d, v)
                    )
                    if delta >= 0 or (v >= 0 and self.day_off[e][d]):
                        continue
                    if u >= 0 and self.day_off[f][d]:
                        continue
                    roster[e][d], roster[f][d] = v, u
                    ok = self.row_violations(e, roster[e]) == 0 == self.row_violations(f, roster[f])
                    roster[e][d], roster[f][d] = u, v
                    if ok:
                        # Through `set` so the tallies follow; the cover nets out.
                        self.set(e, d, v)
                        self.set(f, d, u)
                        u = v
                        if self.request_cost(e, d, u) == 0:
                            break

    @staticmethod
    def diverse(ranked: list[Any], width: int, min_off: int) -> list[Any]:
        """The best states, but at most a few per shape (run, rest, weekends used): a beam
        ranked on score alone fills up with rows that work every weekend early and dead-end."""
        per_shape = max(2, width // 16)
        taken: dict[tuple[int, int, int], int] = {}
        out = []
        for st in ranked:
            shape = (st[2], min(st[4], min_off), st[7])
            n = taken.get(shape, 0)
            if n < per_shape:
                taken[shape] = n + 1
                out.append(st)
                if len(out) == width:
                    break
        return out

    def roster(self) -> I32:
        return np.array(self.st.roster, dtype=np.int32).reshape(self.E, self.D)


def solve_greedy(
    problem: Problem, *, time_limit: float, seed: int, control: SolveControl
) -> SolverRun:
    started = time.perf_counter()
    g = Greedy(problem, seed, control, deadline=started + time_limit)
    g.fill_cover()
    g.fix_short_runs()
    g.fill_minutes()
    g.fix_short_runs()
    g.repair()
    for phase in (g.improve, g.polish, g.swap_requests):
        # Each phase only takes changes that lower the penalty, so at zero it cannot help.
        if g.soft_penalty() == 0:
            break
        phase()
    roster = g.roster()
    # The rows are valid by construction (every value set through `set`), so they are scored
    # as they are rather than converted back from the array.
    score = evaluate_rows(problem, g.st.roster)
    elapsed_ms = (time.perf_counter() - started) * 1000
    progress = control.progress
    progress.best_hard = score.hard_violations
    progress.best_penalty = score.penalty
    progress.evaluations = g.st.evaluations + 1
    cancelled = control.cancel.is_set()
    return SolverRun(
        roster=roster,
        iterations=1,
        evaluations=g.st.evaluations + 1,
        time_to_first_feasible_ms=elapsed_ms if score.hard_violations == 0 else None,
        time_to_best_ms=elapsed_ms,
        cancelled=cancelled,
        timed_out=g.timed_out,
        evaluation=score,
    )
