"""The evaluator: fixtures of the benchmark reproduced exactly, each hard rule caught."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.roster.compiled import I32, Problem, compile_request
from shared.roster.curtois import bench_dir, load_curtois, roster_from_tsv
from shared.roster.evaluator import evaluate
from tests.requests import request

FIXTURES = sorted((bench_dir() / "solutions").glob("Instance*_obj*.tsv"))


def grid(problem: Problem, *rows: str) -> I32:
    """Rows of one character per day: '.' off, else the shift id."""
    return problem.encode([[None if c == "." else c for c in row] for row in rows])


def rules_hit(problem: Problem, roster: I32) -> dict[str, int]:
    ev = evaluate(problem, roster)
    return {r.rule: r.hard_violations for r in ev.rules if r.hard_violations}


def one_employee(**employee: Any) -> Problem:
    emp = {"id": "A", **employee}
    return compile_request(request(employees=[emp], cover=[]))


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.stem)
def test_reproduces_published_objective(fixture: Path) -> None:
    instance, objective = re.match(r"(Instance\d+)_obj(\d+)", fixture.stem).groups()  # type: ignore[union-attr]
    problem = compile_request(load_curtois(bench_dir() / f"{instance}.txt"))
    roster = roster_from_tsv(fixture.read_text(), problem)
    ev = evaluate(problem, roster)
    assert ev.hard_violations == 0
    assert ev.penalty == int(objective)


def test_fixture_count() -> None:
    assert len(FIXTURES) == 10


# ---------------------------------------------------------------- one test per hard rule


def test_shift_rotation() -> None:
    p = one_employee()
    assert rules_hit(p, grid(p, "NE............")) == {"shift_rotation": 1}
    assert rules_hit(p, grid(p, "EN............")) == {}
    # nothing is checked across the horizon edge
    assert rules_hit(p, grid(p, ".............N")) == {}


def test_rest_derived_rotation() -> None:
    # N ends 08:00; an E starting 07:00 next day leaves -60 min rest
    req = request(
        min_rest_minutes=11 * 60,
        shift_types=[
            {"id": "E", "start": "07:00", "length_minutes": 480},
            {"id": "L", "start": "15:00", "length_minutes": 480},
        ],
        employees=[{"id": "A"}],
        cover=[],
    )
    p = compile_request(req)
    # L ends 23:00, E next day at 07:00 = 8 h rest < 11 h
    assert rules_hit(p, grid(p, "LE............")) == {"shift_rotation": 1}
    assert rules_hit(p, grid(p, "EL............")) == {}


def test_max_shifts_per_type_and_skills() -> None:
    p = one_employee(max_shifts={"E": 2})
    assert rules_hit(p, grid(p, "EE............")) == {}
    assert rules_hit(p, grid(p, "EEE...........")) == {"max_shifts_per_type": 1}
    skilled = request(
        shift_types=[{"id": "E", "length_minutes": 480, "required_skills": ["icu"]}],
        employees=[{"id": "A", "skills": ["nurse"]}, {"id": "B", "skills": ["icu", "nurse"]}],
        cover=[],
    )
    p = compile_request(skilled)
    assert rules_hit(p, grid(p, "E.............", "E.............")) == {"max_shifts_per_type": 1}


def test_total_minutes_bounds() -> None:
    p = one_employee(min_minutes=960, max_minutes=1440)
    assert rules_hit(p, grid(p, "EE............")) == {}
    assert rules_hit(p, grid(p, "E.............")) == {"min_total_minutes": 1}
    assert rules_hit(p, grid(p, "EEEE..........")) == {"max_total_minutes": 1}


def test_max_consecutive_shifts_counts_runs_inside_horizon() -> None:
    p = one_employee(max_consecutive_shifts=3)
    assert rules_hit(p, grid(p, "EEE.EEE.......")) == {}
    assert rules_hit(p, grid(p, "EEEE..........")) == {"max_consecutive_shifts": 1}
    assert rules_hit(p, grid(p, "..........EEEE")) == {"max_consecutive_shifts": 1}
    assert rules_hit(p, grid(p, "EEEE.....EEEEE")) == {"max_consecutive_shifts": 2}


def test_min_consecutive_shifts_exempts_edge_runs() -> None:
    p = one_employee(min_consecutive_shifts=2)
    assert rules_hit(p, grid(p, "E............E")) == {}  # both runs touch an edge
    assert rules_hit(p, grid(p, "...E..........")) == {"min_consecutive_shifts": 1}
    assert rules_hit(p, grid(p, "...EE.........")) == {}
    assert rules_hit(p, grid(p, ".E.E.E........")) == {"min_consecutive_shifts": 3}


def test_min_consecutive_days_off_exempts_edge_runs() -> None:
    p = one_employee(min_consecutive_days_off=2)
    assert rules_hit(p, grid(p, ".EEEEEEEEEEEE.")) == {}  # off runs on both edges
    assert rules_hit(p, grid(p, "EEE.EEEEEEEEEE")) == {"min_consecutive_days_off": 1}
    assert rules_hit(p, grid(p, "EEE..EEEEEEEEE")) == {}


def test_max_weekends_saturday_or_sunday() -> None:
    # 2024-01-01 is a Monday: weekends are days 5-6 and 12-13
    p = one_employee(max_weekends=1)
    assert rules_hit(p, grid(p, ".....E.......E")) == {"max_weekends": 1}
    assert rules_hit(p, grid(p, ".....EE.......")) == {}
    assert rules_hit(p, grid(p, "......E.....E.")) == {"max_weekends": 1}
    assert rules_hit(p, grid(p, "EEEEE..EEEEE..")) == {}


def test_weekends_follow_the_start_date() -> None:
    # a Sunday start: day 0 is a one-day weekend, then days 6-7, then day 13
    req = request(
        horizon={"start_date": "2024-01-07", "days": 14},
        employees=[{"id": "A", "max_weekends": 2}],
        cover=[],
    )
    p = compile_request(req)
    assert p.n_weekends == 3
    assert p.weekend.tolist() == [0, -1, -1, -1, -1, -1, 1, 1, -1, -1, -1, -1, -1, 2]
    assert rules_hit(p, grid(p, "E.....E......E")) == {"max_weekends": 1}


def test_days_off() -> None:
    p = one_employee(days_off=[3])
    assert rules_hit(p, grid(p, "...E..........")) == {"days_off": 1}
    assert rules_hit(p, grid(p, "..E.E.........")) == {}


# ---------------------------------------------------------------- soft rules


def test_requests_and_cover_penalties() -> None:
    p = compile_request(
        request(
            employees=[
                {
                    "id": "A",
                    "shift_on_requests": [{"day": 0, "shift": "E", "weight": 3}],
                    "shift_off_requests": [{"day": 1, "shift": "N", "weight": 2}],
                },
                {"id": "B"},
            ],
            cover=[{"day": 0, "shift": "E", "required": 1, "under_weight": 100, "over_weight": 5}],
        )
    )
    ev = evaluate(p, grid(p, "NN............", ".............."))
    by = {r.rule: r.penalty for r in ev.rules}
    assert by["shift_on_requests"] == 3  # another shift pays like a day off
    assert by["shift_off_requests"] == 2
    assert by["cover_under"] == 100
    ev = evaluate(p, grid(p, "E.............", "E............."))
    by = {r.rule: r.penalty for r in ev.rules}
    assert by["shift_on_requests"] == 0 and by["cover_over"] == 5 and by["cover_under"] == 0


def test_roster_shape_checked() -> None:
    p = one_employee()
    with pytest.raises(ValueError, match="shape"):
        evaluate(p, np.zeros((2, 14), dtype=np.int32))
    with pytest.raises(ValueError, match="shift index"):
        evaluate(p, np.full((1, 14), 7, dtype=np.int32))


# ---------------------------------------------------------------- properties

INSTANCE3 = compile_request(load_curtois(bench_dir() / "Instance3.txt"))


def naive_objective(p: Problem, roster: I32) -> int:
    """bench/curtois/FORMAT.md's objective written as plainly as possible, an independent
    reference."""
    total = 0
    for e in range(p.n_employees):
        for d in range(p.n_days):
            cell = e * p.n_days + d
            for k in range(p.on_ptr[cell], p.on_ptr[cell + 1]):
                total += p.on_weight[k] * (roster[e, d] != p.on_shift[k])
            for k in range(p.off_ptr[cell], p.off_ptr[cell + 1]):
                total += p.off_weight[k] * (roster[e, d] == p.off_shift[k])
    for d in range(p.n_days):
        for s in range(p.n_shifts):
            z = int((roster[:, d] == s).sum())
            total += p.cover_under[d, s] * max(0, p.cover_req[d, s] - z)
            total += p.cover_over[d, s] * max(0, z - p.cover_req[d, s])
    return int(total)


rosters = st.builds(
    lambda seed: np.random.default_rng(seed)
    .integers(-1, INSTANCE3.n_shifts, size=(INSTANCE3.n_employees, INSTANCE3.n_days))
    .astype(np.int32),
    st.integers(0, 2**32 - 1),
)


@settings(max_examples=60, deadline=None)
@given(roster=rosters)
def test_penalty_equals_reference_objective(roster: I32) -> None:
    assert evaluate(INSTANCE3, roster).penalty == naive_objective(INSTANCE3, roster)


@settings(max_examples=60, deadline=None)
@given(
    roster=rosters,
    e=st.integers(0, INSTANCE3.n_employees - 1),
    d=st.integers(0, INSTANCE3.n_days - 1),
    value=st.integers(-1, INSTANCE3.n_shifts - 1),
)
def test_one_move_changes_score_by_the_changed_matches(
    roster: I32, e: int, d: int, value: int
) -> None:
    """Moving one assignment changes the score by exactly the matches that appear or vanish,
    and every such match concerns that employee or that day."""
    before = evaluate(INSTANCE3, roster)
    moved = roster.copy()
    moved[e, d] = value
    after = evaluate(INSTANCE3, moved)

    def key(m: Any) -> tuple[Any, ...]:
        return (m.rule, m.employee, tuple(m.days), m.shift, m.hard_violations, m.penalty)

    old = {key(m) for m in before.matches}
    new = {key(m) for m in after.matches}
    gone, came = old - new, new - old
    assert after.penalty - before.penalty == sum(k[5] for k in came) - sum(k[5] for k in gone)
    assert after.hard_violations - before.hard_violations == sum(k[4] for k in came) - sum(
        k[4] for k in gone
    )
    employee = INSTANCE3.employee_ids[e]
    for k in gone | came:
        assert k[1] == employee or d in k[2]
    for rule in after.rules:
        assert rule.hard_violations == sum(m.hard_violations for m in rule.matches)
        assert rule.penalty == sum(m.penalty for m in rule.matches)


def test_roster_of_another_integer_type_is_scored_the_same() -> None:
    roster = np.random.default_rng(3).integers(
        -1, INSTANCE3.n_shifts, size=(INSTANCE3.n_employees, INSTANCE3.n_days)
    )
    as_int32 = evaluate(INSTANCE3, roster.astype(np.int32))
    assert evaluate(INSTANCE3, roster.astype(np.int64)) == as_int32
    assert evaluate(INSTANCE3, roster.astype(np.int32).tolist()) == as_int32  # type: ignore[arg-type]


def test_unvalidated_result_is_what_validation_gives() -> None:
    # The result models are built without validation (`trusted`): a validated copy must be the
    # same models and the same JSON, byte for byte (field order follows the instance dicts).
    from shared.roster.evaluator import build_result
    from shared.roster.model import SolveResult

    problem = compile_request(load_curtois(bench_dir() / "Instance3.txt"))
    rng = np.random.default_rng(5)
    for _ in range(3):
        roster = rng.integers(-1, problem.n_shifts, size=(problem.n_employees, problem.n_days))
        result = build_result(problem, roster.astype(np.int32))
        assert result.breakdown and result.uncovered and result.score.hard_violations
        copy = SolveResult.model_validate(result.model_dump())
        assert copy == result
        assert copy.model_dump_json() == result.model_dump_json()


def test_arrays_built_from_the_lists() -> None:
    # `compile_request` keeps lists only; each array appears on first access, as the C solver
    # takes it, and a copy through `dataclasses.replace` is an ordinary array-built problem.
    import dataclasses

    problem = compile_request(load_curtois(bench_dir() / "Instance2.txt"))
    e, d, s = problem.n_employees, problem.n_days, problem.n_shifts
    assert problem.forbidden.dtype == np.uint8 and problem.forbidden.shape == (s, s)
    assert problem.day_off.dtype == np.uint8 and problem.day_off.shape == (e, d)
    assert problem.max_shifts.dtype == np.int32 and problem.max_shifts.shape == (e, s)
    assert problem.cover_req.shape == (d, s) and problem.on_ptr.shape == (e * d + 1,)
    copy = dataclasses.replace(problem)
    assert copy.n_days == d
    for name, value in vars(copy.lists).items():
        assert value == getattr(problem.lists, name), name
    no_cover = compile_request(request(cover=[]))
    assert no_cover.cover_req.shape == (no_cover.n_days, no_cover.n_shifts)
    assert no_cover.on_shift.shape == (0,) and no_cover.on_shift.dtype == np.int32
