"""The evaluator's verdict on a roster, computed in C (csolver/src/explain.c).

`Explainer(problem)` packs the problem once (before a search, so nothing of it is left for
after a cancel); `explainer.evaluate(roster)` then returns the `Evaluation` that
`shared.roster.evaluator.evaluate` returns, match for match, with the tallies the result
shows: C walks the cells, Python only formats the broken instances. At 5,000 x 366 that is
~20 ms of C where the Python rules took 1-2.5 s (docs/decisions/0020). The Python rules stay
the reference (`shiftstream evaluate`); tests/test_explain.py compares the two.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic_core import to_json

from csolver._generetic import ffi, lib
from shared.roster.compiled import FREE, I32, Problem
from shared.roster.evaluator import Evaluation, Tallies, rule_score
from shared.roster.model import ConstraintMatch
from shared.roster.rules import RULES, _match, _shown, _span

__all__ = ["Explainer"]

# gr_match, field for field (int32 x 6, then int64 x 3: no padding).
MATCH = np.dtype(
    [
        ("rule", np.int32), ("employee", np.int32), ("day", np.int32), ("length", np.int32),
        ("shift", np.int32), ("other", np.int32),
        ("hard", np.int64), ("penalty", np.int64), ("value", np.int64),
    ]
)
assert MATCH.itemsize == ffi.sizeof("gr_match")
_CHANGES = next(i for i, r in enumerate(RULES) if r.name == "changes")
# Room for this many records before a second call with the exact count is needed.
_FIRST_CAPACITY = 4096


class Explainer:
    """One problem packed for `gr_explain`, and the lookups formatting its matches takes."""

    def __init__(self, problem: Problem) -> None:
        # Imported here: csolver/__init__ imports this module's package first.
        from csolver import _Packed

        self.problem = problem
        # The rules price the request's own requests and list changes separately, so the
        # change costs are not folded into the requests as the search's problem has them.
        self.packed = _Packed(problem, fold_changes=False)
        code = lib.gr_validate(self.packed.c)  # once: gr_explain relies on it
        if code != 0:
            from csolver import GeneticError

            raise GeneticError(code)
        self.capacity = _FIRST_CAPACITY
        e, d, s = problem.n_employees, problem.n_days, problem.n_shifts
        self.minutes = np.zeros(e, dtype=np.int64)
        self.shifts = np.zeros(e, dtype=np.int32)
        self.cover = np.zeros((d, s), dtype=np.int32)
        # The JSON pieces of the assignments, escaped by pydantic's own serializer.
        rows = [
            b'{"employee":' + to_json(i) + b',"shifts":[' for i in problem.employee_ids
        ]
        values = [b"null", *(to_json(s) for s in problem.shift_ids)]
        self.text = b"".join(rows) + b"".join(values)
        self.row_at = np.cumsum([0, *map(len, rows)], dtype=np.int64)
        self.value_at = np.cumsum([0, *map(len, values)], dtype=np.int64) + self.row_at[-1]
        self.row_at_c = ffi.cast("int64_t *", ffi.from_buffer(self.row_at))
        self.value_at_c = ffi.cast("int64_t *", ffi.from_buffer(self.value_at))
        # small per-employee and per-day tables, read per match
        self.max_shifts = problem.max_shifts.tolist()
        self.limits = {
            "max_minutes": problem.max_minutes.tolist(),
            "min_minutes": problem.min_minutes.tolist(),
            "max_consec": problem.max_consec.tolist(),
            "min_consec": problem.min_consec.tolist(),
            "min_off": problem.min_off.tolist(),
            "max_weekends": problem.max_weekends.tolist(),
        }
        self.cover_req = problem.cover_req.tolist()
        self.weekend_days = np.flatnonzero(np.asarray(problem.weekend) >= 0)

    def _records(self, roster: I32) -> npt.NDArray[Any]:
        out = np.zeros(self.capacity, dtype=MATCH)
        n = ffi.new("int64_t *")
        c = self.packed.c
        r = ffi.cast("int32_t *", ffi.from_buffer(roster))
        while True:
            code = lib.gr_explain(
                c, r, ffi.cast("gr_match *", ffi.from_buffer(out)), out.size, n,
                ffi.cast("int64_t *", ffi.from_buffer(self.minutes)),
                ffi.cast("int32_t *", ffi.from_buffer(self.shifts)),
                ffi.cast("int32_t *", ffi.from_buffer(self.cover)),
            )
            if code != 0:
                from csolver import GeneticError

                raise GeneticError(code)
            if n[0] <= out.size:
                return out[: n[0]]
            self.capacity = int(n[0])
            out = np.zeros(self.capacity, dtype=MATCH)

    def _checked(self, roster: I32) -> I32:
        """The roster as contiguous int32; C checks each cell's range (GR_ERR_ROSTER)."""
        arr = np.asarray(roster)
        if arr.shape != self.packed.shape:
            raise ValueError(
                f"roster has shape {arr.shape}, expected {self.packed.shape} (employees, days)"
            )
        if arr.dtype.kind not in "iu":
            raise ValueError(f"roster: expected an integer array, got dtype {arr.dtype}")
        if arr.dtype != np.int32 and arr.size and (arr.min() < -1 or arr.max() > 2**31 - 1):
            raise ValueError("roster values must be -1 (day off) or a shift index")
        return np.ascontiguousarray(arr, dtype=np.int32)

    def evaluate(self, roster: I32) -> Evaluation:
        """`shared.roster.evaluator.evaluate(problem, roster)`, with its tallies."""
        p = self.problem
        arr = self._checked(roster)
        records = self._records(arr)
        # employee by employee from C; the evaluator lists rule by rule
        records = records[np.argsort(records["rule"], kind="stable")]
        by_rule: list[list[ConstraintMatch]] = [[] for _ in RULES]
        formats = _Formatter(self, arr).by_rule
        for rule, *fields in records.tolist():
            by_rule[rule].append(formats[rule](*fields))
        if p.previous is not None:
            by_rule[_CHANGES] = _changes(p, arr)
        scores = [rule_score(r, m) for r, m in zip(RULES, by_rule, strict=True)]
        tallies = Tallies(
            minutes=self.minutes.tolist(), shifts=self.shifts.tolist(), cover=self.cover.tolist()
        )
        return Evaluation(tuple(scores), tallies=tallies)

    def render(self, roster: I32, head: bytes = b"") -> bytearray:
        """The roster as the result's `assignments` JSON, written in C (`gr_render_rows`):
        exactly what pydantic writes for them, ~10 ms at 5,000 x 366 where building the lists
        and dumping them took 0.1-0.3 s. Written after `head` in one buffer, to which the
        rest of the result is appended without copying the rows (`rendered`)."""
        arr = self._checked(roster)
        r = ffi.cast("int32_t *", ffi.from_buffer(arr))
        e, d = self.packed.shape
        args = (r, e, d, len(self.value_at) - 1, self.text, self.row_at_c, self.value_at_c)
        need = lib.gr_render_rows(*args, ffi.NULL, 0)  # measures only
        if need < 0:
            from csolver import GeneticError

            raise GeneticError(int(need))
        out = bytearray(len(head) + need)
        out[: len(head)] = head
        written = lib.gr_render_rows(*args, ffi.from_buffer(out) + len(head), need)
        if written != need:
            raise AssertionError(f"gr_render_rows wrote {written} of {need} bytes")
        return out


