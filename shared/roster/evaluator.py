"""Scoring a roster: every rule's matches summed into a score that explains each point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shared.roster.compiled import I32, Problem
from shared.roster.model import (
    ConstraintMatch,
    EmployeeRoster,
    EmployeeScore,
    RuleScore,
    Score,
    SolveResult,
    SolverStats,
    Uncovered,
)
from shared.roster.rules import RULES, cover_counts, total_minutes


@dataclass(frozen=True)
class Evaluation:
    rules: tuple[RuleScore, ...]

    @property
    def hard_violations(self) -> int:
        return sum(r.hard_violations for r in self.rules)

    @property
    def penalty(self) -> int:
        return sum(r.penalty for r in self.rules)

    @property
    def feasible(self) -> bool:
        return self.hard_violations == 0

    @property
    def score(self) -> Score:
        return Score(hard_violations=self.hard_violations, penalty=self.penalty)

    @property
    def matches(self) -> list[ConstraintMatch]:
        return [m for r in self.rules for m in r.matches]

    def by_rule(self) -> dict[str, RuleScore]:
        return {r.rule: r for r in self.rules}


def check_roster(problem: Problem, roster: I32) -> I32:
    """The roster as int32 [E, D] with every value a shift index or -1, else ValueError."""
    arr = np.asarray(roster)
    want = (problem.n_employees, problem.n_days)
    if arr.shape != want:
        raise ValueError(f"roster has shape {arr.shape}, expected {want} (employees, days)")
    if arr.size and (arr.min() < -1 or arr.max() >= problem.n_shifts):
        raise ValueError(
            f"roster values must be -1 (day off) or a shift index below {problem.n_shifts}"
        )
    return np.ascontiguousarray(arr, dtype=np.int32)


def evaluate(problem: Problem, roster: I32) -> Evaluation:
    roster = check_roster(problem, roster)
    scores = []
    for rule in RULES:
        matches = rule.check(problem, roster)
        scores.append(
            RuleScore(
                rule=rule.name,
                hard=rule.hard,
                hard_violations=sum(m.hard_violations for m in matches),
                penalty=sum(m.penalty for m in matches),
                matches=matches,
            )
        )
    return Evaluation(tuple(scores))


def build_result(
    problem: Problem, roster: I32, stats: SolverStats | None = None
) -> SolveResult:
    roster = check_roster(problem, roster)
    ev = evaluate(problem, roster)
    per_employee: dict[str, list[int]] = {e: [0, 0] for e in problem.employee_ids}
    for m in ev.matches:
        if m.employee is not None:
            per_employee[m.employee][0] += m.hard_violations
            per_employee[m.employee][1] += m.penalty
    minutes = total_minutes(problem, roster)
    shifts = (roster >= 0).sum(axis=1)
    z = cover_counts(problem, roster)
    short = np.argwhere(z < problem.cover_req)
    return SolveResult(
        assignments=[
            EmployeeRoster(employee=e, shifts=row)
            for e, row in zip(problem.employee_ids, problem.decode(roster), strict=True)
        ],
        score=ev.score,
        feasible=ev.feasible,
        breakdown=list(ev.rules),
        employees=[
            EmployeeScore(
                employee=e,
                hard_violations=hv,
                penalty=pen,
                minutes=int(minutes[i]),
                shifts=int(shifts[i]),
            )
            for i, (e, (hv, pen)) in enumerate(per_employee.items())
        ],
        uncovered=[
            Uncovered(
                day=int(d),
                shift=problem.shift_ids[s],
                required=int(problem.cover_req[d, s]),
                assigned=int(z[d, s]),
            )
            for d, s in short.tolist()
        ],
        stats=stats,
    )
