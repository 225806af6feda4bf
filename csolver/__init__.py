"""generetic: the C memetic solver behind the `Solver` protocol (shared/roster/solving.py).

The solve runs in the calling thread with the GIL released (cffi does that for every call into
C), so parallel solves in parallel threads really run in parallel. Cancellation: a helper thread
waits on `control.cancel` (a `threading.Event`) with a 10 ms timeout and, once it is set, writes
the C progress struct's `cancel` field, which the C loop reads every 512 proposals (a row DP,
the most expensive step, is bounded to ~16M transitions).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from csolver._generetic import ffi, lib
from shared.roster.compiled import I32, Problem
from shared.roster.solving import SolveControl, SolverRun

__all__ = ["ERRORS", "GeneticError", "score", "solve_generetic", "validate"]

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
}

CANCEL_POLL_SECONDS = 0.010


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
    into them. Holding this object keeps every buffer alive for the duration of a C call."""

    def __init__(self, problem: Problem) -> None:
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


def _check(code: int) -> None:
    if code != 0:
        raise GeneticError(code)


def validate(problem: Problem) -> None:
    """Raise ValueError (GeneticError for what only C checks) if the problem is malformed."""
    _check(lib.gr_validate(_Packed(problem).c))


def score(problem: Problem, roster: I32) -> tuple[int, int]:
    """(hard violation count, soft penalty) of a roster, computed by the C library."""
    packed = _Packed(problem)
    r = np.asarray(roster)
    if r.shape != packed.shape:
        raise ValueError(f"roster: expected shape {packed.shape}, got {r.shape}")
    if r.dtype.kind not in "iu":
        raise ValueError(f"roster: expected an integer array, got dtype {r.dtype}")
    r32 = np.ascontiguousarray(r, dtype=np.int32)
    hard = ffi.new("int64_t *")
    pen = ffi.new("int64_t *")
    _check(lib.gr_score(packed.c, ffi.cast("int32_t *", ffi.from_buffer(r32)), hard, pen))
    return int(hard[0]), int(pen[0])


def solve_generetic(
    problem: Problem,
    *,
    time_limit: float,
    seed: int,
    control: SolveControl,
    crash_for_test: bool = False,
    population: int = 0,
    max_evaluations: int = 0,
) -> SolverRun:
    """Run the memetic GA for at most `time_limit` seconds (or `max_evaluations` moves when > 0;
    with a budget the run is reproducible for a given seed)."""
    if not time_limit > 0 or time_limit != time_limit:
        raise ValueError(f"time_limit: must be positive, got {time_limit}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed: must be in [0, 2^64), got {seed}")
    if not 0 <= population <= 1000:
        raise ValueError(f"population: must be in [0, 1000], got {population}")
    if max_evaluations < 0:
        raise ValueError(f"max_evaluations: must not be negative, got {max_evaluations}")
    packed = _Packed(problem)
    cfg = ffi.new("gr_config *")
    cfg.time_limit = float(time_limit)
    cfg.seed = seed
    cfg.population = population
    cfg.crash_for_test = 1 if crash_for_test else 0
    cfg.max_evaluations = max_evaluations
    prog = ffi.new("gr_progress *")
    prog.best_hard = -1
    prog.best_penalty = -1
    prog.first_feasible_ms = -1
    prog.best_ms = -1
    roster = np.full(packed.shape, -1, dtype=np.int32)

    progress = control.progress

    def refresh() -> None:
        progress.generation = int(prog.generation)
        progress.population = int(prog.population)
        progress.best_hard = int(prog.best_hard)
        progress.best_penalty = int(prog.best_penalty)
        progress.evaluations = int(prog.evaluations)

    control.refresh = refresh
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
        code = lib.gr_solve(packed.c, cfg, prog, ffi.cast("int32_t *", ffi.from_buffer(roster)))
    finally:
        done.set()
        watcher.join()
    _check(code)
    refresh()
    first = int(prog.first_feasible_ms)
    best = int(prog.best_ms)
    return SolverRun(
        roster=roster,
        iterations=int(prog.generation),
        evaluations=int(prog.evaluations),
        time_to_first_feasible_ms=float(first) if first >= 0 else None,
        time_to_best_ms=float(best) if best >= 0 else None,
        cancelled=bool(prog.cancelled),
        timed_out=bool(prog.timed_out),
    )
