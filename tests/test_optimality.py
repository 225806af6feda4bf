"""The proof in the result: a lower bound, the gap against it, and `proven_optimal`, from the
rule (shared/roster/optimality.py) through real solves of benchmark instances to the progress a
running solve reports across the process boundary."""

from __future__ import annotations

import csv

import pytest

from shared.jobs.messages import Outcome, OutcomeKind
from shared.roster.curtois import bench_dir, load_curtois
from shared.roster.model import Implementation, SolveResult
from shared.roster.optimality import Optimality, bound_as_penalty, judge
from shared.roster.solving import SolveControl
from shared.solving.dispatch import solve_request
from shared.solving.isolation import solve_isolated
from shared.solving.progress import ProgressReporter
from tests.csolver_helpers import polling


def optima() -> dict[int, int]:
    """The proven optima (the best known roster's penalty; Instance 24's bound is one below)."""
    with (bench_dir() / "best_known.csv").open() as f:
        return {
            int(row["instance"].removeprefix("Instance")): int(row["best_upper_bound"])
            for row in csv.DictReader(f)
        }


# ------------------------------------------------------------------------------ the rule


def test_gap_is_relative_to_the_bound() -> None:
    assert judge(1147, 0, 1140.35) == Optimality(1141, pytest.approx(6 / 1141), False)
    assert judge(2207, 0, 1348.0).gap == pytest.approx(0.637, abs=1e-3)  # the figure


def test_proven_optimal_only_when_the_penalty_meets_the_bound() -> None:
    assert judge(828, 0, 827.9999999).proven_optimal  # the LP's floating point, not a gap
    assert judge(828, 0, 828.0) == Optimality(828, 0.0, True)
    assert not judge(829, 0, 828.0).proven_optimal
    # penalties are whole, so an LP bound of 827.5 proves 828
    assert judge(828, 0, 827.5) == Optimality(828, 0.0, True)


def test_never_proven_with_hard_violations() -> None:
    # an infeasible roster's soft penalty is not comparable with the bound: no gap either
    assert judge(500, 1, 900.0) == Optimality(900, None, False)
    assert judge(900, 3, 900.0) == Optimality(900, None, False)


def test_no_bound_no_proof() -> None:
    assert judge(10, 0, None) == Optimality()
    assert judge(10, 0, float("nan")) == Optimality()
    assert bound_as_penalty(float("-inf")) is None
    # a bound of 0: a roster of penalty 0 is optimal, a positive one has no relative gap
    assert judge(0, 0, 0.0) == Optimality(0, 0.0, True)
    assert judge(5, 0, -0.3) == Optimality(0, None, False)


def test_the_completed_event_carries_the_proof() -> None:
    base = {"kind": OutcomeKind.COMPLETED, "job_id": "j", "result": "{}", "solver_used": "x"}
    f = Outcome(**base, lower_bound=1141, gap=6 / 1141, proven_optimal=False).event_fields()
    assert (f["lower_bound"], f["gap"], f["proven_optimal"]) == ("1141", "0.0053", "false")
    f = Outcome(**base, lower_bound=828, gap=0.0, proven_optimal=True).event_fields()
    assert (f["lower_bound"], f["gap"], f["proven_optimal"]) == ("828", "0.0000", "true")
    f = Outcome(**base, proven_optimal=False).event_fields()  # the greedy: no bound
    assert (f["lower_bound"], f["gap"], f["proven_optimal"]) == ("", "", "false")


# ------------------------------------------------------------------------------ real solves


def solve(i: int, seconds: float) -> SolveResult:
    request = load_curtois(bench_dir() / f"Instance{i}.txt")
    return solve_request(request, implementation=Implementation.GENERETIC, time_limit=seconds)


@pytest.mark.parametrize("i", [2, 3, 4])
def test_a_roster_at_the_bound_is_proven_optimal(i: int) -> None:
    """Column generation proves these in well under a second: the bound is the optimum."""
    result = solve(i, 20.0)
    stats = result.stats
    assert stats is not None and result.feasible
    assert stats.proven_optimal
    assert stats.lower_bound == result.score.penalty == optima()[i]
    assert stats.gap == 0.0


