"""The roster rules, one function each, named like the rule (Timefold's constraint-provider style).

Each rule returns the matches that explain its points: which employee, which days, how many
hard violations, how much soft penalty. A hard rule counts one violation per broken instance
(one forbidden succession, one too-short run, one employee over their minutes, ...); the match
message says by how much. The soft rules are exactly Curtois & Qu's objective (FORMAT.md), so
the sum of all penalties is the published objective of a roster.

`csolver/src/score.c` implements the same rules with the same counting; a test compares them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from shared.roster.compiled import I32, Problem
from shared.roster.model import ConstraintMatch


@dataclass(frozen=True)
class Rule:
    name: str
    hard: bool
    check: Callable[[Problem, I32], list[ConstraintMatch]]


def runs(worked: np.ndarray) -> Iterator[tuple[bool, int, int]]:
    """Maximal runs of equal values in a boolean row: (value, first day, length)."""
    n = len(worked)
    if n == 0:
        return
    edges = np.flatnonzero(np.diff(worked.astype(np.int8))) + 1
    starts = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [n]))
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        yield bool(worked[s]), s, e - s


def _span(first: int, length: int) -> list[int]:
    return list(range(first, first + length))


# ----------------------------------------------------------------------------- hard rules


def shift_rotation(p: Problem, roster: I32) -> list[ConstraintMatch]:
    today, tomorrow = roster[:, :-1], roster[:, 1:]
    both = (today >= 0) & (tomorrow >= 0)
    bad = np.zeros_like(both)
    bad[both] = p.forbidden[today[both], tomorrow[both]] == 1
    out = []
    for e, d in zip(*np.nonzero(bad), strict=True):
        a, b = p.shift_ids[roster[e, d]], p.shift_ids[roster[e, d + 1]]
        out.append(
            ConstraintMatch(
                rule="shift_rotation",
                employee=p.employee_ids[e],
                days=[int(d), int(d) + 1],
                shift=b,
                hard_violations=1,
                message=f"{b} on day {d + 1} may not follow {a} on day {d}",
            )
        )
    return out


def _tally(p: Problem, roster: I32, per_day: bool) -> I32:
    """Worked shifts counted per (employee, shift) or, with `per_day`, per (day, shift)."""
    e_idx, d_idx = np.nonzero(roster >= 0)
    rows, n_rows = (d_idx, p.n_days) if per_day else (e_idx, p.n_employees)
    counts = np.zeros((n_rows, p.n_shifts), dtype=np.int32)
    np.add.at(counts, (rows, roster[e_idx, d_idx]), 1)
    return counts


def max_shifts_per_type(p: Problem, roster: I32) -> list[ConstraintMatch]:
    counts = _tally(p, roster, per_day=False)
    out = []
    for e, s in zip(*np.nonzero(counts > p.max_shifts), strict=True):
        days = np.flatnonzero(roster[e] == s).tolist()
        limit, n = int(p.max_shifts[e, s]), int(counts[e, s])
        why = "is not eligible for" if limit == 0 else f"may work at most {limit} of"
        out.append(
            ConstraintMatch(
                rule="max_shifts_per_type",
                employee=p.employee_ids[e],
                days=days,
                shift=p.shift_ids[s],
                hard_violations=1,
                message=f"{why} shift {p.shift_ids[s]} but works {n}",
            )
        )
    return out


def total_minutes(p: Problem, roster: I32) -> I32:
    lengths = np.where(roster >= 0, p.length[np.maximum(roster, 0)], 0)
    return lengths.sum(axis=1).astype(np.int32)  # type: ignore[no-any-return]


def max_total_minutes(p: Problem, roster: I32) -> list[ConstraintMatch]:
    minutes = total_minutes(p, roster)
    return [
        ConstraintMatch(
            rule="max_total_minutes",
            employee=p.employee_ids[e],
            hard_violations=1,
            message=f"works {minutes[e]} minutes, {minutes[e] - p.max_minutes[e]} over the "
            f"maximum of {p.max_minutes[e]}",
        )
        for e in np.flatnonzero(minutes > p.max_minutes)
    ]


def min_total_minutes(p: Problem, roster: I32) -> list[ConstraintMatch]:
    minutes = total_minutes(p, roster)
    return [
        ConstraintMatch(
            rule="min_total_minutes",
            employee=p.employee_ids[e],
            hard_violations=1,
            message=f"works {minutes[e]} minutes, {p.min_minutes[e] - minutes[e]} short of the "
            f"minimum of {p.min_minutes[e]}",
        )
        for e in np.flatnonzero(minutes < p.min_minutes)
    ]


def max_consecutive_shifts(p: Problem, roster: I32) -> list[ConstraintMatch]:
    out = []
    for e in range(p.n_employees):
        limit = int(p.max_consec[e])
        for worked, first, n in runs(roster[e] >= 0):
            if worked and n > limit:
                out.append(
                    ConstraintMatch(
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
    p: Problem, roster: I32, want_worked: bool, minimum: I32, rule: str, what: str
) -> list[ConstraintMatch]:
    """Runs shorter than the minimum; runs touching either horizon edge are exempt (FORMAT.md)."""
    out = []
    last = p.n_days - 1
    for e in range(p.n_employees):
        limit = int(minimum[e])
        if limit <= 1:
            continue
        for worked, first, n in runs(roster[e] >= 0):
            if worked is want_worked and n < limit and first > 0 and first + n - 1 < last:
                out.append(
                    ConstraintMatch(
                        rule=rule,
                        employee=p.employee_ids[e],
                        days=_span(first, n),
                        hard_violations=1,
                        message=f"{n} {what} in a row (days {first}-{first + n - 1}), "
                        f"minimum {limit}",
                    )
                )
    return out


def min_consecutive_shifts(p: Problem, roster: I32) -> list[ConstraintMatch]:
    return _short_inner_runs(
        p, roster, True, p.min_consec, "min_consecutive_shifts", "working days"
    )


def min_consecutive_days_off(p: Problem, roster: I32) -> list[ConstraintMatch]:
    return _short_inner_runs(p, roster, False, p.min_off, "min_consecutive_days_off", "days off")


def worked_weekends(p: Problem, roster: I32) -> list[list[int]]:
    """Per employee, the indexes of the weekends they work (Saturday or Sunday)."""
    weekend_days = np.flatnonzero(p.weekend >= 0)
    out: list[list[int]] = []
    for e in range(p.n_employees):
        on = weekend_days[roster[e, weekend_days] >= 0]
        out.append(sorted(set(p.weekend[on].tolist())))
    return out


def max_weekends(p: Problem, roster: I32) -> list[ConstraintMatch]:
    out = []
    for e, weekends in enumerate(worked_weekends(p, roster)):
        if len(weekends) > p.max_weekends[e]:
            days = [d for d in np.flatnonzero(p.weekend >= 0).tolist() if roster[e, d] >= 0]
            out.append(
                ConstraintMatch(
                    rule="max_weekends",
                    employee=p.employee_ids[e],
                    days=days,
                    hard_violations=1,
                    message=f"works {len(weekends)} weekends, maximum {p.max_weekends[e]}",
                )
            )
    return out


def days_off(p: Problem, roster: I32) -> list[ConstraintMatch]:
    bad = (p.day_off == 1) & (roster >= 0)
    return [
        ConstraintMatch(
            rule="days_off",
            employee=p.employee_ids[e],
            days=[int(d)],
            shift=p.shift_ids[roster[e, d]],
            hard_violations=1,
            message=f"works {p.shift_ids[roster[e, d]]} on day {d}, a fixed day off",
        )
        for e, d in zip(*np.nonzero(bad), strict=True)
    ]


# ----------------------------------------------------------------------------- soft rules


def _requests(
    p: Problem, roster: I32, ptr: I32, shifts: I32, weights: I32
) -> Iterator[tuple[int, int, int, int, int]]:
    """(employee, day, requested shift, weight, rostered value) for every request."""
    n_days = p.n_days
    cells = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    for cell, s, w in zip(cells.tolist(), shifts.tolist(), weights.tolist(), strict=True):
        e, d = divmod(cell, n_days)
        yield e, d, s, w, int(roster[e, d])


def shift_on_requests(p: Problem, roster: I32) -> list[ConstraintMatch]:
    out = []
    for e, d, s, w, got in _requests(p, roster, p.on_ptr, p.on_shift, p.on_weight):
        if got != s and w:
            instead = "a day off" if got < 0 else p.shift_ids[got]
            out.append(
                ConstraintMatch(
                    rule="shift_on_requests",
                    employee=p.employee_ids[e],
                    days=[d],
                    shift=p.shift_ids[s],
                    penalty=w,
                    message=f"asked to work {p.shift_ids[s]} on day {d}, has {instead}",
                )
            )
    return out


def shift_off_requests(p: Problem, roster: I32) -> list[ConstraintMatch]:
    out = []
    for e, d, s, w, got in _requests(p, roster, p.off_ptr, p.off_shift, p.off_weight):
        if got == s and w:
            out.append(
                ConstraintMatch(
                    rule="shift_off_requests",
                    employee=p.employee_ids[e],
                    days=[d],
                    shift=p.shift_ids[s],
                    penalty=w,
                    message=f"asked not to work {p.shift_ids[s]} on day {d}, but does",
                )
            )
    return out


def cover_counts(p: Problem, roster: I32) -> I32:
    """z[d, s]: number of employees on shift s on day d."""
    return _tally(p, roster, per_day=True)


def cover_under(p: Problem, roster: I32) -> list[ConstraintMatch]:
    missing = p.cover_req - cover_counts(p, roster)
    return [
        ConstraintMatch(
            rule="cover_under",
            days=[int(d)],
            shift=p.shift_ids[s],
            penalty=int(missing[d, s] * p.cover_under[d, s]),
            message=f"day {d} shift {p.shift_ids[s]}: {missing[d, s]} short of "
            f"{p.cover_req[d, s]}",
        )
        for d, s in zip(*np.nonzero((missing > 0) & (p.cover_under > 0)), strict=True)
    ]


def cover_over(p: Problem, roster: I32) -> list[ConstraintMatch]:
    extra = cover_counts(p, roster) - p.cover_req
    return [
        ConstraintMatch(
            rule="cover_over",
            days=[int(d)],
            shift=p.shift_ids[s],
            penalty=int(extra[d, s] * p.cover_over[d, s]),
            message=f"day {d} shift {p.shift_ids[s]}: {extra[d, s]} over "
            f"{p.cover_req[d, s]}",
        )
        for d, s in zip(*np.nonzero((extra > 0) & (p.cover_over > 0)), strict=True)
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
    Rule("shift_on_requests", False, shift_on_requests),
    Rule("shift_off_requests", False, shift_off_requests),
    Rule("cover_under", False, cover_under),
    Rule("cover_over", False, cover_over),
)
