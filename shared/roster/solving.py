"""The solver strategy interface: every implementation takes a compiled `Problem` and returns a
roster; `solve_request` turns that into a scored `SolveResult`.

Implementations are looked up by name at call time (`SOLVER_IMPLEMENTATION` in the services,
`--solver` in the CLI), so the C solver plugs in beside the greedy one without the callers
knowing which ran.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from shared.roster.compiled import I32, Problem, compile_request
from shared.roster.evaluator import Evaluation, build_result
from shared.roster.model import (
    Implementation,
    SolveRequest,
    SolveResult,
    SolverStats,
    trusted,
)


@dataclass
class Progress:
    """Live figures a running solve publishes; read by pollers from another thread.

    Plain attribute writes are atomic under the GIL and the C solver's struct is copied into
    this object by its wrapper, so a reader may see a slightly stale but never a torn value.
    """

    generation: int = 0
    total_generations: int = 0  # 0 = unknown (time-limited search)
    population: int = 0
    best_hard: int = -1  # -1 = no roster yet
    best_penalty: int = -1
    evaluations: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self.started


@dataclass
class SolveControl:
    """What a caller holds to watch and stop a solve."""

    cancel: threading.Event = field(default_factory=threading.Event)
    progress: Progress = field(default_factory=Progress)
    # Refreshes the caller's view of `progress` (the C wrapper copies its struct here).
    refresh: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class SolverRun:
    roster: I32
    iterations: int = 0
    evaluations: int = 0
    time_to_first_feasible_ms: float | None = None
    time_to_best_ms: float | None = None
    cancelled: bool = False
    timed_out: bool = False
    # The evaluator's verdict on `roster` when the solver already computed it, so the result
    # is not scored twice.
    evaluation: Evaluation | None = None


class Solver(Protocol):
    def __call__(
        self, problem: Problem, *, time_limit: float, seed: int, control: SolveControl
    ) -> SolverRun: ...


_NEVER_CANCELLED = threading.Event()


class SolverUnavailable(RuntimeError):
    """The requested implementation cannot run here (e.g. the C library failed to load)."""


_greedy: Solver | None = None


def get_solver(implementation: Implementation) -> Solver:
    global _greedy
    if implementation is Implementation.GREEDY:
        if _greedy is None:
            # Imported here: greedy imports this module.
            from shared.roster.greedy import solve_greedy

            _greedy = solve_greedy
        return _greedy
    try:
        import csolver
    except ImportError as err:  # a broken build must not take the greedy path down with it
        raise SolverUnavailable(f"generetic solver unavailable: {err}") from err
    solver: Solver = csolver.solve_generetic
    return solver


def solve_request(
    request: SolveRequest,
    *,
    implementation: Implementation | None = None,
    time_limit: float | None = None,
    control: SolveControl | None = None,
) -> SolveResult:
    """Compile, solve with the chosen implementation, and score the roster."""
    impl = implementation or request.solver.implementation or Implementation.GENERETIC
    limit = time_limit if time_limit is not None else request.solver.time_limit_seconds
    # Nobody else holds this control, so nothing can set its cancel flag: a shared flag that
    # stays clear spares creating an Event (a lock and a condition) per solve.
    control = control or SolveControl(cancel=_NEVER_CANCELLED)
    problem = compile_request(request)
    solver = get_solver(impl)
    started = time.perf_counter()
    run = solver(problem, time_limit=limit, seed=request.solver.seed, control=control)
    elapsed_ms = (time.perf_counter() - started) * 1000
    # Our own figures, already of the field types: built without validation (see `trusted`).
    stats = trusted(
        SolverStats,
        {
            "implementation": impl,
            "seed": request.solver.seed,
            "time_ms": round(elapsed_ms, 3),
            "iterations": run.iterations,
            "evaluations": run.evaluations,
            "time_to_first_feasible_ms": run.time_to_first_feasible_ms,
            "time_to_best_ms": run.time_to_best_ms,
            "cancelled": run.cancelled,
            "timed_out": run.timed_out,
        },
    )
    return build_result(problem, run.roster, stats, evaluation=run.evaluation)
