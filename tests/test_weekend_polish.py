"""The solve's last step: every employee's weekend days re-planned by a MIP, the weekdays fixed
(csolver/exact_region.py, decision 0048). What a user relies on: the roster it returns is never
worse than the one it was given and breaks no hard rule, its weekdays and pinned cells are
left as they were, a cancel or the solve's deadline ends it, and it runs only where the solve
has time for it."""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

import csolver
from csolver import (
    WEEKEND_MIN_SECONDS,
    WEEKEND_SHARE,
    WEEKEND_THREAD,
    _Packed,
    _polish_weekends,
    _weekend_seconds,
    score,
    solve_generetic,
)
from csolver.exact_region import Region, weekend_cells
from shared.roster.compiled import FREE, Problem
from shared.roster.curtois import roster_from_tsv
from shared.roster.evaluator import evaluate
from shared.roster.solving import STEP_WEEKEND_MIP, SolveControl
from tests.csolver_helpers import BENCH, instance


def polish(problem: Problem, roster: np.ndarray, seconds: float,
           cancel: threading.Event) -> np.ndarray | None:
    """The solve's weekend step on a hard-feasible roster: the better roster, or None."""
    packed = _Packed(problem)
    hard, penalty = score(problem, roster)
    assert hard == 0
    got = _polish_weekends(packed, roster, penalty, time.monotonic() + seconds, cancel)
    if got is not None:
        assert score(problem, got[0]) == (0, got[1])  # the penalty it reports is the roster's
    return None if got is None else got[0]


def fixture(i: int) -> np.ndarray:
    path = next((BENCH / "solutions").glob(f"Instance{i}_obj*.tsv"))
    return np.asarray(roster_from_tsv(path.read_text(), instance(i)), dtype=np.int32)


@pytest.mark.parametrize(("i", "optimum"), [(2, 828), (8, 1300)])
def test_a_feasible_roster_gets_better_weekends_and_keeps_its_weekdays(i: int, optimum: int,
                                                                      ) -> None:
    problem, roster = instance(i), fixture(i)
    before = evaluate(problem, roster)
    assert before.hard_violations == 0 and before.penalty > optimum
    better = polish(problem, roster, 60.0, threading.Event())
    assert better is not None
    weekend = weekend_cells(problem.weekend, roster.shape)
    assert np.array_equal(better[~weekend], roster[~weekend])
    after = evaluate(problem, better)
    assert after.hard_violations == 0 and optimum <= after.penalty < before.penalty


