"""The greedy's copies of the hard rules, each checked against the evaluator on random problems.

The greedy reads the rules four ways: `ROW_RULES` (shared/roster/rowrules.py, one function per
rule, whole rows), the one-cell check of the local moves (`Greedy.cell_ok`), the state machine
and reach of the row planner (shared/roster/rowplan.py), and the bulk maker of rows for large
requests (`Greedy.bulk`).
Each is compared here with the evaluator (`shared.roster.rules`), directly or through
`ROW_RULES` once that is shown to agree with it.
"""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.roster.compiled import Problem
from shared.roster.evaluator import evaluate
from shared.roster.greedy import Greedy
from shared.roster.rowplan import Machine, reach
from shared.roster.rowrules import (
    OFF,
    ROW_RULES,
    RowRules,
    days_off,
    max_consecutive_shifts,
    min_consecutive_days_off,
    min_consecutive_shifts,
    row_breaks,
    row_feasible,
    shift_rotation,
)
from shared.roster.solving import SolveControl
from tests.csolver_helpers import random_problem, random_roster

PROPERTY = settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def problems(draw: st.DrawFn, max_days: int = 21, max_employees: int = 5) -> Problem:
    seed = draw(st.integers(0, 2**32 - 1))
    e = draw(st.integers(1, max_employees))
    d = draw(st.integers(1, max_days))
    s = draw(st.integers(1, 3))
    return random_problem(np.random.default_rng(seed), e, d, s, draw(st.integers(0, 6)))


def greedy(p: Problem, seed: int = 0) -> Greedy:
    return Greedy(p, seed, SolveControl(), time_limit=60.0)


@PROPERTY
@given(problems(), st.integers(0, 2**32 - 1), st.floats(0.0, 0.9))
def test_row_rules_count_what_the_evaluator_counts(p: Problem, seed: int, off: float) -> None:
    roster = random_roster(p, np.random.default_rng(seed), off_share=off)
    ev = evaluate(p, roster)
    per_employee: Counter[tuple[str, str | None]] = Counter()
    for rule in ev.rules:
        for m in rule.matches:
            per_employee[rule.rule, m.employee] += m.hard_violations
    rows = roster.tolist()
    for name, _ in ROW_RULES:
        for e, row in enumerate(rows):
            got = row_breaks(RowRules.of(p, e), row)[name]
            assert got == per_employee[name, p.employee_ids[e]], (name, e, row)
    hard = sum(sum(row_breaks(RowRules.of(p, e), row).values()) for e, row in enumerate(rows))
    assert hard == ev.hard_violations


@PROPERTY
@given(problems(), st.integers(0, 2**32 - 1), st.data())
def test_one_cell_check_agrees_with_the_row_rules(
    p: Problem, seed: int, data: st.DataObject
) -> None:
    g = greedy(p, seed)
    g.construct()
    feasible = [e for e in range(p.n_employees) if row_feasible(g.rules[e], g.roster[e])]
    for e in feasible:
        assert g.hard[e] == 0
        for _ in range(6):
            d = data.draw(st.integers(0, p.n_days - 1))
            v = data.draw(st.integers(OFF, p.n_shifts - 1))
            row = list(g.roster[e])
            row[d] = v
            assert g.cell_ok(e, d, v) == row_feasible(g.rules[e], row), (e, d, v)


@PROPERTY
@given(problems(), st.integers(0, 2**32 - 1))
def test_planned_rows_keep_every_rule_and_the_tallies_follow(p: Problem, seed: int) -> None:
    g = greedy(p, seed)
    g.construct()
    g.improve()
    rows = g.roster
    for e, row in enumerate(rows):
        assert g.hard[e] == sum(row_breaks(g.rules[e], row).values())
    ev = evaluate(p, g.roster_array())
    assert (sum(g.hard), g.penalty) == (ev.hard_violations, ev.penalty)


