"""One employee's hard rules, written once: every hard rule of bench/curtois/FORMAT.md is
about one row of the roster (cover, the only rule between rows, is soft).

One function per rule, named and counted as `shared.roster.rules` counts it for that employee,
so the sum over rows is the evaluator's hard-violation count (`tests/test_greedy_rules.py`
holds them equal on random problems). `rules.py` reads the whole roster and explains every
point; these read one row as plain lists, fast enough for the greedy solver to check every row
it makes. The run rules also take a window of the row (whole runs only), which is how the
greedy checks a one-cell change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import pairwise

from shared.roster.compiled import Problem

OFF = -1


@dataclass(frozen=True, eq=False)
class RowRules:
    """Everything one employee's row must satisfy (bench/curtois/FORMAT.md, hard rules 1-10)."""

    length: list[int]
    forbidden: list[list[int]]
    max_shifts: list[int]
    min_minutes: int
    max_minutes: int
    max_consec: int
    min_consec: int
    min_off: int
    max_weekends: int
    day_off: list[int]
    weekend: list[int]

    @classmethod
    def of(cls, p: Problem, e: int) -> RowRules:
        lists = p.lists
        return cls(
            length=lists.length,
            forbidden=lists.forbidden,
            max_shifts=lists.max_shifts[e],
            min_minutes=lists.min_minutes[e],
            max_minutes=lists.max_minutes[e],
            max_consec=lists.max_consec[e],
            min_consec=lists.min_consec[e],
            min_off=lists.min_off[e],
            max_weekends=lists.max_weekends[e],
            day_off=lists.day_off[e],
            weekend=lists.weekend,
        )


def runs(row: list[int], lo: int = 0, hi: int | None = None) -> Iterator[tuple[bool, int, int]]:
    """Maximal runs of worked or free days in row[lo:hi]: (worked, first day, length). The
    caller picks lo and hi on run boundaries, so each run is whole."""
    end = len(row) if hi is None else hi
    first = lo
    while first < end:
        worked = row[first] >= 0
        nxt = first + 1
        while nxt < end and (row[nxt] >= 0) is worked:
            nxt += 1
        yield worked, first, nxt - first
        first = nxt


def minutes_of(r: RowRules, row: list[int]) -> int:
    return sum(r.length[s] for s in row if s >= 0)


def shift_rotation(r: RowRules, row: list[int]) -> int:
    f = r.forbidden
    return sum(1 for a, b in pairwise(row) if a >= 0 and b >= 0 and f[a][b])


def max_shifts_per_type(r: RowRules, row: list[int]) -> int:
    return sum(1 for s, limit in enumerate(r.max_shifts) if row.count(s) > limit)


def max_total_minutes(r: RowRules, row: list[int]) -> int:
    return int(minutes_of(r, row) > r.max_minutes)


def min_total_minutes(r: RowRules, row: list[int]) -> int:
    return int(minutes_of(r, row) < r.min_minutes)


def max_consecutive_shifts(r: RowRules, row: list[int], lo: int = 0, hi: int | None = None) -> int:
    # Runs touching a horizon edge count too, inside the horizon only.
    return sum(1 for worked, _, n in runs(row, lo, hi) if worked and n > r.max_consec)


def _short_inner(row: list[int], lo: int, hi: int | None, want: bool, minimum: int) -> int:
    # Runs touching either horizon edge are exempt (FORMAT.md, hard rules 7 and 8).
    if minimum <= 1:
        return 0
    last = len(row)
    return sum(
        1
        for worked, first, n in runs(row, lo, hi)
        if worked is want and n < minimum and first > 0 and first + n < last
    )


def min_consecutive_shifts(r: RowRules, row: list[int], lo: int = 0, hi: int | None = None) -> int:
    return _short_inner(row, lo, hi, True, r.min_consec)


def min_consecutive_days_off(
    r: RowRules, row: list[int], lo: int = 0, hi: int | None = None
) -> int:
    return _short_inner(row, lo, hi, False, r.min_off)


def max_weekends(r: RowRules, row: list[int]) -> int:
    worked = {w for w, s in zip(r.weekend, row, strict=True) if w >= 0 and s >= 0}
    return int(len(worked) > r.max_weekends)


def days_off(r: RowRules, row: list[int]) -> int:
    return sum(1 for fixed, s in zip(r.day_off, row, strict=True) if fixed and s >= 0)


# The hard rules of one row, named as in rules.py; each counts what that rule counts.
ROW_RULES: tuple[tuple[str, Callable[[RowRules, list[int]], int]], ...] = (
    ("shift_rotation", shift_rotation),
    ("max_shifts_per_type", max_shifts_per_type),
    ("max_total_minutes", max_total_minutes),
    ("min_total_minutes", min_total_minutes),
    ("max_consecutive_shifts", max_consecutive_shifts),
    ("min_consecutive_shifts", min_consecutive_shifts),
    ("min_consecutive_days_off", min_consecutive_days_off),
    ("max_weekends", max_weekends),
    ("days_off", days_off),
)
RUN_RULES = (max_consecutive_shifts, min_consecutive_shifts, min_consecutive_days_off)


def row_breaks(r: RowRules, row: list[int]) -> dict[str, int]:
    """Hard violations of one row per rule, as the evaluator counts them for this employee."""
    return {name: rule(r, row) for name, rule in ROW_RULES}


def row_feasible(r: RowRules, row: list[int]) -> bool:
    return not any(rule(r, row) for _, rule in ROW_RULES)
