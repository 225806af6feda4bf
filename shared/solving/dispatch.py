"""Solver dispatch: `solve_request` compiles a request, runs the implementation it names (the C
solver or the greedy), and scores the roster.

Implementations are looked up by name at call time (`SOLVER_IMPLEMENTATION` in the services,
`--solver` in the CLI), so the C solver plugs in beside the greedy one without the callers knowing
which ran; a broken C build raises `SolverUnavailable` instead of taking the greedy down with it.
"""

from __future__ import annotations

import threading
import time

from shared.errors import SolverUnavailable
from shared.roster.compiled import compile_request
from shared.roster.evaluator import build_result
from shared.roster.greedy import solve_greedy
from shared.roster.model import Implementation, SolveRequest, SolveResult, SolverStats, trusted
from shared.roster.optimality import judge
from shared.roster.solving import SolveControl, Solver

_NEVER_CANCELLED = threading.Event()

# What the limit covers is the whole solve, request in and result out: compiling the request,
# the search, then scoring the roster (unless the solver scored it) and building the result.
# Those last two walk every cell in Python: measured 1.4 us (scoring) and 0.6 us (building)
# per employee-day at 5,000 x 366 on this repository's 2-core machine; kept back at twice
# (scoring) and 1.4 times (building) that, and never more than this share of the limit.
SCORE_SECONDS_PER_CELL = 2.8e-6
BUILD_SECONDS_PER_CELL = 0.8e-6
FINISH_SHARE = 0.6


def finish_seconds(cells: int, implementation: Implementation) -> float:
    """What finishing a roster of `cells` employee-days takes once the search stopped. The
    greedy scores its own roster within its limit (shared/roster/greedy.py)."""
    per_cell = BUILD_SECONDS_PER_CELL
    if implementation is not Implementation.GREEDY:
        per_cell += SCORE_SECONDS_PER_CELL
    return per_cell * cells


def search_limit(
    limit: float, spent: float, cells: int, implementation: Implementation
) -> float:
    """The time left for the search of a `limit` second solve that spent `spent` seconds
    compiling, keeping back what finishing a roster of `cells` employee-days takes."""
    finish = min(finish_seconds(cells, implementation), FINISH_SHARE * limit)
    return max(limit - spent - finish, 0.05 * limit)


def cells_of(request: SolveRequest) -> int:
    return len(request.employees) * request.horizon.days


def get_solver(implementation: Implementation) -> Solver:
    if implementation is Implementation.GREEDY:
        return solve_greedy
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
    compiling = time.perf_counter()
    problem = compile_request(request)
    solver = get_solver(impl)
    started = time.perf_counter()
    cells = problem.n_employees * problem.n_days
    search = search_limit(limit, started - compiling, cells, impl)
    run = solver(problem, time_limit=search, seed=request.solver.seed, control=control)
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
            # every field, in declaration order: `trusted`'s fast path; the proof comes below
            "lower_bound": None,
            "gap": None,
            "proven_optimal": False,
        },
    )
    result = build_result(problem, run.roster, stats, evaluation=run.evaluation)
    if run.lower_bound is None:  # the greedy's case: the fields keep their defaults
        return result
    found = judge(result.score.penalty, result.score.hard_violations, run.lower_bound)
    proof = {
        "lower_bound": found.lower_bound,
        "gap": found.gap,
        "proven_optimal": found.proven_optimal,
    }
    return result.model_copy(update={"stats": stats.model_copy(update=proof)})
