"""Scoring a roster: every rule's matches summed into a score that explains each point."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

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
    trusted,
)
from shared.roster.rules import RULES, Rows, Tallied, cover_counts, total_minutes


@dataclass(frozen=True)
class Evaluation:
    rules: tuple[RuleScore, ...]
    # The rows scored, with the tallies the rules computed, for `build_result` to reuse.
    rows: Tallied | None = field(default=None, compare=False, repr=False)

    # Cached: the totals are read several times per solve (progress, stats, the result).
    @cached_property
    def hard_violations(self) -> int:
        return sum(r.hard_violations for r in self.rules)

    @cached_property
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


def checked_rows(problem: Problem, roster: I32) -> Rows:
    """`check_roster` as nested lists, which is what the rules read."""
    if isinstance(roster, np.ndarray) and roster.dtype == np.int32 and roster.ndim == 2:
        # Checked on the lists: two numpy reductions cost more than a tiny roster's scan.
        want = (problem.n_employees, problem.n_days)
        if roster.shape != want:
            raise ValueError(f"roster has shape {roster.shape}, expected {want} (employees, days)")
        rows: Rows = roster.tolist()
        if roster.size and (
            min(map(min, rows)) < -1 or max(map(max, rows)) >= problem.n_shifts
        ):
            raise ValueError(
                f"roster values must be -1 (day off) or a shift index below {problem.n_shifts}"
            )
        return rows
    return check_roster(problem, roster).tolist()  # type: ignore[no-any-return]


def evaluate(problem: Problem, roster: I32) -> Evaluation:
    return evaluate_rows(problem, checked_rows(problem, roster))


def evaluate_rows(problem: Problem, rows: Rows) -> Evaluation:
    """`evaluate` of a roster given as lists that are known to pass `checked_rows`."""
    if not isinstance(rows, Tallied):
        rows = Tallied(rows)
    scores = []
    for rule in RULES:
        matches = rule.check(problem, rows)
        hard_violations = penalty = 0
        for m in matches:
            hard_violations += m.hard_violations
            penalty += m.penalty
        scores.append(
            trusted(
                RuleScore,
                {
                    "rule": rule.name,
                    "hard": rule.hard,
                    "hard_violations": hard_violations,
                    "penalty": penalty,
                    "matches": matches,
                }
            )
        )
    return Evaluation(tuple(scores), rows)


def build_result(
    problem: Problem,
    roster: I32,
    stats: SolverStats | None = None,
    *,
    evaluation: Evaluation | None = None,
) -> SolveResult:
    """The scored result; `evaluation`, when given, must be `evaluate(problem, roster)` (a
    solver that already scored its roster passes it on rather than have it scored again)."""
    if evaluation is not None and evaluation.rows is not None:
        # The rows `evaluation` scored are the roster's (the contract above), already checked.
        ev, rows = evaluation, evaluation.rows
    else:
        rows = Tallied(checked_rows(problem, roster))
        ev = evaluation if evaluation is not None else evaluate_rows(problem, rows)
    per_employee: dict[str, list[int]] = {e: [0, 0] for e in problem.employee_ids}
    for r in ev.rules:
        for m in r.matches:
            if m.employee is not None:
                per_employee[m.employee][0] += m.hard_violations
                per_employee[m.employee][1] += m.penalty
    minutes = total_minutes(problem, rows)
    shifts = [len(row) - row.count(-1) for row in rows]
    z = cover_counts(problem, rows)
    required = problem.lists.cover_req
    # Cover exactly as required (the usual case) leaves nothing to list, compared in one go.
    short = (
        []
        if z == required
        else [
            (d, s)
            for d, (zd, rd) in enumerate(zip(z, required, strict=True))
            for s in range(problem.n_shifts)
            if zd[s] < rd[s]
        ]
    )
    ids = problem.shift_ids
    # Built without validation (`trusted`): every value is the evaluator's or the validated
    # request's; `stats` is the caller's model, which is what validation would keep too.
    return trusted(
        SolveResult,
        {
            "version": 1,
            "assignments": [
                trusted(
                    EmployeeRoster,
                    {"employee": e, "shifts": [None if s < 0 else ids[s] for s in row]},
                )
                for e, row in zip(problem.employee_ids, rows, strict=True)
            ],
            "score": trusted(
                Score, {"hard_violations": ev.hard_violations, "penalty": ev.penalty}
            ),
            "feasible": ev.feasible,
            "breakdown": list(ev.rules),
            "employees": [
                trusted(
                    EmployeeScore,
                    {
                        "employee": e,
                        "hard_violations": hv,
                        "penalty": pen,
                        "minutes": minutes[i],
                        "shifts": shifts[i],
                    },
                )
                for i, (e, (hv, pen)) in enumerate(per_employee.items())
            ],
            "uncovered": [
                trusted(
                    Uncovered,
                    {"day": d, "shift": ids[s], "required": required[d][s], "assigned": z[d][s]},
                )
                for d, s in short
            ],
            "stats": stats,
            "changes": None
            if problem.previous is None
            else sum(len(r.matches) for r in ev.rules if r.rule == "changes"),
        },
    )