def machine_rows(p: Problem, e: int) -> set[tuple[int, int]]:
    """(worked weekends, minutes) of every row of employee e that keeps the rules the machine
    encodes, as the evaluator reads them. Brute force, so only for tiny problems."""
    r = RowRules.of(p, e)
    values = [OFF, *(s for s in range(p.n_shifts) if r.max_shifts[s] > 0)]
    rules = [shift_rotation, max_consecutive_shifts, min_consecutive_shifts,
             min_consecutive_days_off, days_off]
    out: set[tuple[int, int]] = set()
    for row in itertools.product(values, repeat=p.n_days):
        cells = list(row)
        if not any(rule(r, cells) for rule in rules):
            weekends = len({w for w, s in zip(r.weekend, cells, strict=True) if w >= 0 and s >= 0})
            out.add((weekends, sum(r.length[s] for s in cells if s >= 0)))
    return out


def machine_accepts(m: Machine, free: list[bool], row: list[int]) -> bool:
    """Whether the row is a path through the machine, read as the walk reads it."""
    st = 0
    for d, v in enumerate(row):
        if v == OFF:
            k = m.short[st]
            if k and k != d:
                return False
            st = m.off_next[st]
            continue
        moves = [dst for g, dst in m.moves[st] if v in m.groups[g]] if free[d] else []
        if not moves:
            return False
        st = moves[0]
    return True


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_days=7, max_employees=1))
def test_the_machine_accepts_exactly_the_rows_the_rules_allow(p: Problem) -> None:
    g = greedy(p)
    pl, r = g.planner(0), g.rules[0]
    values = [OFF, *(s for s in range(p.n_shifts) if r.max_shifts[s] > 0)]
    rules = [shift_rotation, max_consecutive_shifts, min_consecutive_shifts,
             min_consecutive_days_off, days_off]
    for cells in itertools.product(values, repeat=p.n_days):
        row = list(cells)
        allowed = not any(rule(r, row) for rule in rules)
        assert machine_accepts(pl.m, pl.fixed_free, row) == allowed, row


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_days=7, max_employees=1), st.booleans())
def test_reach_holds_exactly_the_totals_the_rules_allow(p: Problem, weekends: bool) -> None:
    g = greedy(p)
    pl = g.planner(0)
    rows = {(w, t // g.unit) for w, t in machine_rows(p, 0) if t // g.unit <= pl.max_u}
    if weekends:  # bit w * stride + b: b work units on w worked weekends
        rs = reach(pl.m, pl.fixed_free, pl.full_tracked, pl.weekend_shift)
        got = {
            (w, b)
            for w in range(pl.limit_w + 1)
            for b in range(pl.stride)
            if rs[0][0] >> (w * pl.stride + b) & 1
        }
        assert got == {(w, b) for w, b in rows if w <= pl.limit_w}
    else:
        rs = reach(pl.m, pl.fixed_free, pl.full_untracked)
        got = {(0, b) for b in range(pl.max_u + 1) if rs[0][0] >> b & 1}
        assert got == {(0, b) for _, b in rows}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(max_days=7, max_employees=1), st.integers(0, 2**32 - 1), st.sampled_from([1, 8]))
def test_planner_finds_a_row_exactly_when_one_exists(p: Problem, seed: int, width: int) -> None:
    # The per-type maxima are kept by the walk, not the reach: here every type is either
    # barred or free, so the planner is exact.
    p.lists.max_shifts = [[0 if m == 0 else p.n_days for m in row] for row in p.lists.max_shifts]
    g = greedy(p, seed)
    r = g.rules[0]
    values = [OFF, *(s for s in range(p.n_shifts) if r.max_shifts[s] > 0)]
    exists = any(row_feasible(r, list(row)) for row in itertools.product(values, repeat=p.n_days))
    rng = np.random.default_rng(seed)
    cost = rng.normal(0, 50, size=(p.n_days, p.n_shifts))
    off = rng.normal(0, 10, size=p.n_days)
    row = g.planner(0).plan(cost, off, rng.random(p.n_weekends), width)
    assert (row is not None) == exists
    assert row is None or row_feasible(r, row)


@PROPERTY
@given(problems(max_days=60, max_employees=40), st.integers(0, 2**32 - 1))
def test_bulk_rows_are_what_they_claim(p: Problem, seed: int) -> None:
    g = greedy(p, seed)
    g.bulk(list(range(p.n_employees)))
    for e, row in enumerate(g.roster):
        assert g.hard[e] == sum(row_breaks(g.rules[e], row).values()), e
    ev = evaluate(p, g.roster_array())
    assert (sum(g.hard), g.penalty) == (ev.hard_violations, ev.penalty)
