"""The roster rules, one function each, named like the rule (Timefold's constraint-provider style).

Each rule returns the matches that explain its points: which employee, which days, how many
hard violations, how much soft penalty. A hard rule counts one violation per broken instance
(one forbidden succession, one too-short run, one employee over their minutes, ...); the match
message says by how much. The soft rules are exactly Curtois & Qu's objective
(bench/curtois/FORMAT.md), so the sum of all penalties is the published objective of a roster.

`csolver/src/score.c` implements the same rules with the same counting; a test compares them.

The rules read the roster as nested Python lists (`Rows`, converted once by the evaluator) and
the problem through `Problem.lists`: most rosters are small, and there plain loops beat numpy,
whose per-call overhead dominated the cost of scoring a tiny roster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from shared.roster.compiled import FREE, Problem
from shared.roster.model import ConstraintMatch, trusted

Rows = list[list[int]]  # roster[e][d]: shift index, -1 = day off


class Tallied(list[list[int]]):
    """Rows under evaluation with the tallies that several rules and the result read (cover
    per day, minutes per employee), each computed on first use. The evaluator wraps the rows
    in one for the length of a scoring, while nothing changes them."""

    __slots__ = ("cover", "minutes")

    def __init__(self, rows: Rows) -> None:
        super().__init__(rows)
        self.cover: Rows | None = None
        self.minutes: list[int] | None = None


@dataclass(frozen=True)
class Rule:
    name: str
    hard: bool
    check: Callable[[Problem, Rows], list[ConstraintMatch]]


def runs(row: list[int]) -> Iterator[tuple[bool, int, int]]:
    """Maximal runs of worked (>= 0) or free days in a row: (worked, first day, length)."""
    n = len(row)
    first = 0
    while first < n:
        worked = row[first] >= 0
        end = first + 1
        while end < n and (row[end] >= 0) is worked:
            end += 1
        yield worked, first, end - first
        first = end


def _match(
    *,
    rule: str,
    message: str,
    employee: str | None = None,
    days: list[int] | None = None,
    shift: str | None = None,
    hard_violations: int = 0,
    penalty: int = 0,
) -> ConstraintMatch:
    # Every value comes from the validated request and the roster's ints, so the model is
    # built without validation (see `trusted`); all fields given, in declaration order.
    return trusted(
        ConstraintMatch,
        {
            "rule": rule,
            "employee": employee,
            "days": [] if days is None else days,
            "shift": shift,
            "hard_violations": hard_violations,
            "penalty": penalty,
            "message": message,
        },
    )


def _span(first: int, length: int) -> list[int]:
    return list(range(first, first + length))


# ----------------------------------------------------------------------------- hard rules


def shift_rotation(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    forbidden = p.lists.forbidden
    out: list[ConstraintMatch] = []
    if not any(map(any, forbidden)):
        return out
    for e, row in enumerate(roster):
        for d in range(len(row) - 1):
            a, b = row[d], row[d + 1]
            if a >= 0 and b >= 0 and forbidden[a][b]:
                sa, sb = p.shift_ids[a], p.shift_ids[b]
                out.append(
                    _match(
                        rule="shift_rotation",
                        employee=p.employee_ids[e],
                        days=[d, d + 1],
                        shift=sb,
                        hard_violations=1,
                        message=f"{sb} on day {d + 1} may not follow {sa} on day {d}",
                    )
                )
    return out


def shift_counts(p: Problem, roster: Rows) -> Rows:
    """counts[e][s]: shifts of type s the employee works."""
    shifts = range(p.n_shifts)
    return [[row.count(s) for s in shifts] for row in roster]


def max_shifts_per_type(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    max_shifts = p.lists.max_shifts
    out: list[ConstraintMatch] = []
    if p.n_shifts and min(map(min, max_shifts), default=0) >= p.n_days:
        return out  # no limit below the horizon, and no ineligible type
    for e, counts in enumerate(shift_counts(p, roster)):
        for s, n in enumerate(counts):
            limit = max_shifts[e][s]
            if n <= limit:
                continue
            days = [d for d, v in enumerate(roster[e]) if v == s]
            why = "is not eligible for" if limit == 0 else f"may work at most {limit} of"
            out.append(
                _match(
                    rule="max_shifts_per_type",
                    employee=p.employee_ids[e],
                    days=days,
                    shift=p.shift_ids[s],
                    hard_violations=1,
                    message=f"{why} shift {p.shift_ids[s]} but works {n}",
                )
            )
    return out


def total_minutes(p: Problem, roster: Rows) -> list[int]:
    if isinstance(roster, Tallied):
        if roster.minutes is None:
            roster.minutes = _total_minutes(p, roster)
        return roster.minutes
    return _total_minutes(p, roster)


def _total_minutes(p: Problem, roster: Rows) -> list[int]:
    length = p.lists.length
    out = []
    for row in roster:
        total = 0
        # list.count runs in C; there are far fewer shift types than days
        for s, n in enumerate(length):
            total += n * row.count(s)
        out.append(total)
    return out


def max_total_minutes(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    limits = p.lists.max_minutes
    return [
        _match(
            rule="max_total_minutes",
            employee=p.employee_ids[e],
            hard_violations=1,
            message=f"works {m} minutes, {m - limits[e]} over the maximum of {limits[e]}",
        )
        for e, m in enumerate(total_minutes(p, roster))
        if m > limits[e]
    ]


def min_total_minutes(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    limits = p.lists.min_minutes
    if not any(limits):
        return []
    return [
        _match(
            rule="min_total_minutes",
            employee=p.employee_ids[e],
            hard_violations=1,
            message=f"works {m} minutes, {limits[e] - m} short of the minimum of {limits[e]}",
        )
        for e, m in enumerate(total_minutes(p, roster))
        if m < limits[e]
    ]


def max_consecutive_shifts(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    limits = p.lists.max_consec
    out = []
    for e, row in enumerate(roster):
        limit = limits[e]
        if len(row) - row.count(-1) <= limit:
            continue  # not even all worked days together make a run that long
        for worked, first, n in runs(row):
            if worked and n > limit:
                out.append(
                    _match(
                        rule="max_consecutive_shifts",
                        employee=p.employee_ids[e],
                        days=_span(first, n),
                        hard_violations=1,
                        message=f"works {n} days in a row (days {first}-{first + n - 1}), "
                        f"maximum {limit}",
                    )
                )
    return out


def _short_inner_runs(
    p: Problem, roster: Rows, want_worked: bool, minimum: list[int], rule: str, what: str
) -> list[ConstraintMatch]:
    """Runs shorter than the minimum; runs touching either horizon edge are exempt
    (bench/curtois/FORMAT.md)."""
    out = []
    last = p.n_days - 1
    for e, row in enumerate(roster):
        limit = minimum[e]
        if limit <= 1:
            continue
        for worked, first, n in runs(row):
            if worked is want_worked and n < limit and first > 0 and first + n - 1 < last:
                out.append(
                    _match(
                        rule=rule,
                        employee=p.employee_ids[e],
                        days=_span(first, n),
                        hard_violations=1,
                        message=f"{n} {what} in a row (days {first}-{first + n - 1}), "
                        f"minimum {limit}",
                    )
                )
    return out


def min_consecutive_shifts(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    return _short_inner_runs(
        p, roster, True, p.lists.min_consec, "min_consecutive_shifts", "working days"
    )


def min_consecutive_days_off(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    return _short_inner_runs(
        p, roster, False, p.lists.min_off, "min_consecutive_days_off", "days off"
    )


def worked_weekends(p: Problem, roster: Rows) -> list[list[int]]:
    """Per employee, the indexes of the weekends they work (Saturday or Sunday)."""
    weekend = p.lists.weekend
    weekend_days = [d for d, w in enumerate(weekend) if w >= 0]
    return [sorted({weekend[d] for d in weekend_days if row[d] >= 0}) for row in roster]


def max_weekends(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    limits = p.lists.max_weekends
    out: list[ConstraintMatch] = []
    if min(limits, default=0) >= p.n_weekends:
        return out
    weekend = p.lists.weekend
    for e, weekends in enumerate(worked_weekends(p, roster)):
        if len(weekends) > limits[e]:
            days = [d for d, w in enumerate(weekend) if w >= 0 and roster[e][d] >= 0]
            out.append(
                _match(
                    rule="max_weekends",
                    employee=p.employee_ids[e],
                    days=days,
                    hard_violations=1,
                    message=f"works {len(weekends)} weekends, maximum {limits[e]}",
                )
            )
    return out


def days_off(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    fixed = p.lists.day_off
    if not any(map(any, fixed)):
        return []
    return [
        _match(
            rule="days_off",
            employee=p.employee_ids[e],
            days=[d],
            shift=p.shift_ids[s],
            hard_violations=1,
            message=f"works {p.shift_ids[s]} on day {d}, a fixed day off",
        )
        for e, row in enumerate(roster)
        for d, s in enumerate(row)
        if s >= 0 and fixed[e][d]
    ]


def _shown(p: Problem, v: int) -> str:
    return "a day off" if v < 0 else p.shift_ids[v]


def _differing(roster: Rows, target: Rows) -> Iterator[tuple[int, int, int, int]]:
    """(employee, day, value in roster, value in target) of each cell that target sets
    (not FREE) and roster does not hold."""
    for e, (row, want) in enumerate(zip(roster, target, strict=True)):
        if row == want:
            continue
        for d, (got, w) in enumerate(zip(row, want, strict=True)):
            if w != FREE and got != w:
                yield e, d, got, w


def pinned(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    pin = p.lists.pin
    if pin is None:
        return []
    return [
        _match(
            rule="pinned",
            employee=p.employee_ids[e],
            days=[d],
            shift=None if got < 0 else p.shift_ids[got],
            hard_violations=1,
            message=f"day {d} is pinned to {_shown(p, w)}, has {_shown(p, got)}",
        )
        for e, d, got, w in _differing(roster, pin)
    ]


# ----------------------------------------------------------------------------- soft rules


def _requests(
    p: Problem, roster: Rows, ptr: list[int], shifts: list[int], weights: list[int]
) -> Iterator[tuple[int, int, int, int, int]]:
    """(employee, day, requested shift, weight, rostered value) for every request."""
    n_days = p.n_days
    if not shifts:
        return
    for cell in range(len(ptr) - 1):
        lo, hi = ptr[cell], ptr[cell + 1]
        if lo == hi:
            continue
        e, d = divmod(cell, n_days)
        got = roster[e][d]
        for k in range(lo, hi):
            yield e, d, shifts[k], weights[k], got


def shift_on_requests(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    lists = p.lists
    out = []
    for e, d, s, w, got in _requests(p, roster, lists.on_ptr, lists.on_shift, lists.on_weight):
        if got != s and w:
            instead = "a day off" if got < 0 else p.shift_ids[got]
            out.append(
                _match(
                    rule="shift_on_requests",
                    employee=p.employee_ids[e],
                    days=[d],
                    shift=p.shift_ids[s],
                    penalty=w,
                    message=f"asked to work {p.shift_ids[s]} on day {d}, has {instead}",
                )
            )
    return out


def shift_off_requests(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    lists = p.lists
    out = []
    for e, d, s, w, got in _requests(p, roster, lists.off_ptr, lists.off_shift, lists.off_weight):
        if got == s and w:
            out.append(
                _match(
                    rule="shift_off_requests",
                    employee=p.employee_ids[e],
                    days=[d],
                    shift=p.shift_ids[s],
                    penalty=w,
                    message=f"asked not to work {p.shift_ids[s]} on day {d}, but does",
                )
            )
    return out


def cover_counts(p: Problem, roster: Rows) -> Rows:
    """z[d][s]: number of employees on shift s on day d."""
    if isinstance(roster, Tallied):
        if roster.cover is None:
            roster.cover = _cover_counts(p, roster)
        return roster.cover
    return _cover_counts(p, roster)


def _cover_counts(p: Problem, roster: Rows) -> Rows:
    z = [[0] * p.n_shifts for _ in range(p.n_days)]
    for row in roster:
        for zd, s in zip(z, row, strict=True):
            if s >= 0:
                zd[s] += 1
    return z


def cover_under(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    req, weight = p.lists.cover_req, p.lists.cover_under
    out = []
    for d, z in enumerate(cover_counts(p, roster)):
        if z == req[d]:
            continue  # the usual case, compared in one go
        for s, n in enumerate(z):
            missing = req[d][s] - n
            if missing > 0 and weight[d][s] > 0:
                out.append(
                    _match(
                        rule="cover_under",
                        days=[d],
                        shift=p.shift_ids[s],
                        penalty=missing * weight[d][s],
                        message=f"day {d} shift {p.shift_ids[s]}: {missing} short of "
                        f"{req[d][s]}",
                    )
                )
    return out


def cover_over(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    req, weight = p.lists.cover_req, p.lists.cover_over
    out = []
    for d, z in enumerate(cover_counts(p, roster)):
        if z == req[d]:
            continue  # the usual case, compared in one go
        for s, n in enumerate(z):
            extra = n - req[d][s]
            if extra > 0 and weight[d][s] > 0:
                out.append(
                    _match(
                        rule="cover_over",
                        days=[d],
                        shift=p.shift_ids[s],
                        penalty=extra * weight[d][s],
                        message=f"day {d} shift {p.shift_ids[s]}: {extra} over {req[d][s]}",
                    )
                )
    return out


def changes(p: Problem, roster: Rows) -> list[ConstraintMatch]:
    """One match per cell that differs from the previous roster, also at weight 0: the
    matches are the list of changed cells, and their number is the result's `changes`."""
    previous = p.lists.previous
    if previous is None:
        return []
    return [
        _match(
            rule="changes",
            employee=p.employee_ids[e],
            days=[d],
            shift=None if got < 0 else p.shift_ids[got],
            penalty=p.change_weight,
            message=f"day {d}: {_shown(p, old)} before, {_shown(p, got)} now",
        )
        for e, d, got, old in _differing(roster, previous)
    ]


RULES: tuple[Rule, ...] = (
    Rule("shift_rotation", True, shift_rotation),
    Rule("max_shifts_per_type", True, max_shifts_per_type),
    Rule("max_total_minutes", True, max_total_minutes),
    Rule("min_total_minutes", True, min_total_minutes),
    Rule("max_consecutive_shifts", True, max_consecutive_shifts),
    Rule("min_consecutive_shifts", True, min_consecutive_shifts),
    Rule("min_consecutive_days_off", True, min_consecutive_days_off),
    Rule("max_weekends", True, max_weekends),
    Rule("days_off", True, days_off),
    Rule("pinned", True, pinned),
    Rule("shift_on_requests", False, shift_on_requests),
    Rule("shift_off_requests", False, shift_off_requests),
    Rule("cover_under", False, cover_under),
    Rule("cover_over", False, cover_over),
    Rule("changes", False, changes),
)
