"""generetic: the C solver behind the `Solver` protocol (shared/roster/solving.py).

A solve has two phases (docs/decisions/0008): column generation (column_generation.py: an LP
over whole rows solved by HiGHS, rows priced by the C row DP, then dives to integer rosters),
then the C memetic GA for the time left, starting from the dives' best roster when there is
one; the better roster wins, and a roster the first phase proves optimal ends the solve early.
On medium sizes the GA ends early and a MIP re-plans the best roster's weekend days
(exact_region.py, decision 0048), then the GA runs again for whatever the MIP left. On long
horizons whose types have one length, and on large rosters whose types have several (decision
0062), the solve runs in legs (decisions 0057, 0061): briefly on the real problem, on the
types merged by length (patterns.py) for a plan of days off, on the real problem with every
day the plan has off pinned, and then the GA alone from that roster, with the plan's free
weekends pinned when the types have one length. On long horizons whose types have several
lengths the plan is drawn on all types counted as one, and the walk on its days off starts
from rows built on them (decision 0063).

Both phases run in the calling thread with the GIL released for their heavy parts (cffi calls
into C, HiGHS's solves), so parallel solves in parallel threads really run in parallel.
Cancellation: the column phase checks `control.cancel` between LP solves (each a few ms, at
most ~0.1 s) and pricing rounds. In the GA a helper thread waits on it with a 10 ms timeout
and, once it is set, writes the C progress struct's `cancel` field, which the C loop reads
every 512 proposals (a row DP, the most expensive step, is bounded to ~16M transitions).
The weekend MIP runs in a helper thread that the caller waits on with the same 10 ms poll:
HiGHS hears a cancel only at its callbacks, seconds apart, so a cancel returns at once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from csolver._generetic import ffi, lib
from csolver.column_generation import GA_CELLS, GA_DAYS, PIN_FREE, solve_by_columns
from csolver.exact_region import Region, weekend_cells
from csolver.patterns import (
    Merged,
    count_types,
    free_weekend_pins,
    merge_types,
    off_day_pins,
    rows_on_plan,
)
from shared.roster.compiled import I32, Problem, changes_as_requests, set_pins
from shared.roster.solving import (
    STEP_PLAN,
    STEP_PLANNED,
    STEP_WEEKEND_MIP,
    SolveControl,
    SolverRun,
)

__all__ = ["COLUMN_SHARE", "ERRORS", "GeneticError", "score", "solve_generetic", "validate"]

ERRORS: dict[int, str] = {
    -1: "a required array is missing (NULL)",
    -2: "a size is not positive (employees, days, shifts) or negative (weekends, requests)",
    -3: "length: a shift length outside [1, 1440]",
    -4: "forbidden: a value other than 0/1",
    -5: "max_shifts: a negative entry",
    -6: "min_minutes/max_minutes: a negative entry",
    -7: "max_consec/min_consec/min_off: a negative entry",
    -8: "max_weekends: a negative entry",
    -9: "day_off: a value other than 0/1",
    -10: "weekend: an index outside [-1, n_weekends)",
    -11: "on_ptr: not monotone, not starting at 0 or not ending at len(on_shift)",
    -12: "on_shift: a shift index outside [0, S)",
    -13: "off_ptr: not monotone, not starting at 0 or not ending at len(off_shift)",
    -14: "off_shift: a shift index outside [0, S)",
    -15: "a request or cover weight outside [0, 2^20]",
    -16: "cover_req: a requirement outside [0, 2^20]",
    -17: "roster: a cell outside [-1, S)",
    -18: "solver configuration out of range",
    -19: "out of memory",
    -20: "problem too large for the solver's layout",
    -21: "a pricing cost outside [-2^40, 2^40]",
    -22: "pin: a value outside [-2, S)",
}

CANCEL_POLL_SECONDS = 0.010
# Share of the time limit for column generation before the GA (docs/decisions/0008).
COLUMN_SHARE = 0.75
# ... of which the root LP may take this much, or the phase ends with its first roster.
ROOT_SHARE = 0.25
# The GA's first individual anneals from a dive's roster (after the fixed repair) starting
# this cool (a greedy start's: 30; the children's: 3), so it improves the dive's roster rather
# than first walk away from it (Instances 15 and 18, 60 s, seeds 1-3: 4 102 -> 4 032 and
# 4 611 -> 4 546; decision 0026) -- when that roster is within DIVE_NEAR_LP times the root's
# LP (15: 1.06-1.08, 18: 1.02-1.06); a poor dive (Instance 13's converged root: 3 times its
# LP) is a start to walk away from.
DIVE_START_HEAT = 3.0
DIVE_NEAR_LP = 1.25
# Beyond the GA's sizes the GA stops this share of the limit early, and a MIP re-plans every
# employee's weekend days, the other days fixed, from the best roster (decision 0048). On
# Instance 13 each split weekend is a short slot (decision 0044): in 4 of 12 seeds at 60 s the
# MIP met one more (105-109 points), in the rest it found 3-12 points, in 4.5-8 s. On 15, 18
# and 20 it proves the weekends optimal in under a second, and the time it leaves goes to a
# second GA run from the best roster, which ended 15 with 36 short slots in 21 of 24 seeds
# (main: 14 of 24). Only where the MIP has at most WEEKEND_COLUMNS workable cells x types:
# 13 has 11 584, 20 10 075; 22's 31 077 took 22-25 s for 51 points, less than the walk gains
# in that time. A planned solve's last stage takes the share of the whole limit: in 13's 60 s
# solve the share of the stage, 2.9 s, never solved the MIP, and the whole's, 9 s, left a
# twelfth short slot in 1 of 16 seeds against 5 of 16 (decision 0066).
WEEKEND_SHARE = 0.15
WEEKEND_COLUMNS = 1 << 14
# ... and only when that share is at least this long: in 0.15 s HiGHS found nothing on the 1 s
# and 3 s rosters of 13, 15, 18 and 20; in 0.3 s 15's 1 s roster gained 95 (decision 0059).
# So a planned solve's first 1 s leg (0057) and solves under 2 s give the GA their whole limit.
WEEKEND_MIN_SECONDS = 0.3
# The weekend MIP's helper thread.
WEEKEND_THREAD = "generetic-weekends"
# The GA runs again after the MIP when at least this much of the limit is left: the solve
# uses its whole limit, as without the MIP (a solve that stops early wastes what it was given).
SECOND_LEG_SECONDS = 0.05
# From PLAN_MIN_DAYS days and a limit of PLAN_MIN_SECONDS, when every type has one length, a
# plan is drawn on the types merged and the real solve keeps its days off, then its free
# weekends (decisions 0057, 0061): the first PLAN_FIRST_SECONDS solve the real problem (a
# feasible roster at once), the plan takes PLAN_SHARE of the rest. At 60 s, seeds 1-3, the
# free weekends kept: Instance 22 10.5 % -> 7.1 %, 20 5.4 % -> 4.4 %, 18 0.56 % -> 0.16 %. At
# 56 days (17) the plan's pins kept the optimum out of reach; at 10 s (22) it was level.
PLAN_MIN_SECONDS = 20.0
PLAN_MIN_DAYS = 84
# Types of several lengths are planned on one merged type per length (the minutes stay exact)
# up to PLAN_SEVERAL_MAX_DAYS days, from PLAN_MIN_MASTER_ROWS rows of the real master (days x
# types + employees), where its root does not fit the minute on one core (Instance 13's 624
# take 38-45 s; 15's 297 converge in 10 s and its own dive beats the plan's). 13 at 60 s,
# seeds 1-6: 1 489 -> 1 424 (gap 10.5 % -> 5.7 %). On Instance 24 cut to its first 56, 91 and
# 182 days the plan lost 1 %, 12 % and 16 %; on the whole year 11 %; 15 planned lost 1.6 %
# (decision 0062).
PLAN_MIN_MASTER_ROWS = 500
PLAN_SEVERAL_MAX_DAYS = 28
# Types of several lengths from this many days (a year): a plan on them all counted as one
# (`count_types`), the walk on its days off from rows built on them (decision 0063). At 60 s,
# side by side: Instance 24 49 144 -> 48 045 (seeds 1-6, better in all six); its first 100
# staff 23 971 -> 22 802 (seeds 1-2), its first 50 14 609 -> 14 078. Its first 182 days lost
# with 100 staff (4 018 -> 4 132, seeds 1-2) and won with 150 (5 281 -> 5 144); 84 days x 40
# lost (900 -> 920). From a limit of PLAN_COUNTED_MIN_SECONDS: on 24 at 20 and 30 s the plan
# lost 10-23 % (seeds 1-2), at 45 s it won 2 %, at 120 s 3 % (seed 1).
PLAN_COUNTED_DAYS = 364
PLAN_COUNTED_MIN_SECONDS = 45.0
PLAN_FIRST_SECONDS = 1.0
PLAN_SHARE = 1 / 3
# The plan's column phase runs its root unpaced for this share of the plan's time (paced, it
# gave the merged root up at its round 0 on 364 days): the merged problem prices a cover row
# per day, so its Lagrangian bound comes within 0.3 % of its LP in about 20 rounds and bounds
# the real problem, and the plan goes on from the root's dive. At 60 s, side by side: 22
# 32 714 -> 31 792 (seeds 1-8, better in 8) with a bound of 28 685-28 769 where it had none,
# 20 5 006 -> 4 941 (seeds 1-4, better in 4), 18 the same; 0.3 and 0.7 level with a half on
# 22 (decision 0060).
PLAN_ROOT_SHARE = 0.5
# The real solve after the plan keeps every day the plan has off for this share of its time
# (it picks types for the plan's days worked and may rest some), then goes on from that roster
# with only the plan's free weekends kept: the plan's days off come from the merged root's
# dive, and the walk cannot find such a pattern in a minute. At 60 s, side by side: 22 31 384
# -> 30 608 (seeds 1-6, better in 6), 20 4 895 -> 4 871 (seeds 1-2), 18 4 470 -> 4 471. In a
# first version (its second stage a bare GA run), 0.3 and 0.7 were level with a half on 22,
# and the whole time lost on 18 (4 484, 4 577 against 4 470) (decision 0061). 0.3 rather
# than a half leaves the last stage more time, where 13's lottery of a twelfth short slot is
# drawn: 13 at 60 s, seeds 1-16 side by side, 1 432 -> 1 412 (a twelfth slot in 1 run against
# 4); 22, 20, 18 and 24 level (decision 0067).
PLAN_OFF_SHARE = 0.3
# ... and every stage after the first starts from the stage before's roster this cool: it is
# already the solve's best, and from DIVE_START_HEAT the walk first left it (Instance 24's
# last stage stood at its start for 7 s or more of its 18 s). Instance 13 at 60 s, seeds
# 1-18 (7-18 side by side: 1 464 -> 1 437): 1 456 -> 1 431, the rosters of 11 short slots
# 1 424 -> 1 404, those of 12 (decision 0058's lottery) about as often, 6 and 5 of 18; 24,
# 22, 20 and 18 level (decision 0064).
LATER_STAGE_HEAT = 1.5
# The walk that gives a first roster when the column phase's round 0 leaves an employee without
# a row (decision 0065): a cut of Instance 24 to 84 days x 40 staff with a narrow minutes window
# had its first hard-feasible roster after 50 ms of walking, against 7.5 s from the root.
RESCUE_SECONDS = 0.25
# What `Progress.phase` says during each phase (shared/solving/progress.py's names; this
# package may not import that layer).
PHASE_COLUMNS = "columns"
PHASE_GENETIC = "genetic"


class GeneticError(ValueError):
    """The C library rejected the problem (or ran out of memory); `code` is its GR_ERR_*."""

    def __init__(self, code: int) -> None:
        self.code = code
        super().__init__(f"generetic error {code}: {ERRORS.get(code, 'unknown error')}")


# name -> (dtype, shape as a function of (E, D, S), or None for 1-D of any length)
_I32_FIELDS = (
    "length", "max_shifts", "min_minutes", "max_minutes", "max_consec", "min_consec",
    "min_off", "max_weekends", "weekend", "on_ptr", "on_shift", "on_weight", "off_ptr",
    "off_shift", "off_weight", "cover_req", "cover_under", "cover_over",
)
_U8_FIELDS = ("forbidden", "day_off")


def _shapes(e: int, d: int, s: int) -> dict[str, tuple[int, ...] | None]:
    return {
        "length": (s,),
        "forbidden": (s, s),
        "max_shifts": (e, s),
        "min_minutes": (e,),
        "max_minutes": (e,),
        "max_consec": (e,),
        "min_consec": (e,),
        "min_off": (e,),
        "max_weekends": (e,),
        "day_off": (e, d),
        "weekend": (d,),
        "on_ptr": (e * d + 1,),
        "on_shift": None,
        "on_weight": None,
        "off_ptr": (e * d + 1,),
        "off_shift": None,
        "off_weight": None,
        "cover_req": (d, s),
        "cover_under": (d, s),
        "cover_over": (d, s),
    }


class _Packed:
    """The problem's arrays made C-contiguous with the right dtype, plus the C struct pointing
    into them. Holding this object keeps every buffer alive for the duration of a C call.

    The C solver knows pins (`pin`, NULL when there are none) but not the previous roster:
    its change costs reach it as requests (`with_changes_as_requests`), which price every
    roster exactly as the `changes` rule does."""

    def __init__(self, problem: Problem, *, fold_changes: bool = True) -> None:
        e, s = len(problem.employee_ids), len(problem.shift_ids)
        day_off = np.asarray(problem.day_off)
        if day_off.ndim != 2:
            raise ValueError(f"day_off: expected 2 dimensions, got shape {day_off.shape}")
        d = int(day_off.shape[1])
        if e < 1 or d < 1 or s < 1:
            raise ValueError(f"sizes must be positive: employees={e} days={d} shifts={s}")
        if not isinstance(problem.n_weekends, int | np.integer) or problem.n_weekends < 0:
            raise ValueError(f"n_weekends: must be a non-negative int, got {problem.n_weekends!r}")
        shapes = _shapes(e, d, s)
        self.arrays: dict[str, npt.NDArray[Any]] = {}
        for name, shape in shapes.items():
            raw = np.asarray(getattr(problem, name))
            want = np.uint8 if name in _U8_FIELDS else np.int32
            if raw.dtype.kind not in "iub":
                raise ValueError(f"{name}: expected an integer array, got dtype {raw.dtype}")
            if shape is not None and raw.shape != shape:
                raise ValueError(f"{name}: expected shape {shape}, got {raw.shape}")
            if shape is None and raw.ndim != 1:
                raise ValueError(f"{name}: expected a 1-D array, got shape {raw.shape}")
            info = np.iinfo(want)
            if raw.size and (raw.min() < info.min or raw.max() > info.max):
                raise ValueError(f"{name}: values outside the {np.dtype(want).name} range")
            self.arrays[name] = np.ascontiguousarray(raw, dtype=want)
        for a, b in (("on_shift", "on_weight"), ("off_shift", "off_weight")):
            if self.arrays[a].shape != self.arrays[b].shape:
                raise ValueError(f"{b}: length {self.arrays[b].size} differs from {a}")
        if fold_changes and problem.previous is not None and problem.change_weight > 0:
            self._fold_changes(problem, e, d, s)
        if problem.pin is not None:
            pin = np.asarray(problem.pin)
            if pin.shape != (e, d):
                raise ValueError(f"pin: expected shape {(e, d)}, got {pin.shape}")
            if pin.dtype.kind not in "iu":
                raise ValueError(f"pin: expected an integer array, got dtype {pin.dtype}")
            self.arrays["pin"] = np.ascontiguousarray(pin, dtype=np.int32)
        self.shape = (e, d)
        self.c = ffi.new("gr_problem *")
        c = self.c
        c.n_employees, c.n_days, c.n_shifts = e, d, s
        c.n_weekends = int(problem.n_weekends)
        c.n_on = int(self.arrays["on_shift"].size)
        c.n_off = int(self.arrays["off_shift"].size)
        self._keep = []
        for name in _I32_FIELDS + _U8_FIELDS:
            ctype = "uint8_t *" if name in _U8_FIELDS else "int32_t *"
            buf = ffi.cast(ctype, ffi.from_buffer(self.arrays[name]))
            self._keep.append(buf)
            setattr(c, name, buf)
        if "pin" in self.arrays:
            buf = ffi.cast("int32_t *", ffi.from_buffer(self.arrays["pin"]))
            self._keep.append(buf)
            c.pin = buf
        else:
            c.pin = ffi.NULL


    def _fold_changes(self, problem: Problem, e: int, d: int, s: int) -> None:
        previous = np.asarray(problem.previous)
        if previous.shape != (e, d):
            raise ValueError(f"previous: expected shape {(e, d)}, got {previous.shape}")
        if previous.dtype.kind not in "iu":
            raise ValueError(f"previous: expected an integer array, got dtype {previous.dtype}")
        a = self.arrays
        if not (_csr_ok(a["on_ptr"], a["on_shift"]) and _csr_ok(a["off_ptr"], a["off_shift"])):
            return  # the C validator names the broken list
        on, off = changes_as_requests(
            (a["on_ptr"], a["on_shift"], a["on_weight"]),
            (a["off_ptr"], a["off_shift"], a["off_weight"]),
            previous,
            problem.change_weight,
            s,
        )
        a["on_ptr"], a["on_shift"], a["on_weight"] = on
        a["off_ptr"], a["off_shift"], a["off_weight"] = off


def _csr_ok(ptr: npt.NDArray[Any], items: npt.NDArray[Any]) -> bool:
    return bool(ptr[0] == 0 and ptr[-1] == items.size and (np.diff(ptr) >= 0).all())


def _check(code: int) -> None:
    if code != 0:
        raise GeneticError(code)


def validate(problem: Problem) -> None:
    """Raise ValueError (GeneticError for what only C checks) if the problem is malformed."""
    packed = _Packed(problem)  # held: its arrays must outlive the call
    _check(lib.gr_validate(packed.c))


def score(problem: Problem, roster: I32) -> tuple[int, int]:
    """(hard violation count, soft penalty) of a roster, computed by the C library."""
    packed = _Packed(problem)
    r = np.asarray(roster)
    if r.shape != packed.shape:
        raise ValueError(f"roster: expected shape {packed.shape}, got {r.shape}")
    if r.dtype.kind not in "iu":
        raise ValueError(f"roster: expected an integer array, got dtype {r.dtype}")
    return _score_packed(packed, r)


def solve_generetic(
    problem: Problem,
    *,
    time_limit: float,
    seed: int,
    control: SolveControl,
    crash_for_test: bool = False,
    population: int = 0,
    max_evaluations: int = 0,
    column_share: float = COLUMN_SHARE,
) -> SolverRun:
    """Solve in two phases: column generation (csolver/column_generation.py) for at most
    `column_share` of `time_limit`, then the memetic GA for the rest; the better roster wins.
    The GA is skipped when the first phase proved its roster optimal.

    With `max_evaluations` > 0 only the GA runs, for that many moves: such a run is
    reproducible for a given seed (the column phase is paced by the clock)."""
    if not time_limit > 0 or time_limit != time_limit:
        raise ValueError(f"time_limit: must be positive, got {time_limit}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed: must be in [0, 2^64), got {seed}")
    if not 0 <= population <= 1000:
        raise ValueError(f"population: must be in [0, 1000], got {population}")
    if max_evaluations < 0:
        raise ValueError(f"max_evaluations: must not be negative, got {max_evaluations}")
    if not 0.0 <= column_share <= 1.0:
        raise ValueError(f"column_share: must be in [0, 1], got {column_share}")
    packed = _Packed(problem)
    _check(lib.gr_validate(packed.c))
    merged: Merged | None = None
    if (max_evaluations == 0 and column_share > 0 and not crash_for_test
            and time_limit >= PLAN_MIN_SECONDS and problem.n_weekends > 0):
        merged = _plan_problem(problem, packed, time_limit)
    if merged is not None:
        return _solve_planned(problem, packed, merged, time_limit, seed, control, population,
                              column_share)
    return _solve_once(problem, packed, time_limit, seed, control, crash_for_test, population,
                       max_evaluations, column_share)


def _plan_problem(problem: Problem, packed: _Packed, time_limit: float) -> Merged | None:
    """The merged problem a plan is drawn on, when one pays (decisions 0057, 0062, 0063):
    types of one length from PLAN_MIN_DAYS days; types of several lengths up to
    PLAN_SEVERAL_MAX_DAYS days where the real master has PLAN_MIN_MASTER_ROWS rows, and from
    PLAN_COUNTED_DAYS days, counted as one, with `time_limit` at least
    PLAN_COUNTED_MIN_SECONDS. The sizes are checked before anything is merged: merging 24
    takes a tenth of a second."""
    if np.unique(np.asarray(problem.length)).size == 1:
        if problem.n_days < PLAN_MIN_DAYS:
            return None
    elif problem.n_days > PLAN_SEVERAL_MAX_DAYS:
        if problem.n_days < PLAN_COUNTED_DAYS or time_limit < PLAN_COUNTED_MIN_SECONDS:
            return None
        return count_types(problem, packed.arrays)
    elif problem.n_days * problem.n_shifts + problem.n_employees < PLAN_MIN_MASTER_ROWS:
        return None
    return merge_types(problem, packed.arrays)


def _solve_once(problem: Problem, packed: _Packed, time_limit: float, seed: int,
                control: SolveControl, crash_for_test: bool, population: int,
                max_evaluations: int, column_share: float, *, root_share: float | None = None,
                pace_root: bool = True, start: npt.NDArray[np.int32] | None = None,
                start_heat: float = DIVE_START_HEAT, weekend_limit: float | None = None,
                ) -> SolverRun:
    """solve_generetic's two phases (and the weekend MIP), its arguments checked. The root
    LP gets `root_share` of the limit (None: ROOT_SHARE); with `pace_root` False it runs for
    all of that, however slow its rounds (solve_by_columns). With `start`, a hard-feasible
    roster, the column phase is skipped and the GA goes on from it at `start_heat`: cool as
    after a good dive, cooler still where the roster is already the solve's best (a planned
    solve's later stages, decision 0064). The weekend MIP's time is its share of
    `weekend_limit` (None: of `time_limit`; a planned solve's last stage gives the whole
    solve's, decision 0066)."""
    started = time.monotonic()
    best = _Best(started)
    given = None if start is None else np.ascontiguousarray(start, dtype=np.int32)
    progress = control.progress
    ga_prog = _new_progress()
    legs = [ga_prog]  # the GA's runs: the first, and the one after the weekend MIP

    def refresh() -> None:
        leg = legs[-1]
        progress.generation = sum(int(g.generation) for g in legs)
        progress.population = int(leg.population)
        progress.evaluations = best.priced + sum(int(g.evaluations) for g in legs)
        hard, penalty = int(leg.best_hard), int(leg.best_penalty)
        if best.penalty is not None and (hard != 0 or penalty > best.penalty):
            hard, penalty = 0, best.penalty
        progress.best_hard = hard
        progress.best_penalty = penalty

    control.refresh = refresh
    outcome = None
    if column_share > 0 and max_evaluations == 0 and not crash_for_test and start is None:
        def bound(value: float) -> None:
            progress.lower_bound = float(value)

        def begun() -> None:
            # not before: on long horizons the phase ends after its first pricing round, and
            # a progress event saying "Column generation" would name a phase that did not run
            progress.phase = PHASE_COLUMNS

        outcome = solve_by_columns(
            packed.c, packed.arrays, packed.shape,
            deadline=started + column_share * time_limit,
            root_deadline=started + (ROOT_SHARE if root_share is None else root_share)
            * time_limit,
            stop=control.cancel.is_set, offer=best.offer, priced=best.count, bound=bound,
            seed=seed, begun=begun, pace_root=pace_root,
            rescue=lambda: _rescue_walk(problem, packed, seed, population, control),
        )
    lower_bound = None
    if outcome is not None and outcome.lower_bound is not None:
        lower_bound = float(outcome.lower_bound)
    progress.lower_bound = lower_bound
    remaining = time_limit - (time.monotonic() - started)
    skip_ga = (outcome is not None and outcome.proven_optimal) or control.cancel.is_set()
    roster = np.full(packed.shape, -1, dtype=np.int32)
    ga_offset_ms = (time.monotonic() - started) * 1000.0
    ga_runs = not skip_ga and remaining > 0
    polish = 0.0
    if ga_runs:
        progress.phase = PHASE_GENETIC
        polish = 0.0 if max_evaluations else _weekend_seconds(
            packed, time_limit if weekend_limit is None else weekend_limit)
        cfg = ffi.new("gr_config *")
        cfg.time_limit = remaining - polish if polish < remaining else remaining
        cfg.seed = seed
        cfg.population = population
        cfg.crash_for_test = 1 if crash_for_test else 0
        cfg.max_evaluations = max_evaluations
        first = _start_of(problem, packed) if start is None else given
        if start is not None:
            cfg.start_heat = start_heat
        if first is None and outcome is not None and outcome.dived and best.roster is not None:
            # the GA goes on from the dives' best roster rather than from a greedy start
            first = np.ascontiguousarray(best.roster, dtype=np.int32)
            lp = outcome.root_lp
            if lp is not None and best.penalty is not None and best.penalty <= DIVE_NEAR_LP * lp:
                cfg.start_heat = DIVE_START_HEAT
        if first is not None:
            cfg.start = ffi.cast("int32_t *", ffi.from_buffer(first))
        if best.roster is not None:
            # feasible by construction (each row from the exact row search): the GA goes on
            # from it where its own start stays broken after the repair (pins on long rows)
            fallback = np.ascontiguousarray(best.roster, dtype=np.int32)
            cfg.fallback = ffi.cast("int32_t *", ffi.from_buffer(fallback))
        _check(_run_ga(packed, cfg, ga_prog, roster, control))
    refresh()
    first_ms = [best.first_ms] if best.first_ms is not None else []
    if int(ga_prog.first_feasible_ms) >= 0:
        first_ms.append(ga_offset_ms + int(ga_prog.first_feasible_ms))
    best_ms: float | None = best.best_ms
    final = best.roster
    if ga_runs:  # the GA always offers its greedy start, so it has a best roster
        ga_hard, ga_pen = int(ga_prog.best_hard), int(ga_prog.best_penalty)
        if final is None or best.penalty is None or (ga_hard == 0 and ga_pen < best.penalty):
            final = roster
            best_ms = ga_offset_ms + int(ga_prog.best_ms) if int(ga_prog.best_ms) >= 0 else None
    if final is None:
        # a leg given a roster returns it when a cancel or its time leaves the GA no turn
        final = roster if ga_runs or given is None else given
    if polish and not control.cancel.is_set():
        deadline = started + time_limit
        hard, penalty = _score_packed(packed, final)
        better = None
        if not hard:
            progress.step = STEP_WEEKEND_MIP
            try:
                better = _polish_weekends(packed, final, penalty, deadline, control.cancel)
            finally:
                progress.step = ""
        if better is not None:
            final, penalty = better
            best_ms = (time.monotonic() - started) * 1000.0
        if hard == 0 and deadline - time.monotonic() >= SECOND_LEG_SECONDS \
                and not control.cancel.is_set():
            # the MIP's time left over (it proves most weekends optimal in under a second) is
            # the GA's again, from the best roster, cool as after a good dive
            best.offer(final, penalty)
            legs.append(_new_progress())
            leg_ms = (time.monotonic() - started) * 1000.0
            again = _second_leg(packed, final, deadline, seed, population, legs[-1], control)
            refresh()
            if again is not None and int(legs[-1].best_penalty) < penalty:
                final, best_ms = again, leg_ms + max(int(legs[-1].best_ms), 0)
    # The search keeps every pin it can (they cost more than any move gains); where the other
    # hard rules leave no row that keeps them all, the pins still win: the contract is that a
    # pinned cell is never changed, and the breakdown then shows what broke instead.
    final = set_pins(problem, final)
    cancelled = any(bool(g.cancelled) for g in legs) or control.cancel.is_set()
    return SolverRun(
        roster=final,
        iterations=sum(int(g.generation) for g in legs),
        evaluations=best.priced + sum(int(g.evaluations) for g in legs),
        time_to_first_feasible_ms=min(first_ms) if first_ms else None,
        time_to_best_ms=best_ms,
        cancelled=cancelled,
        # the GA's own verdict; without it, the column phase used the whole limit unless it
        # proved its roster optimal
        timed_out=bool(legs[-1].timed_out) if ga_runs else not cancelled and not skip_ga,
        lower_bound=lower_bound,
    )


def _solve_planned(problem: Problem, packed: _Packed, merged: Merged, time_limit: float,
                   seed: int, control: SolveControl, population: int,
                   column_share: float) -> SolverRun:
    """A long or large roster solved in legs (decision 0057): a short solve for a feasible
    roster at once, the merged problem's solve for a plan (its root unpaced for
    PLAN_ROOT_SHARE of that leg, decision 0060), then the real solve with every day the plan
    has off pinned for PLAN_OFF_SHARE of the rest, and from that roster with only the plan's
    free weekends pinned for the time left (decision 0061; a plan of several lengths pins
    nothing in that last stage, decision 0062); a pinned leg that proves its roster optimal
    early hands the rest to the real problem, unpinned, from the best roster (0057). The best
    real roster wins. The guided legs' bounds are the pinned problems', not this one's; the
    first leg's is kept, or the merged problem's plus its offset, a relaxation's, when that is
    higher. A plan on the types counted as one (decision 0063) gives no bound, and its first
    stage starts from rows built on it (`rows_on_plan`)."""
    started = time.monotonic()
    end = started + time_limit

    def going() -> bool:
        return not control.cancel.is_set() and time.monotonic() < end

    def leg(p: Problem, packed_p: _Packed, seconds: float, leg_control: SolveControl,
            root_share: float | None = None, pace_root: bool = True,
            start: npt.NDArray[np.int32] | None = None, start_heat: float = DIVE_START_HEAT,
            weekend_limit: float | None = None) -> SolverRun:
        return _solve_once(p, packed_p, seconds, seed, leg_control, False, population, 0,
                           column_share, root_share=root_share, pace_root=pace_root,
                           start=start, start_heat=start_heat, weekend_limit=weekend_limit)

    first = leg(problem, packed, min(PLAN_FIRST_SECONDS, time_limit), control)
    runs, final, best_ms = [first], first.roster, first.time_to_best_ms
    first_ms = first.time_to_first_feasible_ms
    lower_bound = first.lower_bound
    score = _score_packed(packed, final)
    plan = None
    if going():
        plain = _Packed(merged.problem)
        relay, close = _relay(control, runs, STEP_PLAN, real=False, offset=merged.offset)
        plan = leg(merged.problem, plain, PLAN_SHARE * (end - time.monotonic()), relay,
                   root_share=PLAN_ROOT_SHARE, pace_root=False)
        close()
        runs.append(plan)
        if merged.offset is not None and plan.lower_bound is not None and (
                lower_bound is None or plan.lower_bound + merged.offset > lower_bound):
            lower_bound = control.progress.lower_bound = plan.lower_bound + merged.offset
    run = None
    if plan is not None and going():
        # a plan that breaks a rule of its own may have days no real row can have around
        # them: then the rest of the time is an ordinary solve
        stages: list[tuple[Problem, float]] = [(problem, 1.0)]
        if not _score_packed(plain, plan.roster)[0]:
            # a plan on the types merged by length keeps the minutes but not each type's
            # cover: its free weekends kept to the end left 13 a short slot or two more
            # than the walk unpinned from the first stage's roster (decision 0062), and on
            # types counted as one they left 24 at 54 219 against 47 111 (decision 0063)
            one_length = np.unique(np.asarray(problem.length)).size == 1
            last = problem if not one_length else dataclasses.replace(
                problem, pin=free_weekend_pins(plan.roster, packed.arrays["weekend"],
                                               problem.pin))
            stages = [
                (dataclasses.replace(problem, pin=off_day_pins(plan.roster, problem.pin)),
                 PLAN_OFF_SHARE),
                (last, 1.0),
            ]
        start = None
        if merged.offset is None and len(stages) > 1:
            days_off = _Packed(stages[0][0])  # held: its struct points into its arrays
            # a counted plan's days off leave the greedy start broken for seconds (24: 13 s of
            # a 20 s stage): the stage starts from rows built on them instead (decision 0063),
            # when those keep every rule of the stage (a leg from a roster expects one)
            start = rows_on_plan(days_off.c, packed.arrays, days_off.arrays["pin"],
                                 plan.roster, final, stop=lambda: not going())
            if _score_packed(days_off, start)[0]:
                start = None
        # rows built on a plan are no good roster yet (24: about 360 000, nearly all of it
        # cover), so the first stage walks from them as from a dive's; each later stage goes
        # on from the solve's best, which a hotter walk first leaves (decision 0064)
        heat = DIVE_START_HEAT
        while stages and going():
            guided, share = stages.pop(0)
            if share <= 0:
                continue
            at_ms = (time.monotonic() - started) * 1000.0
            relay, close = _relay(control, runs, STEP_PLANNED if guided is not problem else "",
                                  real=True)
            # the last stage's weekend MIP gets its share of the whole limit, not of the
            # stage: on 13 it needs 5-8 s to take a twelfth short slot back (decision 0066)
            run = leg(guided, _Packed(guided), share * (end - time.monotonic()), relay,
                      start=start, start_heat=heat, weekend_limit=None if stages else time_limit)
            heat = LATER_STAGE_HEAT
            close()
            runs.append(run)
            got = _score_packed(packed, run.roster)
            if first_ms is None and run.time_to_first_feasible_ms is not None:
                # the first leg's second found none (Instance 24 cut to 56 days): a stage's
                # roster keeps every real rule, its pins being more
                first_ms = at_ms + run.time_to_first_feasible_ms
            if got < score:
                final, score = run.roster, got
                best_ms = None if run.time_to_best_ms is None else at_ms + run.time_to_best_ms
            # the next stage starts from this one's roster when it keeps every hard rule
            start = None if got[0] else run.roster
            if not stages and guided is not problem and not score[0] \
                    and end - time.monotonic() >= SECOND_LEG_SECONDS:
                # only a column phase ends a leg early, by proving its pinned roster optimal
                # (the walk from the first stage's roster has none and uses its time): the
                # rest walks the real problem from the best roster, the pins lifted
                stages, start = [(problem, 1.0)], final
    control.refresh = lambda: None  # the legs' figures are in
    control.progress.step = ""
    progress = control.progress
    progress.lower_bound = lower_bound
    if score[0] == 0 and (progress.best_hard != 0 or score[1] < progress.best_penalty):
        progress.best_hard, progress.best_penalty = 0, score[1]
    return SolverRun(
        roster=set_pins(problem, final),
        iterations=sum(r.iterations for r in runs),
        evaluations=sum(r.evaluations for r in runs),
        time_to_first_feasible_ms=first_ms,
        time_to_best_ms=best_ms,
        cancelled=control.cancel.is_set(),
        timed_out=not control.cancel.is_set(),
        lower_bound=lower_bound,
    )


def _relay(control: SolveControl, runs: list[SolverRun], step: str, *, real: bool,
           offset: int | None = None) -> tuple[SolveControl, Callable[[], None]]:
    """A leg's own control, and what ends the relay once the leg has returned. The control
    shares the caller's cancel, and the caller's progress shows the legs' figures added up,
    and `step` as what the solve is doing (a real leg's own step, its weekend MIP, when it has
    one). A leg on the merged problem (`real` False) has penalties of another problem, so only
    the real legs' better rosters reach the caller's best. A bound reaches it only from a
    relaxation, plus `offset` (None: the leg's bound is not one). The end relays the leg's
    last figures, then no more: the caller's poller may be inside a refresh meanwhile, and a
    late one would put back a step that has ended."""
    sub = SolveControl(cancel=control.cancel)
    generations = sum(r.iterations for r in runs)
    evaluations = sum(r.evaluations for r in runs)
    lock = threading.Lock()
    relaying = True

    def refresh() -> None:
        with lock:
            if relaying:
                relay()

    def close() -> None:
        nonlocal relaying
        with lock:
            relay()
            relaying = False

    def relay() -> None:
        sub.refresh()
        mine, theirs = control.progress, sub.progress
        mine.generation = generations + theirs.generation
        mine.evaluations = evaluations + theirs.evaluations
        mine.population = theirs.population
        mine.phase = theirs.phase
        mine.step = (theirs.step or step) if real else step
        if real and theirs.best_hard == 0 and (
                mine.best_hard != 0 or theirs.best_penalty < mine.best_penalty):
            mine.best_hard, mine.best_penalty = 0, theirs.best_penalty
        if offset is not None and theirs.lower_bound is not None and (
                mine.lower_bound is None or theirs.lower_bound + offset > mine.lower_bound):
            mine.lower_bound = theirs.lower_bound + offset

    control.refresh = refresh
    return sub, close


def _second_leg(packed: _Packed, start: npt.NDArray[np.int32], deadline: float, seed: int,
                population: int, prog: Any, control: SolveControl,
                ) -> npt.NDArray[np.int32] | None:
    """The GA again until `deadline`, its first individual annealed from `start` at
    DIVE_START_HEAT under another seed; its best roster when that keeps every hard rule."""
    return _walk(packed, max(deadline - time.monotonic(), 1e-3), (seed + 1) % 2**64,
                 population, prog, control, start=start, start_heat=DIVE_START_HEAT)


def _rescue_walk(problem: Problem, packed: _Packed, seed: int, population: int,
                 control: SolveControl) -> npt.NDArray[np.int32] | None:
    """A first roster from a walk of RESCUE_SECONDS, for a column phase whose round 0 left an
    employee without a row (decision 0065); None when the walk found no hard-feasible one."""
    return _walk(packed, RESCUE_SECONDS, seed, population, _new_progress(), control,
                 start=_start_of(problem, packed))


def _walk(packed: _Packed, seconds: float, seed: int, population: int, prog: Any,
          control: SolveControl, *, start: npt.NDArray[np.int32] | None = None,
          start_heat: float | None = None) -> npt.NDArray[np.int32] | None:
    """A GA run of `seconds` (from `start` at `start_heat` when given, C's defaults when not),
    its progress in `prog`; its best roster when that keeps every hard rule, else None."""
    cfg = ffi.new("gr_config *")
    cfg.time_limit = seconds
    cfg.seed = seed
    cfg.population = population
    if start_heat is not None:
        cfg.start_heat = start_heat
    if start is not None:
        first = np.ascontiguousarray(start, dtype=np.int32)
        cfg.start = ffi.cast("int32_t *", ffi.from_buffer(first))
    roster = np.full(packed.shape, -1, dtype=np.int32)
    _check(_run_ga(packed, cfg, prog, roster, control))
    return roster if int(prog.best_hard) == 0 else None


def _new_progress() -> Any:
    prog = ffi.new("gr_progress *")
    prog.best_hard = -1
    prog.best_penalty = -1
    prog.first_feasible_ms = -1
    prog.best_ms = -1
    return prog


def _weekend_seconds(packed: _Packed, time_limit: float) -> float:
    """The time the weekend MIP gets at the end of the solve: WEEKEND_SHARE of the limit when
    the problem is beyond the GA's sizes, its weekend region small enough and that share at
    least WEEKEND_MIN_SECONDS, else 0."""
    e, d = packed.shape
    if d <= GA_DAYS and e * d <= GA_CELLS:
        return 0.0
    a = packed.arrays
    days = a["weekend"] >= 0
    workable = (a["day_off"][:, days] == 0).sum(axis=1)
    columns = int((workable * (a["max_shifts"] > 0).sum(axis=1)).sum())
    seconds = WEEKEND_SHARE * time_limit
    return seconds if 0 < columns <= WEEKEND_COLUMNS and seconds >= WEEKEND_MIN_SECONDS else 0.0


def _polish_weekends(packed: _Packed, roster: npt.NDArray[np.int32], penalty: int,
                     deadline: float, cancel: threading.Event,
                     ) -> tuple[npt.NDArray[np.int32], int] | None:
    """The hard-feasible `roster` (of `penalty`) with every employee's weekend days re-planned
    exactly (pinned cells kept), and its penalty; None when that found nothing better by
    `deadline` (time.monotonic()) or `cancel` was set. HiGHS hears its time limit and a cancel
    only at its callbacks, 1-3 s apart on Instance 13, so the MIP runs in a helper thread, and
    the deadline or a cancel returns at once, leaving the helper to end at its next callback
    (its roster unread). The helper is not a daemon: a process that ends meanwhile waits for
    it, as a daemon thread inside HiGHS at the interpreter's finalization aborts the process
    ("terminate called without an active exception" after a test run)."""
    free = weekend_cells(packed.arrays["weekend"], packed.shape)
    if "pin" in packed.arrays:
        free &= packed.arrays["pin"] == PIN_FREE
    if deadline <= time.monotonic() or not free.any():
        return None
    found: list[npt.NDArray[np.int32] | None] = []

    def work() -> None:
        region = Region(packed.arrays, int(packed.c.n_weekends), roster, free)
        # HiGHS's limit counts from its start: the model's build (0.3 s on Instance 13) is
        # already spent
        seconds = deadline - time.monotonic()
        if seconds > 0:
            found.append(region.solve(seconds, cancel.is_set))

    helper = threading.Thread(target=work, name=WEEKEND_THREAD, daemon=False)
    helper.start()
    while helper.is_alive():
        helper.join(min(CANCEL_POLL_SECONDS, max(deadline - time.monotonic(), 0.0)))
        if cancel.is_set() or (helper.is_alive() and time.monotonic() >= deadline):
            return None
    if not found or found[0] is None:
        return None
    better = np.ascontiguousarray(found[0], dtype=np.int32)
    new_hard, new_penalty = _score_packed(packed, better)
    return (better, new_penalty) if new_hard == 0 and new_penalty < penalty else None


def _score_packed(packed: _Packed, roster: npt.NDArray[np.int32]) -> tuple[int, int]:
    hard = ffi.new("int64_t *")
    pen = ffi.new("int64_t *")
    r32 = np.ascontiguousarray(roster, dtype=np.int32)
    _check(lib.gr_score(packed.c, ffi.cast("int32_t *", ffi.from_buffer(r32)), hard, pen))
    return int(hard[0]), int(pen[0])


def _start_of(problem: Problem, packed: _Packed) -> npt.NDArray[np.int32] | None:
    """Where the GA starts a re-roster: the previous roster with its pins set and nothing on a
    fixed day off (an absence), which the search then repairs with few changes. On a long
    horizon, where the column phase's row DP gives up, a greedy start that knows nothing of
    the previous roster would leave the search hundreds of changes to undo."""
    if problem.previous is None:
        return None
    previous = np.asarray(problem.previous)
    if previous.shape != packed.shape:
        return None  # _Packed's check names it when the changes are priced
    start = np.where(packed.arrays["day_off"] == 1, -1, np.maximum(previous, -1))
    start = np.where(start >= packed.arrays["length"].size, -1, start).astype(np.int32)
    return np.ascontiguousarray(set_pins(problem, start), dtype=np.int32)


class _Best:
    """The best roster the column phase offered, with when it came (ms since `started`)."""

    def __init__(self, started: float) -> None:
        self.started = started
        self.roster: npt.NDArray[np.int32] | None = None
        self.penalty: int | None = None
        self.first_ms: float | None = None
        self.best_ms: float | None = None
        self.priced = 0  # rows the column phase priced: its share of `evaluations`

    def count(self, rows: int) -> None:
        self.priced += rows

    def offer(self, roster: npt.NDArray[np.int32], penalty: int) -> None:
        # the column phase offers only rosters better than the last
        now = (time.monotonic() - self.started) * 1000.0
        if self.first_ms is None:
            self.first_ms = now
        self.roster, self.penalty, self.best_ms = roster, penalty, now


def _run_ga(packed: _Packed, cfg: Any, prog: Any, roster: npt.NDArray[np.int32],
            control: SolveControl) -> int:
    """The C GA in this thread (GIL released), with a helper thread passing on a cancel."""
    if control.cancel.is_set():
        prog.cancel = 1
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if control.cancel.wait(CANCEL_POLL_SECONDS):
                prog.cancel = 1
                return

    watcher = threading.Thread(target=watch, name="generetic-cancel", daemon=True)
    watcher.start()
    try:
        out = ffi.cast("int32_t *", ffi.from_buffer(roster))
        code: int = lib.gr_solve(packed.c, cfg, prog, out)
    finally:
        done.set()
        watcher.join()
    return code