def solve_until_bound(i: int) -> SolveResult:
    """Solve, cancelled once the column phase proved its bound: the result is its best roster
    so far, with that bound. (The limit only leaves the root LP time on a loaded machine.)"""
    request = load_curtois(bench_dir() / f"Instance{i}.txt")
    control = SolveControl()

    def cancel_at_the_bound() -> bool:
        if control.progress.lower_bound is None:
            return False
        control.cancel.set()
        return True

    with polling(cancel_at_the_bound, every=0.01):
        return solve_request(request, implementation=Implementation.GENERETIC,
                             time_limit=120.0, control=control)


@pytest.mark.parametrize("i", [1, 5, 7, 10, 11, 18])
def test_the_bound_never_exceeds_the_optimum(i: int) -> None:
    """Instances the column phase does not close at once (on 10 and 11 its bound is the
    optimum itself; 18 is 84 days long): a bound at most the optimum, a gap computed against
    it, and proven optimal only if the roster met it."""
    result = solve_until_bound(i)
    stats = result.stats
    assert stats is not None and result.feasible
    assert stats.lower_bound is not None, "the root LP of these converges in seconds"
    assert stats.lower_bound <= optima()[i] <= result.score.penalty
    bound = stats.lower_bound
    assert stats.gap == pytest.approx((result.score.penalty - bound) / bound)
    assert stats.proven_optimal == (result.score.penalty == stats.lower_bound)


def test_the_greedy_proves_nothing() -> None:
    request = load_curtois(bench_dir() / "Instance1.txt")
    result = solve_request(request, implementation=Implementation.GREEDY, time_limit=2.0)
    assert result.stats is not None
    assert (result.stats.lower_bound, result.stats.gap, result.stats.proven_optimal) == (
        None, None, False,
    )


def test_a_running_solve_reports_its_phase_and_bound_across_the_process_boundary() -> None:
    """The C solver's phase and LP bound reach the service's poller from the child process
    (the int64 array of shared/solving/isolation.py), and the progress messages say them:
    column generation with its bound and gap, then the genetic search."""
    request = load_curtois(bench_dir() / "Instance5.txt")
    control = SolveControl()
    seen: list[tuple[str, float | None, int, int]] = []
    messages: list[str] = []
    # A limit long enough for the root LP on a loaded machine (a quarter of it); the GA starts
    # at three quarters, and the test cancels it once it has said so.
    limit = 20.0
    reporter = ProgressReporter("j", time_limit=limit, interval=0.0, implementation="generetic")

    def look() -> None:
        p = control.progress
        seen.append((p.phase, p.lower_bound, p.best_hard, p.best_penalty))
        said = reporter.outcome(p, p.elapsed)
        if said is not None and said.message:
            messages.append(said.message)
            if said.phase == "genetic":
                control.cancel.set()

    with polling(look):
        result = solve_isolated(
            request, implementation=Implementation.GENERETIC, time_limit=limit, control=control,
            grace=30.0,
        )
    phases = [phase for phase, *_ in seen if phase]
    assert phases and phases[0] == "columns" and phases[-1] == "genetic", phases
    assert phases == sorted(phases, key=["columns", "genetic"].index)  # one way, in order
    bounds = {bound for phase, bound, *_ in seen if phase == "columns" and bound is not None}
    assert len(bounds) == 1, "the column phase reports its root bound while it runs"
    (bound,) = bounds
    assert bound <= optima()[5]
    assert result.stats is not None and result.stats.lower_bound == bound_as_penalty(bound)
    lp = f"LP bound {bound_as_penalty(bound)} (gap "
    assert any(m.startswith("Column generation: ") and lp in m for m in messages), messages
    assert any(m.startswith("Genetic search: ") for m in messages), messages
