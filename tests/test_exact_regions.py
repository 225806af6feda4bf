"""csolver/exact_region.py and bench/exact_regions.py: a region of a roster re-optimised exactly
under every rule, the rest of the roster fixed (decisions 0034, 0048). The MIP is only as good
as its rules: a rule it missed would let it go below the proven optimum (the evaluator then
finds the roster breaking it), a rule it over-tightened would keep it above."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from csolver.exact_region import Region
from shared.roster.compiled import Problem, compile_request
from shared.roster.curtois import bench_dir, load_curtois, roster_from_tsv
from shared.roster.evaluator import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from exact_regions import improve, split_weekends, weekend_region


def fixture(instance: int) -> tuple[Problem, np.ndarray, int]:
    path = next((bench_dir() / "solutions").glob(f"Instance{instance}_obj*.tsv"))
    problem = compile_request(load_curtois(bench_dir() / f"Instance{instance}.txt"))
    return problem, roster_from_tsv(path.read_text(), problem), int(path.stem.split("_obj")[1])


@pytest.mark.parametrize(("instance", "optimum"), [(1, 607), (2, 828)])
def test_the_whole_roster_as_one_region_reaches_the_proven_optimum(
    instance: int, optimum: int
) -> None:
    problem, roster, objective = fixture(instance)
    assert objective > optimum  # the fixture is a feasible roster, not the optimum
    everything = np.ones(roster.shape, bool)
    best = Region.of_problem(problem, roster, everything).solve(120.0)
    assert best is not None
    ev = evaluate(problem, best)
    assert (ev.hard_violations, ev.penalty) == (0, optimum)


@pytest.mark.parametrize(
    "region",
    [
        (slice(None), slice(9, 16)),  # a window crossing a weekend and runs at both edges
        (slice(0, 3), slice(None)),  # three employees over the whole horizon
        (slice(5, 9), slice(0, 6)),  # a block touching the horizon's first day
    ],
)
def test_a_region_cut_out_of_a_roster_is_refilled_under_every_rule(
    region: tuple[slice, slice],
) -> None:
    problem, roster, objective = fixture(7)
    free = np.zeros(roster.shape, bool)
    free[region] = True
    holed = roster.copy()
    holed[free] = -1
    assert evaluate(problem, holed).hard_violations > 0
    refilled = Region.of_problem(problem, holed, free).solve(60.0)
    assert refilled is not None
    assert np.array_equal(refilled[~free], roster[~free])  # the rest is left as it was
    ev = evaluate(problem, refilled)
    # the fixture's own cells fill the hole under every rule, so the MIP does at least as well
    assert ev.hard_violations == 0 and ev.penalty <= objective


def test_improve_keeps_only_feasible_regions_that_do_not_lose() -> None:
    problem, roster, objective = fixture(7)
    windows = []
    for first in (0, 7, 14, 21):
        free = np.zeros(roster.shape, bool)
        free[:, first:first + 7] = True
        windows.append(free)
    better = improve(problem, roster, windows, 60.0, log=False)
    ev = evaluate(problem, better)
    assert ev.hard_violations == 0 and ev.penalty < objective


def test_split_weekends_are_counted_once_each() -> None:
    problem, roster, _ = fixture(7)
    weekend = np.asarray(problem.weekend)
    splits = 0
    for k in range(problem.n_weekends):
        days = np.nonzero(weekend == k)[0]
        if len(days) == 2:
            splits += int(((roster[:, days] >= 0).sum(1) == 1).sum())
    assert splits > 0
    assert sum(split_weekends(problem, roster).values()) == splits


@pytest.mark.parametrize("instance", [7, 8])
def test_each_row_alone_keeps_its_minutes_and_maximum_counts(instance: int) -> None:
    """One employee's whole row free and every colleague fixed: where the row's shifts are
    over-cover, the cheapest row works less, and only the minimum minutes stop it; on
    Instance 8, where nights are short, more nights than its maximum would pay."""
    problem, roster, objective = fixture(instance)
    for e in range(problem.n_employees):
        free = np.zeros(roster.shape, bool)
        free[e] = True
        refilled = Region.of_problem(problem, roster, free).solve(60.0)
        assert refilled is not None
        ev = evaluate(problem, refilled)
        assert ev.hard_violations == 0 and ev.penalty <= objective, problem.employee_ids[e]


def test_the_weekend_region_frees_every_weekend_day_and_its_neighbours_only() -> None:
    problem, roster, _ = fixture(7)
    weekend = np.asarray(problem.weekend) >= 0
    alone = weekend_region(problem, roster.shape, 0)
    assert alone.all(0)[weekend].all() and not alone.any(0)[~weekend].any()
    wider = weekend_region(problem, roster.shape, 1)
    fridays_and_mondays = np.convolve(weekend, [1, 1, 1], "same") > 0
    assert np.array_equal(wider.all(0), fridays_and_mondays)
    assert np.array_equal(wider.any(0), fridays_and_mondays)


def test_the_weekends_of_every_employee_are_re_planned_under_every_rule() -> None:
    """Every weekend day emptied: the MIP refills them around the fixed weekdays, with runs,
    rests and each employee's weekend count read across the weekdays it does not touch."""
    problem, roster, objective = fixture(7)
    free = weekend_region(problem, roster.shape, 0)
    holed = roster.copy()
    holed[free] = -1
    assert evaluate(problem, holed).hard_violations > 0
    refilled = Region.of_problem(problem, holed, free).solve(60.0)
    assert refilled is not None
    assert np.array_equal(refilled[~free], roster[~free])
    ev = evaluate(problem, refilled)
    assert ev.hard_violations == 0 and ev.penalty <= objective


@pytest.mark.parametrize("instance", [1, 7])
def test_a_region_given_no_time_returns_the_roster_it_started_from(instance: int) -> None:
    """The roster reaches HiGHS as a feasible start, cover slacks and weekend indicators
    included: a region that cannot search keeps it rather than coming back empty."""
    problem, roster, objective = fixture(instance)
    for free in (np.ones(roster.shape, bool), weekend_region(problem, roster.shape, 1)):
        kept = Region.of_problem(problem, roster, free).solve(1e-3)
        assert kept is not None
        ev = evaluate(problem, kept)
        assert ev.hard_violations == 0 and ev.penalty <= objective
