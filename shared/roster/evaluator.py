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
from shared.roster.rules import RULES, Rows, Rule, Tallied, cover_counts, total_minutes


@dataclass(frozen=True)
class Tallies:
    """What a result shows besides the rules' verdict, when the scorer computed it (the C
    evaluator, csolver/explain.py): minutes and days worked per employee, employees per day
    and shift type."""

    minutes: list[int]
    shifts: list[int]
    cover: list[list[int]]


@dataclass(frozen=True)
class Evaluation:
    rules: tuple[RuleScore, ...]
    # The rows scored, with the tallies the rules computed, for `build_result` to reuse.
    rows: Tallied | None = field(default=None, compare=False, repr=False)
    # Or what a scorer that never made the rows computed instead.
    tallies: Tallies | None = field(default=None, compare=False, repr=False)

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
    scores = [rule_score(rule, rule.check(problem, rows)) for rule in RULES]
    return Evaluation(tuple(scores), rows)


def rule_score(rule: Rule, matches: list[ConstraintMatch]) -> RuleScore:
    """One rule's line of the breakdown: its matches and their totals."""
    hard_violations = penalty = 0
    for m in matches:
        hard_violations += m.hard_violations
        penalty += m.penalty
    return trusted(
        RuleScore,
        {
            "rule": rule.name,
            "hard": rule.hard,
            "hard_violations": hard_violations,
            "penalty": penalty,
            "matches": matches,
        },
    )


def assignments_of(problem: Problem, roster: I32) -> list[list[str | None]]:
    """The roster's shift ids per employee and day (None = a day off), its cells known to be
    -1 or a shift index: one numpy lookup, where a loop over 1.8 M cells took ~0.3 s."""
    names = np.array([*problem.shift_ids, None], dtype=object)  # -1 indexes the last
    return names[np.asarray(roster)].tolist()  # type: ignore[no-any-return]


def build_result(
    problem: Problem,
    roster: I32,
    stats: SolverStats | None = None,
    *,
    evaluation: Evaluation | None = None,
    assignments: bool = True,
) -> SolveResult:
    """The scored result; `evaluation`, when given, must be `evaluate(problem, roster)` (a
    solver that already scored its roster passes it on rather than have it scored again).

    `assignments=False` (with an evaluation that has its tallies) leaves the roster itself
    out (an empty list): the result's summary, for `rendered`, which writes the roster's JSON
    in C."""
    ids = problem.shift_ids
    if evaluation is not None and evaluation.tallies is not None:
        # The tallies are the roster's (the contract above), computed without any rows.
        ev, t = evaluation, evaluation.tallies
        minutes, shifts, z = t.minutes, t.shifts, t.cover
        rostered = assignments_of(problem, roster) if assignments else []
    else:
        if evaluation is not None and evaluation.rows is not None:
            # The rows `evaluation` scored are the roster's (the contract above), checked.
            ev, rows = evaluation, evaluation.rows
        else:
            rows = Tallied(checked_rows(problem, roster))
            ev = evaluation if evaluation is not None else evaluate_rows(problem, rows)
        rostered = [[None if s < 0 else ids[s] for s in row] for row in rows]
        minutes = total_minutes(problem, rows)
        shifts = [len(row) - row.count(-1) for row in rows]
        z = cover_counts(problem, rows)
    per_employee: dict[str, list[int]] = {e: [0, 0] for e in problem.employee_ids}
    for r in ev.rules:
        for m in r.matches:
            if m.employee is not None:
                per_employee[m.employee][0] += m.hard_violations
                per_employee[m.employee][1] += m.penalty
    # The tallies' path never made the problem's lists (1.8 M cells of them at the limits).
    required = problem.lists.cover_req if evaluation is None or evaluation.tallies is None else (
        problem.cover_req.tolist()
    )
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
    # Built without validation (`trusted`): every value is the evaluator's or the validated
    # request's; `stats` is the caller's model, which is what validation would keep too.
    return trusted(
        SolveResult,
        {
            "version": 1,
            "assignments": [
                trusted(EmployeeRoster, {"employee": e, "shifts": row})
                for e, row in zip(problem.employee_ids, rostered, strict=True)
            ]
            if assignments
            else [],
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


# How every result's JSON starts (the model's first two fields, pydantic's compact dump).
RESULT_HEAD = b'{"version":1,"assignments":'


@dataclass(frozen=True)
class Rendered:
    """A result as the JSON that is published (UTF-8 `data`), rendered once, and its
    `summary`: the same result's figures (score, feasible, stats, changes) with its lists
    (assignments, breakdown, employees, uncovered) left empty, which is what a service reads.
    At the size limits neither parsing the JSON back nor building the roster as Python
    objects fits in a cancel's 200 ms (docs/decisions/0020).

    `key`: the JSON is not here but in Redis under this key, stored there by the solve process
    (shared/solving/drop.py); `data` is then empty.

    `retained`: what the solve built (its compiled problem: ~25 ms to free at the size limits),
    held so that it is freed with the result, after the result is on its way, not before."""

    summary: SolveResult
    data: bytes | bytearray
    key: str | None = None
    retained: object = field(default=None, repr=False, compare=False)

    @property
    def json(self) -> str:
        return self.data.decode()

    def result(self) -> SolveResult:
        """The whole result as a model (parsing the JSON: ~0.15-0.4 s at the size limits)."""
        if self.key is not None:
            raise ValueError(f"the result is stored under {self.key}, not held here")
        return SolveResult.model_validate_json(self.data)


_LISTS = ("assignments", "breakdown", "employees", "uncovered")


def summary_of(result: SolveResult) -> SolveResult:
    return result.model_copy(update={name: [] for name in _LISTS})


def rendered(result: SolveResult, rows: bytearray) -> Rendered:
    """`result` (one built without assignments) with its roster's `assignments` JSON: the
    result's JSON exactly as `model_dump_json` writes it.

    `rows` is that JSON after `RESULT_HEAD`, in one buffer (`Explainer.render(roster,
    RESULT_HEAD)`); the rest of the result is appended to it in place. Joining the three
    parts into new bytes copied 12 MB into fresh pages: 5-8 ms of a cancel at the size limits.
    """
    small = result.__pydantic_serializer__.to_json(result)
    empty = RESULT_HEAD + b"[]"
    if result.assignments or not small.startswith(empty):
        raise ValueError("rendered: the result must have no assignments")
    if not rows.startswith(RESULT_HEAD):
        raise ValueError("rendered: the rows must follow RESULT_HEAD")
    rows += small[len(empty) :]
    return Rendered(summary_of(result), rows)


def render(result: SolveResult) -> Rendered:
    """A whole result rendered (the pure-Python path)."""
    return Rendered(summary_of(result), result.__pydantic_serializer__.to_json(result))