class _Formatter:
    """A gr_match record as the Python rule writes its match (shared/roster/rules.py): one
    method per rule, in the rules' order (`by_rule[rule id]`)."""

    def __init__(self, ex: Explainer, roster: I32) -> None:
        self.ex, self.p, self.roster, self.limits = ex, ex.problem, roster, ex.limits
        self.sid, self.eid = self.p.shift_ids, self.p.employee_ids
        self.by_rule = (
            self.shift_rotation, self.max_shifts_per_type, self.max_total_minutes,
            self.min_total_minutes, self.max_consecutive_shifts, self.min_consecutive_shifts,
            self.min_consecutive_days_off, self.max_weekends, self.days_off, self.pinned,
            self.shift_on_requests, self.shift_off_requests, self.cover_under, self.cover_over,
        )

    # (employee, first day, days, shift, other value, hard, penalty, value): gr_match's fields
    def shift_rotation(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        return _match(
            rule="shift_rotation", employee=self.eid[e], days=[d, d + 1], shift=sid[s],
            hard_violations=1,
            message=f"{sid[s]} on day {d + 1} may not follow {sid[other]} on day {d}",
        )

    def max_shifts_per_type(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        limit = self.ex.max_shifts[e][s]
        why = "is not eligible for" if limit == 0 else f"may work at most {limit} of"
        return _match(
            rule="max_shifts_per_type", employee=self.eid[e],
            days=np.flatnonzero(self.roster[e] == s).tolist(), shift=self.sid[s],
            hard_violations=1, message=f"{why} shift {self.sid[s]} but works {value}",
        )

    def max_total_minutes(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        lim = self.limits["max_minutes"][e]
        return _match(
            rule="max_total_minutes", employee=self.eid[e], hard_violations=1,
            message=f"works {value} minutes, {value - lim} over the maximum of {lim}",
        )

    def min_total_minutes(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        lim = self.limits["min_minutes"][e]
        return _match(
            rule="min_total_minutes", employee=self.eid[e], hard_violations=1,
            message=f"works {value} minutes, {lim - value} short of the minimum of {lim}",
        )

    def max_consecutive_shifts(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        return _match(
            rule="max_consecutive_shifts", employee=self.eid[e], days=_span(d, n),
            hard_violations=1,
            message=f"works {n} days in a row (days {d}-{d + n - 1}), "
            f"maximum {self.limits['max_consec'][e]}",
        )

    def min_consecutive_shifts(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        return _match(
            rule="min_consecutive_shifts", employee=self.eid[e], days=_span(d, n),
            hard_violations=1,
            message=f"{n} working days in a row (days {d}-{d + n - 1}), "
            f"minimum {self.limits['min_consec'][e]}",
        )

    def min_consecutive_days_off(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        return _match(
            rule="min_consecutive_days_off", employee=self.eid[e], days=_span(d, n),
            hard_violations=1,
            message=f"{n} days off in a row (days {d}-{d + n - 1}), "
            f"minimum {self.limits['min_off'][e]}",
        )

    def max_weekends(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        wd = self.ex.weekend_days
        return _match(
            rule="max_weekends", employee=self.eid[e],
            days=wd[self.roster[e, wd] >= 0].tolist(), hard_violations=1,
            message=f"works {value} weekends, maximum {self.limits['max_weekends'][e]}",
        )

    def days_off(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        return _match(
            rule="days_off", employee=self.eid[e], days=[d], shift=sid[s], hard_violations=1,
            message=f"works {sid[s]} on day {d}, a fixed day off",
        )

    def pinned(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        p = self.p
        return _match(
            rule="pinned", employee=self.eid[e], days=[d], shift=None if s < 0 else self.sid[s],
            hard_violations=1,
            message=f"day {d} is pinned to {_shown(p, other)}, has {_shown(p, s)}",
        )

    def shift_on_requests(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        instead = "a day off" if other < 0 else sid[other]
        return _match(
            rule="shift_on_requests", employee=self.eid[e], days=[d], shift=sid[s],
            penalty=penalty, message=f"asked to work {sid[s]} on day {d}, has {instead}",
        )

    def shift_off_requests(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        return _match(
            rule="shift_off_requests", employee=self.eid[e], days=[d], shift=sid[s],
            penalty=penalty, message=f"asked not to work {sid[s]} on day {d}, but does",
        )

    def cover_under(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        return _match(
            rule="cover_under", days=[d], shift=sid[s], penalty=penalty,
            message=f"day {d} shift {sid[s]}: {value} short of {self.ex.cover_req[d][s]}",
        )

    def cover_over(
        self, e: int, d: int, n: int, s: int, other: int, hard: int, penalty: int, value: int
    ) -> ConstraintMatch:
        sid = self.sid
        return _match(
            rule="cover_over", days=[d], shift=sid[s], penalty=penalty,
            message=f"day {d} shift {sid[s]}: {value} over {self.ex.cover_req[d][s]}",
        )


def _changes(p: Problem, roster: I32) -> list[ConstraintMatch]:
    """The `changes` rule (one match per cell off the previous roster), from the arrays."""
    previous = np.asarray(p.previous)
    es, ds = np.nonzero((previous != FREE) & (roster != previous))
    sid = p.shift_ids
    return [
        _match(
            rule="changes",
            employee=p.employee_ids[e],
            days=[d],
            shift=None if got < 0 else sid[got],
            penalty=p.change_weight,
            message=f"day {d}: {_shown(p, old)} before, {_shown(p, got)} now",
        )
        for e, d, got, old in zip(
            es.tolist(), ds.tolist(), roster[es, ds].tolist(), previous[es, ds].tolist(),
            strict=True,
        )
    ]
