"""Solver dispatch: `solve_request` compiles a request, runs the implementation it names (the C
solver or the greedy), and scores the roster.

Implementations are looked up by name at call time (`SOLVER_IMPLEMENTATION` in the services,
`--solver` in the CLI), so the C solver plugs in beside the greedy one without the callers knowing
which ran; a broken C build raises `SolverUnavailable` instead of taking the greedy down with it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shared.errors import SolverUnavailable
from shared.roster.compiled import I32, Problem, compile_request
from shared.roster.evaluator import (
    RESULT_HEAD,
    Evaluation,
    Rendered,
    build_result,
    render,
    rendered,
)
from shared.roster.greedy import solve_greedy
from shared.roster.model import Implementation, SolveRequest, SolveResult, SolverStats, trusted
from shared.roster.optimality import judge
from shared.roster.solving import SolveControl, Solver, SolverRun

if TYPE_CHECKING:
    from csolver.explain import Explainer

_NEVER_CANCELLED = threading.Event()

# What the limit covers is the whole solve, request in and result out: compiling the request,
# the search, then scoring the roster (unless the solver scored it) and building the result.
# In Python those walk every cell: measured 1.4 us (scoring) and 0.6 us (building) per
# employee-day at 5,000 x 366 on this repository's 2-core machine; kept back at twice
# (scoring) and 1.4 times (building) that, and never more than this share of the limit.
SCORE_SECONDS_PER_CELL = 2.8e-6
BUILD_SECONDS_PER_CELL = 0.8e-6
FINISH_SHARE = 0.6
# From this many employee-days up the roster is scored and written out in C (csolver/
# explain.py), prepared before the search: 20-60 ms for the 1.8 M cells of the size limits,
# where the Python rules took 1-2.5 s (docs/decisions/0020). Below it, where the whole
# Python scoring takes under ~20 ms, the C call's packing would cost more than it saves.
EXPLAIN_MIN_CELLS = 20_000
# What that finish takes per cell (scoring, the summary, the JSON), kept back at ~3 times
# the 0.05-0.1 us measured under load.
FAST_FINISH_SECONDS_PER_CELL = 0.25e-6


def finish_seconds(cells: int, implementation: Implementation) -> float:
    """What finishing a roster of `cells` employee-days takes once the search stopped. The
    greedy scores its own roster within its limit (shared/roster/greedy.py)."""
    if cells >= EXPLAIN_MIN_CELLS and explainer_available():
        return FAST_FINISH_SECONDS_PER_CELL * cells
    per_cell = BUILD_SECONDS_PER_CELL
    if implementation is not Implementation.GREEDY:
        per_cell += SCORE_SECONDS_PER_CELL
    return per_cell * cells


@functools.cache
def explainer_available() -> bool:
    try:
        import csolver.explain  # noqa: F401
    except ImportError:  # a broken C build: the Python rules score every roster
        return False
    return True


def explainer_for(problem: Problem) -> Explainer | None:
    """The C scorer for `problem`, packed now (before the search), or None when the roster
    is small enough for the Python rules or the C build is broken."""
    if problem.n_employees * problem.n_days < EXPLAIN_MIN_CELLS or not explainer_available():
        return None
    from csolver.explain import Explainer

    return Explainer(problem)


def search_limit(
    limit: float, spent: float, cells: int, implementation: Implementation
) -> float:
    """The time left for the search of a `limit` second solve that spent `spent` seconds
    compiling, keeping back what finishing a roster of `cells` employee-days takes."""
    finish = min(finish_seconds(cells, implementation), FINISH_SHARE * limit)
    return max(limit - spent - finish, 0.05 * limit)


def cells_of(request: SolveRequest) -> int:
    return len(request.employees) * request.horizon.days


def get_solver(
    implementation: Implementation, score: Callable[[I32], Evaluation] | None = None
) -> Solver:
    """`score`, when given, scores the greedy's roster (the greedy keeps back less time
    for it than for the Python rules)."""
    if implementation is Implementation.GREEDY:
        if score is not None:
            return functools.partial(solve_greedy, score=score)
        return solve_greedy
    try:
        import csolver
    except ImportError as err:  # a broken build must not take the greedy path down with it
        raise SolverUnavailable(f"generetic solver unavailable: {err}") from err
    solver: Solver = csolver.solve_generetic
    return solver


@dataclass(frozen=True)
class _Solved:
    problem: Problem
    run: SolverRun
    stats: SolverStats
    explainer: Explainer | None


def _solve(
    request: SolveRequest,
    implementation: Implementation | None,
    time_limit: float | None,
    control: SolveControl | None,
) -> _Solved:
    impl = implementation or request.solver.implementation or Implementation.GENERETIC
    limit = time_limit if time_limit is not None else request.solver.time_limit_seconds
    # Nobody else holds this control, so nothing can set its cancel flag: a shared flag that
    # stays clear spares creating an Event (a lock and a condition) per solve.
    control = control or SolveControl(cancel=_NEVER_CANCELLED)
    compiling = time.perf_counter()
    problem = compile_request(request)
    # Prepared before the search, so a cancel finds nothing left to pack.
    explainer = explainer_for(problem)
    solver = get_solver(impl, None if explainer is None else _paused(explainer.evaluate))
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
    return _Solved(problem, run, stats, explainer)


def _result(solved: _Solved, assignments: bool) -> SolveResult:
    run, explainer = solved.run, solved.explainer
    evaluation = run.evaluation
    if evaluation is None and explainer is not None:
        evaluation = explainer.evaluate(run.roster)
    result = build_result(
        solved.problem, run.roster, solved.stats, evaluation=evaluation, assignments=assignments
    )
    if run.lower_bound is None:  # the greedy's case: the fields keep their defaults
        return result
    found = judge(result.score.penalty, result.score.hard_violations, run.lower_bound)
    proof = {
        "lower_bound": found.lower_bound,
        "gap": found.gap,
        "proven_optimal": found.proven_optimal,
    }
    return result.model_copy(update={"stats": solved.stats.model_copy(update=proof)})


def solve_request(
    request: SolveRequest,
    *,
    implementation: Implementation | None = None,
    time_limit: float | None = None,
    control: SolveControl | None = None,
) -> SolveResult:
    """Compile, solve with the chosen implementation, and score the roster."""
    return _result(_solve(request, implementation, time_limit, control), assignments=True)


def solve_rendered(
    request: SolveRequest,
    *,
    implementation: Implementation | None = None,
    time_limit: float | None = None,
    control: SolveControl | None = None,
) -> Rendered:
    """`solve_request`, its result rendered as the JSON that is published: at the size
    limits the roster goes from the C search's array to JSON text in C, never through 1.8 M
    Python objects (docs/decisions/0020)."""
    solved = _solve(request, implementation, time_limit, control)
    if solved.explainer is None:
        return render(_result(solved, assignments=True))
    explainer, roster = solved.explainer, solved.run.roster
    with _collector_paused(), ThreadPoolExecutor(1, thread_name_prefix="render") as pool:
        # The rows are written in C, outside the GIL, while the rest of the result is scored
        # and built: ~10 ms of a cancel at the size limits no longer come one after the other.
        rows = pool.submit(explainer.render, roster, RESULT_HEAD)
        summary = _result(solved, assignments=False)
        out = rendered(summary, rows.result())
    return dataclasses.replace(out, retained=solved)


def _paused(score: Callable[[I32], Evaluation]) -> Callable[[I32], Evaluation]:
    def paused(roster: I32) -> Evaluation:
        with _collector_paused():
            return score(roster)

    return paused


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a large roster's result is built: it makes ~10^4 objects
    and no cycles, yet with CPython's default thresholds it set off collections that walked
    the compiled problem's lists (1.8 M cells at the limits), 30-70 ms of a cancel's 200."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
