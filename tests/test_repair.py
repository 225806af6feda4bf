"""Re-rostering (docs/decisions/0017): pins kept, the past frozen, contradictions refused with
a message naming them, and each changed cell counted and priced, by both solvers."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from shared.errors import InvalidRequest
from shared.roster.compiled import compile_request
from shared.roster.curtois import bench_dir, load_curtois
from shared.roster.evaluator import build_result, evaluate
from shared.roster.model import (
    DEFAULT_CHANGE_WEIGHT,
    EmployeeRoster,
    Implementation,
    SolveRequest,
    SolveResult,
)
from shared.roster.parse import parse_request
from shared.roster.repair import Absence, repair_request
from shared.solving.dispatch import solve_request
from tests.requests import request, tiny_request

SOLVERS = [Implementation.GREEDY, Implementation.GENERETIC]
PREVIOUS = [
    {"employee": "A", "shifts": ["E"] * 5 + [None] * 2 + ["E"] * 5 + [None] * 2},
    {"employee": "B", "shifts": ["N"] * 5 + [None] * 2 + ["N"] * 5 + [None] * 2},
]


def refused(**overrides: Any) -> str:
    """The message a request with these fields is refused with, as the services see it."""
    with pytest.raises(InvalidRequest) as err:
        parse_request(_json(overrides))
    return str(err.value)


def _json(overrides: dict[str, Any]) -> str:
    return json.dumps(tiny_request(**overrides))


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"pinned": [{"employee": "Z", "day": 1, "shift": "E"}]},
         "pinned[0]: unknown employee 'Z'"),
        ({"pinned": [{"employee": "A", "day": 1, "shift": "X"}]},
         "pinned[0]: unknown shift type 'X'"),
        ({"pinned": [{"employee": "A", "day": 14, "shift": "E"}]},
         "pinned[0]: day 14 is outside the horizon of 14 days"),
        ({"pinned": [{"employee": "A", "day": 1, "shift": "E"},
                     {"employee": "A", "day": 1, "shift": None}]},
         "pinned[1]: employee 'A' day 1 is already pinned by pinned[0]"),
        ({"employees": [{"id": "A", "days_off": [3]}, {"id": "B"}],
          "pinned": [{"employee": "A", "day": 3, "shift": "E"}]},
         "pinned[0]: pins employee 'A' to shift 'E' on day 3, one of the employee's days_off"),
        ({"employees": [{"id": "A", "max_shifts": {"N": 0}}, {"id": "B"}],
          "pinned": [{"employee": "A", "day": 3, "shift": "N"}]},
         "pinned[0]: pins employee 'A' to shift 'N' on day 3, a type the employee may never "
         "work (has max_shifts 0 for it)"),
        ({"shift_types": [{"id": "E", "length_minutes": 480, "required_skills": ["nurse"]},
                          {"id": "N", "length_minutes": 600}],
          "cover": [],
          "pinned": [{"employee": "B", "day": 0, "shift": "E"}]},
         "a type the employee may never work (lacks skill 'nurse')"),
        ({"freeze_before_day": 3}, "freeze_before_day needs a previous roster to freeze"),
        ({"previous": PREVIOUS, "freeze_before_day": 15},
         "freeze_before_day: day 15 is past the horizon of 14 days"),
        ({"previous": PREVIOUS, "freeze_before_day": 3,
          "pinned": [{"employee": "A", "day": 1, "shift": "N"}]},
         "pinned[0]: contradicts freeze_before_day 3, which keeps employee 'A' on E on day 1"),
        ({"previous": PREVIOUS, "freeze_before_day": 3,
          "employees": [{"id": "A", "days_off": [2]}, {"id": "B"}]},
         "freeze_before_day 3: pins employee 'A' to shift 'E' on day 2, one of the "
         "employee's days_off"),
        ({"previous": [{"employee": "Z", "shifts": [None] * 14}]},
         "previous[0] ('Z'): unknown employee 'Z'"),
        ({"previous": [{"employee": "A", "shifts": [None] * 13}]},
         "previous[0] ('A'): 13 days, the horizon has 14"),
        ({"previous": [{"employee": "A", "shifts": ["X"] + [None] * 13}]},
         "previous[0] ('A').shifts[0]: unknown shift type 'X'"),
    ],
)
def test_contradicting_pins_are_refused_naming_them(overrides: dict[str, Any],
                                                    expected: str) -> None:
    assert expected in refused(**overrides)


def test_changes_rule_lists_each_changed_cell_and_the_result_counts_them() -> None:
    req = request(previous=PREVIOUS)
    p = compile_request(req)
    roster = p.encode([row["shifts"] for row in PREVIOUS])  # type: ignore[misc]
    assert build_result(p, roster).changes == 0
    roster[0, 0] = -1  # E -> off
    roster[1, 5] = 1  # off -> N
    roster[1, 6] = 0  # off -> E
    result = build_result(p, roster)
    assert result.changes == 3
    rule = next(r for r in result.breakdown if r.rule == "changes")
    assert not rule.hard and rule.penalty == 3 * DEFAULT_CHANGE_WEIGHT
    assert [(m.employee, m.days) for m in rule.matches] == [("A", [0]), ("B", [5]), ("B", [6])]
    assert rule.matches[0].message == "day 0: E before, a day off now"
    assert build_result(compile_request(request()), roster).changes is None


def test_change_weight_prices_each_change_and_zero_still_counts() -> None:
    p = compile_request(request(previous=PREVIOUS, change_weight=0))
    roster = p.empty_roster()
    result = build_result(p, roster)
    assert result.changes == 20  # the days A and B worked
    assert next(r for r in result.breakdown if r.rule == "changes").penalty == 0
    p7 = compile_request(request(previous=PREVIOUS, change_weight=7))
    assert evaluate(p7, roster).by_rule()["changes"].penalty == 140


def test_a_broken_pin_is_a_hard_violation_naming_the_cell() -> None:
    p = compile_request(request(pinned=[{"employee": "B", "day": 4, "shift": None},
                                        {"employee": "A", "day": 2, "shift": "N"}]))
    roster = p.empty_roster()
    roster[1, 4] = 0
    rule = evaluate(p, roster).by_rule()["pinned"]
    assert rule.hard and rule.hard_violations == 2
    assert {m.message for m in rule.matches} == {
        "day 2 is pinned to N, has a day off", "day 4 is pinned to a day off, has E"}


@cache
def solved(instance: int, impl: Implementation) -> tuple[SolveRequest, SolveResult]:
    req = load_curtois(bench_dir() / f"Instance{instance}.txt")
    return req, solve_request(req, implementation=impl, time_limit=1.0)


def repaired(impl: Implementation, **kw: Any) -> tuple[SolveRequest, SolveResult, SolveResult]:
    req, before = solved(1, impl)
    absent = [Absence(req.employees[0].id, 5, 7), Absence(req.employees[3].id, 6, 8)]
    rep = repair_request(req, before.assignments, absent, freeze_before_day=5, **kw)
    return rep, before, solve_request(rep, implementation=impl, time_limit=1.0)


def grid(result: SolveResult) -> list[list[str | None]]:
    return [a.shifts for a in result.assignments]


@pytest.mark.parametrize("impl", SOLVERS)
def test_repair_freezes_the_past_honours_absences_and_counts_changes(
        impl: Implementation) -> None:
    rep, before, after = repaired(impl)
    assert after.feasible
    old, new = grid(before), grid(after)
    assert [row[:5] for row in new] == [row[:5] for row in old]  # the frozen past
    for e, days in ((0, range(5, 8)), (3, range(6, 9))):
        assert all(new[e][d] is None for d in days)  # the absences
    changed = sum(a != b for ra, rb in zip(old, new, strict=True)
                  for a, b in zip(ra, rb, strict=True))
    assert after.changes == changed
    rule = next(r for r in after.breakdown if r.rule == "changes")
    assert len(rule.matches) == changed and rule.penalty == changed * rep.change_weight
    # the absent shifts had to move, but far from the whole roster did
    assert 0 < changed <= 30


@pytest.mark.parametrize("impl", SOLVERS)
def test_pins_are_kept_even_where_they_break_other_rules(impl: Implementation) -> None:
    """Pinning A to work all 14 days breaks A's maximum run of 5: the roster keeps every pin
    and its breakdown says which rule broke."""
    req = request(
        employees=[{"id": "A", "max_consecutive_shifts": 5}, {"id": "B"}],
        pinned=[{"employee": "A", "day": d, "shift": "E"} for d in range(14)]
        + [{"employee": "B", "day": 3, "shift": None}],
    )
    result = solve_request(req, implementation=impl, time_limit=0.5)
    assert result.assignments[0].shifts == ["E"] * 14
    assert result.assignments[1].shifts[3] is None
    assert not result.feasible
    hit = {r.rule for r in result.breakdown if r.hard_violations}
    assert hit == {"max_consecutive_shifts"}


@pytest.mark.parametrize("impl", SOLVERS)
def test_pins_are_kept_on_a_benchmark_instance(impl: Implementation) -> None:
    req, _ = solved(1, impl)
    emps = [e.id for e in req.employees]
    pins = [{"employee": emps[e], "day": d, "shift": s}
            for e, d, s in ((0, 0, None), (1, 3, "D"), (2, 10, None), (5, 11, "D"))]
    result = solve_request(request_with(req, pinned=pins), implementation=impl,
                           time_limit=1.0)
    rows = {a.employee: a.shifts for a in result.assignments}
    assert all(rows[p["employee"]][p["day"]] == p["shift"] for p in pins)
    assert next(r for r in result.breakdown if r.rule == "pinned").hard_violations == 0


def request_with(req: SolveRequest, **fields: Any) -> SolveRequest:
    return SolveRequest.model_validate({**req.model_dump(mode="json"), **fields})


@pytest.mark.parametrize("impl", SOLVERS)
def test_without_absences_a_repair_keeps_a_good_previous_roster(impl: Implementation) -> None:
    req, before = solved(1, impl)
    result = solve_request(request_with(req, previous=[a.model_dump() for a in
                                                       before.assignments]),
                           implementation=impl, time_limit=1.0)
    # the previous roster itself costs no change: nothing worse than it comes back
    assert result.feasible
    assert result.score.penalty <= before.score.penalty


@pytest.mark.parametrize(
    ("text", "expected"),
    [("A:10-12", Absence("A", 10, 12)), ("A:3", Absence("A", 3, 3)),
     ("ward:x:1-2", Absence("ward:x", 1, 2))],
)
def test_absences_parse(text: str, expected: Absence) -> None:
    assert Absence.parse(text) == expected


@pytest.mark.parametrize(
    ("absent", "freeze", "expected"),
    [(["A:10-1"], None, "day 1 is before day 10"), (["A"], None, "expected EMPLOYEE:DAY-DAY"),
     (["Z:1-2"], None, "unknown employee 'Z'"),
     (["A:12-14"], None, "day 14 is outside the horizon of 14 days"),
     (["A:2-4"], 3, "day 2 is before the frozen day 3")],
)
def test_absences_that_cannot_be_honoured_are_refused(absent: list[str], freeze: int | None,
                                                      expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        repair_request(request(), [EmployeeRoster.model_validate(p) for p in PREVIOUS],
                       [Absence.parse(a) for a in absent], freeze)


def test_an_absence_counts_toward_the_minimum_minutes() -> None:
    """Sick leave is paid time: the shifts an absence takes away lower the employee's minimum,
    so the lost minutes need not be made up in the days left."""
    req = request(employees=[{"id": "A", "min_minutes": 4000}, {"id": "B"}])
    rep = repair_request(req, [EmployeeRoster.model_validate(p) for p in PREVIOUS],
                         [Absence("A", 3, 5)])
    assert rep.employees[0].min_minutes == 4000 - 2 * 480  # E on days 3 and 4, off on 5
    assert {3, 4, 5} <= set(rep.employees[0].days_off)
    assert rep.employees[1].min_minutes == 0