def test_pinned_weekend_cells_keep_their_pins() -> None:
    """Half the cells an unpinned polish changes are pinned to their current values: the
    polish keeps them, and finds its gain elsewhere or none."""
    problem, roster = instance(8), fixture(8)
    free = polish(problem, roster, 60.0, threading.Event())
    assert free is not None
    changed = np.nonzero(free != roster)
    pin = np.full(roster.shape, FREE, dtype=np.int32)
    keep = slice(0, max(1, changed[0].size // 2))
    pin[changed[0][keep], changed[1][keep]] = roster[changed[0][keep], changed[1][keep]]
    pinned = dataclasses.replace(problem, pin=pin)
    better = polish(pinned, roster, 60.0, threading.Event())
    assert better is not None  # Instance 8's weekends have a gain that keeps these pins
    held = pin != FREE
    assert np.array_equal(better[held], pin[held])
    ev = evaluate(pinned, better)
    assert ev.hard_violations == 0
    assert evaluate(problem, free).penalty <= ev.penalty < evaluate(pinned, roster).penalty


def test_the_polish_prices_re_rostering_changes_as_the_evaluator_does() -> None:
    """A re-roster of Instance 8: a tenth of the cells pinned to the current roster, and a
    previous roster that differs from it on some weekend cells, each change priced. The
    polished roster keeps its pins and weekdays, breaks no rule, and is cheaper by the
    evaluator's own score, changes included, which the C score agrees with."""
    base, roster = instance(8), fixture(8)
    polished = 0
    for seed in range(3):
        rng = np.random.default_rng(seed)
        pin = np.full(roster.shape, FREE, dtype=np.int32)
        chosen = rng.random(roster.shape) < 0.1
        pin[chosen] = roster[chosen]
        previous = roster.copy()
        weekend = weekend_cells(base.weekend, roster.shape)
        moved = weekend & (rng.random(roster.shape) < 0.2)
        previous[moved] = rng.integers(-1, base.n_shifts, size=int(moved.sum()))
        problem = dataclasses.replace(base, pin=pin, previous=previous, change_weight=3)
        before = evaluate(problem, roster)
        assert before.hard_violations == 0
        better = polish(problem, roster, 60.0, threading.Event())
        if better is None:
            continue
        polished += 1
        after = evaluate(problem, better)
        assert after.hard_violations == 0 and after.penalty < before.penalty, seed
        assert score(problem, better) == (0, after.penalty), seed
        assert np.array_equal(better[~weekend], roster[~weekend]), seed
        assert np.array_equal(better[chosen], pin[chosen]), seed
    assert polished >= 2  # the checks above ran on rosters the polish changed


def test_a_cancel_ends_the_polish_at_once() -> None:
    """A cancel set while the model is built or solved returns within the poll, not at
    HiGHS's first callback (after about 1 s here) or its time limit."""
    problem = instance(13)
    run = solve_generetic(problem, time_limit=3.0, seed=1, control=SolveControl())
    roster = np.asarray(run.roster, dtype=np.int32)
    assert evaluate(problem, roster).hard_violations == 0
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    began = time.monotonic()
    assert polish(problem, roster, 600.0, cancel) is None
    assert time.monotonic() - began < 0.2 + 0.5
    # the MIP goes on in its helper until HiGHS's next callback, then ends by itself; the
    # helper is no daemon, so a process that exits meanwhile waits for it instead of
    # finalizing the interpreter under a thread inside HiGHS (which aborts the process)
    helpers = [t for t in threading.enumerate() if t.name == WEEKEND_THREAD]
    assert all(not t.daemon for t in helpers)
    for t in helpers:
        t.join(60.0)
        assert not t.is_alive()


def test_the_polish_ends_at_its_deadline_while_highs_runs_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The solve's limit holds through the weekend step. HiGHS checks its own time limit only
    at its callbacks, 1-3 s apart on Instance 13 (a 3 s step ended 0.13-0.26 s late), so the
    step stops waiting at the deadline and leaves the helper to end by itself. Here the MIP
    stands in for a HiGHS that has not reached its next callback."""
    release = threading.Event()

    class Stuck:
        def __init__(self, *args: object) -> None:
            pass

        def solve(self, seconds: float, stop: object) -> None:
            release.wait(30.0)

    monkeypatch.setattr(csolver, "Region", Stuck)
    problem = instance(13)
    packed = _Packed(problem)
    roster = np.full(packed.shape, -1, dtype=np.int32)
    try:
        got = _polish_weekends(packed, roster, 10**9, time.monotonic() + 0.2, threading.Event())
        helpers = [t for t in threading.enumerate() if t.name == WEEKEND_THREAD]
        assert got is None
        assert any(t.is_alive() for t in helpers)  # returned while the MIP still ran
    finally:
        release.set()
    for t in helpers:
        t.join(30.0)
        assert not t.is_alive()


def test_highs_hears_a_stop_at_its_callbacks() -> None:
    """Without the stop, this region (Instance 13's weekends with a day either side) runs to
    its 600 s limit (decision 0047)."""
    problem = instance(13)
    run = solve_generetic(problem, time_limit=3.0, seed=1, control=SolveControl())
    roster = np.asarray(run.roster, dtype=np.int32)
    region = Region.of_problem(problem, roster, weekend_cells(problem.weekend, roster.shape, 1))
    began = time.monotonic()
    kept = region.solve(600.0, lambda: time.monotonic() - began > 1.0)
    assert time.monotonic() - began < 30.0
    assert kept is not None and evaluate(problem, kept).hard_violations == 0


@pytest.mark.parametrize(("i", "runs"), [(7, False), (13, True), (15, True), (18, True),
                                         (20, True), (22, False), (24, False)])
def test_the_polish_runs_beyond_the_gas_sizes_where_its_mip_is_small(i: int, runs: bool,
                                                                     ) -> None:
    """Instances 1-12 keep the whole limit for the GA; so do 22 and 24, whose weekend MIPs
    are larger than WEEKEND_COLUMNS, and a limit whose share is too short for HiGHS to find
    anything (a planned solve's first 1 s leg)."""
    packed = _Packed(instance(i))
    assert _weekend_seconds(packed, 60.0) == (WEEKEND_SHARE * 60.0 if runs else 0.0)
    assert _weekend_seconds(packed, 1.0) == 0.0
    shortest = WEEKEND_MIN_SECONDS / WEEKEND_SHARE
    assert _weekend_seconds(packed, shortest) == (WEEKEND_MIN_SECONDS if runs else 0.0)


def test_a_medium_solve_keeps_its_limit_and_reports_the_roster_it_returns() -> None:
    """Instance 18: the GA, the weekend MIP and the GA again fit the limit, and the progress a
    user watches ends at the penalty of the roster returned."""
    problem = instance(18)
    control = SolveControl()
    began = time.monotonic()
    run = solve_generetic(problem, time_limit=4.0, seed=2, control=control)
    elapsed = time.monotonic() - began
    assert 3.9 <= elapsed < 4.0 + 1.0
    assert run.timed_out and not run.cancelled
    ev = evaluate(problem, run.roster)
    assert ev.hard_violations == 0
    control.refresh()
    assert (control.progress.best_hard, control.progress.best_penalty) == (0, ev.penalty)


def test_a_cancel_in_the_weekend_step_returns_a_feasible_roster_at_once() -> None:
    """Instance 13 at 8 s: the GA stops at 6.8 s and the MIP starts; a cancel at 7.3 s is
    heard within the poll, not at HiGHS's first callback a second later. Meanwhile the
    progress names the step (the GA's figures stand still during it), and not after it."""
    problem = instance(13)
    control = SolveControl()
    began = time.monotonic()
    steps: list[str] = []

    def cancel() -> None:
        steps.append(control.progress.step)
        control.cancel.set()

    threading.Timer(8.0 * (1 - WEEKEND_SHARE) + 0.5, cancel).start()
    run = solve_generetic(problem, time_limit=8.0, seed=1, control=control)
    assert time.monotonic() - began < 8.0 * (1 - WEEKEND_SHARE) + 0.5 + 0.5
    assert run.cancelled
    assert evaluate(problem, run.roster).hard_violations == 0
    assert steps == [STEP_WEEKEND_MIP] and control.progress.step == ""
