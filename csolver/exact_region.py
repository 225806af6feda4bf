"""A region of a roster re-optimised exactly: a MIP over its free cells, every other cell fixed.

The region's cells are 0/1 columns (employee, day, type); every rule of the request is a row
over them, the fixed cells entering as constants: the cover of the employees and days outside,
the minutes, per-type counts and weekends each employee has outside the region, and the runs
and successions that cross its edges. HiGHS solves it on one thread from the roster as a
feasible start, so a region given no time returns the roster it started from.

The solve uses it for one region, every employee on every weekend day (`weekend_cells`): on
Instance 13 each split weekend is a short slot (decision 0044), and the walk ends with one or
two more than a plan of the weekends needs; a MIP over the weekend days finds such a plan in
seconds (decision 0048). `bench/exact_regions.py` uses it for any region.

Parameters of `Region`: `arrays`, the problem's arrays by the names of the C struct's fields
(`length`, `forbidden`, `max_shifts`, ..., `cover_over`; a compiled `Problem`'s attributes
have the same names); `n_weekends`; `roster` [E, D], -1 off; `free` [E, D] bool, the cells
the MIP may change. `Region.solve(seconds, stop)` returns the region's best roster, or None
when HiGHS has none; `stop` is polled by HiGHS's interrupt callback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import highspy
import numpy as np
import numpy.typing as npt

__all__ = ["RULE_ARRAYS", "Region", "weekend_cells"]

INF = highspy.kHighsInf
# A term of a row: a coefficient times a constant (0/1 of a fixed cell) or a sum of columns.
Term = tuple[float, "int | list[int]"]
# The problem's arrays a region's rules read (a compiled Problem's attributes of these names).
RULE_ARRAYS = (
    "length", "forbidden", "max_shifts", "min_minutes", "max_minutes", "max_consec",
    "min_consec", "min_off", "max_weekends", "day_off", "weekend", "on_ptr", "on_shift",
    "on_weight", "off_ptr", "off_shift", "off_weight", "cover_req", "cover_under", "cover_over",
)


def weekend_cells(weekend: npt.ArrayLike, shape: tuple[int, int], extra: int = 0,
                  ) -> npt.NDArray[np.bool_]:
    """Every employee on every weekend day (`weekend[d] >= 0`) and the `extra` days either side
    of each."""
    days = np.zeros(shape[1], bool)
    for d in np.nonzero(np.asarray(weekend) >= 0)[0]:
        days[max(0, d - extra):d + extra + 1] = True
    free = np.zeros(shape, bool)
    free[:, days] = True
    return free


@dataclass
class _Model:
    """A region's MIP in row form, built column by column."""

    cost: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integral: list[bool] = field(default_factory=list)
    rows: list[tuple[float, float, dict[int, float]]] = field(default_factory=list)
    offset: float = 0.0

    def column(self, cost: float, upper: float = 1.0, integral: bool = True) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        self.integral.append(integral)
        return len(self.cost) - 1

    def row(self, terms: list[Term], lower: float, upper: float) -> None:
        """lower <= sum of terms <= upper; the constants move to the bounds."""
        constant = 0.0
        entries: dict[int, float] = {}
        for coef, y in terms:
            if isinstance(y, list):
                for c in y:
                    entries[c] = entries.get(c, 0.0) + coef
            else:
                constant += coef * y
        if entries:
            self.rows.append((lower - constant, upper - constant, entries))

    def highs_lp(self) -> Any:
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(self.cost), len(self.rows)
        lp.col_cost_ = np.array(self.cost)
        lp.col_lower_ = np.zeros(len(self.cost))
        lp.col_upper_ = np.array(self.upper)
        lp.row_lower_ = np.array([lo for lo, _, _ in self.rows])
        lp.row_upper_ = np.array([hi for _, hi, _ in self.rows])
        starts: list[int] = [0]
        index: list[int] = []
        value: list[float] = []
        for _, _, entries in self.rows:
            index.extend(entries)
            value.extend(entries.values())
            starts.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, np.int32)
        lp.a_matrix_.index_ = np.array(index, np.int32)
        lp.a_matrix_.value_ = np.array(value, np.float64)
        lp.integrality_ = [highspy.HighsVarType.kInteger if i
                           else highspy.HighsVarType.kContinuous for i in self.integral]
        lp.offset_ = self.offset
        return lp


class Region:
    """The MIP of the cells `free` ([E, D] bool) of `roster`, every other cell fixed."""

    def __init__(self, arrays: Mapping[str, npt.ArrayLike], n_weekends: int,
                 roster: npt.NDArray[np.int32], free: npt.NDArray[np.bool_]) -> None:
        self.a = {name: np.asarray(arrays[name]) for name in RULE_ARRAYS}
        self.n_weekends = int(n_weekends)
        self.r, self.free = roster, free
        self.E, self.D = roster.shape
        self.S = int(self.a["length"].size)
        self.a["max_shifts"] = self.a["max_shifts"].reshape(self.E, self.S)
        self.a["forbidden"] = self.a["forbidden"].reshape(self.S, self.S)
        self.a["day_off"] = self.a["day_off"].reshape(self.E, self.D)
        self.m = _Model()
        self.x: dict[tuple[int, int, int], int] = {}
        # the columns the roster's cells imply, for a start HiGHS accepts as feasible: each
        # weekend indicator with the cells it covers, each cover row's short and extra
        self.weekend_of: list[tuple[int, list[int]]] = []
        self.slack_of: list[tuple[int, int, float, list[int]]] = []
        emps = sorted(set(np.nonzero(free)[0].tolist()))
        for e in emps:
            self._cells(e)
        for e in emps:
            self._rules(e)
        self._cover()

    @classmethod
    def of_problem(cls, problem: Any, roster: npt.NDArray[np.int32],
                   free: npt.NDArray[np.bool_]) -> Region:
        """The region of a compiled `Problem` (its attributes are the arrays by name)."""
        arrays = {name: getattr(problem, name) for name in RULE_ARRAYS}
        return cls(arrays, int(problem.n_weekends), roster, free)

    def y(self, e: int, d: int) -> int | list[int]:
        """Works e on d: the cell's columns when free, else 0/1."""
        if self.free[e, d]:
            return [self.x[e, d, t] for t in range(self.S) if (e, d, t) in self.x]
        return int(self.r[e, d] >= 0)

    def _cells(self, e: int) -> None:
        a, D = self.a, self.D
        on_ptr, on_shift, on_weight = a["on_ptr"], a["on_shift"], a["on_weight"]
        off_ptr, off_shift, off_weight = a["off_ptr"], a["off_shift"], a["off_weight"]
        for d in np.nonzero(self.free[e])[0].tolist():
            if a["day_off"][e, d]:
                continue
            c = e * D + d
            for t in range(self.S):
                if a["max_shifts"][e, t] > 0:
                    off = sum(int(off_weight[k]) for k in range(off_ptr[c], off_ptr[c + 1])
                              if off_shift[k] == t)
                    self.x[e, d, t] = self.m.column(float(off))
            for k in range(on_ptr[c], on_ptr[c + 1]):  # weight w unless x[asked] = 1
                self.m.offset += float(on_weight[k])
                col = self.x.get((e, d, int(on_shift[k])))
                if col is not None:
                    self.m.cost[col] -= float(on_weight[k])

    def _rules(self, e: int) -> None:
        a, D, S, m, r, free = self.a, self.D, self.S, self.m, self.r, self.free
        forbidden = a["forbidden"]
        days = np.nonzero(free[e])[0].tolist()
        for d in days:
            cells = self.y(e, d)
            if isinstance(cells, list) and len(cells) > 1:
                m.row([(1, cells)], -INF, 1)
        for d in range(max(days[0] - 1, 0), min(days[-1] + 1, D - 1)):
            if not (free[e, d] or free[e, d + 1]):
                continue
            for t in range(S):
                if free[e, d]:
                    if (e, d, t) not in self.x:
                        continue
                    today: Term = (1, [self.x[e, d, t]])
                elif r[e, d] == t:
                    today = (1, 1)
                else:
                    continue
                if free[e, d + 1]:
                    after = [self.x[e, d + 1, u] for u in range(S)
                             if forbidden[t, u] and (e, d + 1, u) in self.x]
                    if after:
                        m.row([today, (1, after)], -INF, 1)
                elif r[e, d + 1] >= 0 and forbidden[t, r[e, d + 1]]:
                    m.row([today], -INF, 0)
        k = int(a["max_consec"][e])
        for s in range(max(0, days[0] - k), min(days[-1] + 1, D - k)):
            m.row([(1, self.y(e, d)) for d in range(s, s + k + 1)], -INF, k)
        # A run (of work, or of days off) that starts on d lasts through d+j, unless it
        # touches the horizon's last day first; runs touching either edge are exempt.
        for least, work in ((int(a["min_consec"][e]), True), (int(a["min_off"][e]), False)):
            for d in range(1, D):
                for j in range(1, min(least, D - d)):
                    if not (free[e, d - 1] or free[e, d] or free[e, d + j]):
                        continue
                    sign = 1 if work else -1
                    m.row([(sign, self.y(e, d)), (-sign, self.y(e, d - 1)),
                           (-sign, self.y(e, d + j))], -INF, 0 if work else 1)
        self._weekends(e)
        fixed = [d for d in range(D) if not free[e, d]]
        for t in range(S):
            cols = [self.x[e, d, t] for d in days if (e, d, t) in self.x]
            left = int(a["max_shifts"][e, t]) - sum(1 for d in fixed if r[e, d] == t)
            if cols and left < len(cols):
                m.row([(1, cols)], -INF, left)
        length = a["length"]
        outside = sum(int(length[r[e, d]]) for d in fixed if r[e, d] >= 0)
        minutes: list[Term] = [(float(length[t]), [c]) for (f, _, t), c in self.x.items()
                               if f == e]
        m.row(minutes, int(a["min_minutes"][e]) - outside, int(a["max_minutes"][e]) - outside)

    def _weekends(self, e: int) -> None:
        m, r, free = self.m, self.r, self.free
        weekend = self.a["weekend"]
        worked_outside, cols = 0, []
        for k in range(self.n_weekends):
            days = np.nonzero(weekend == k)[0].tolist()
            if any(not free[e, d] and r[e, d] >= 0 for d in days):
                worked_outside += 1
            elif any(free[e, d] for d in days):
                w = m.column(0.0)
                cols.append(w)
                held: list[int] = []
                for d in days:
                    cells = self.y(e, d)
                    if isinstance(cells, list) and cells:
                        m.row([(1, cells), (-1, [w])], -INF, 0)
                        held.extend(cells)
                self.weekend_of.append((w, held))
        if cols:
            m.row([(1, [c]) for c in cols], -INF,
                  int(self.a["max_weekends"][e]) - worked_outside)

    def _cover(self) -> None:
        D, S = self.D, self.S
        req = self.a["cover_req"].reshape(D, S)
        under = self.a["cover_under"].reshape(D, S)
        over = self.a["cover_over"].reshape(D, S)
        for d in sorted(set(np.nonzero(self.free)[1].tolist())):
            for t in range(S):
                cols = [c for e in range(self.E) if (c := self.x.get((e, d, t))) is not None]
                fixed = int(np.sum((~self.free[:, d]) & (self.r[:, d] == t)))
                short = self.m.column(float(under[d, t]), INF, False)
                extra = self.m.column(float(over[d, t]), INF, False)
                need = float(req[d, t] - fixed)
                self.m.row([(1, cols), (1, [short]), (-1, [extra])], need, need)
                self.slack_of.append((short, extra, need, cols))

    def start_values(self) -> list[float]:
        """The roster as a value of every column: its cells, and the weekend indicators and
        cover slacks they imply (left at 0, they would make the start infeasible, and HiGHS
        drops an infeasible start)."""
        values = [0.0] * len(self.m.cost)
        for (e, d, t), c in self.x.items():
            values[c] = float(self.r[e, d] == t)
        for w, held in self.weekend_of:
            values[w] = float(any(values[c] > 0.5 for c in held))
        for short, extra, need, cols in self.slack_of:
            worked = sum(values[c] for c in cols)
            values[short] = max(0.0, need - worked)
            values[extra] = max(0.0, worked - need)
        return values

    def solve(self, seconds: float, stop: Callable[[], bool] = lambda: False,
              ) -> npt.NDArray[np.int32] | None:
        """The region's best roster within `seconds` (HiGHS, one thread), the current one as
        its start; None when HiGHS has no solution. HiGHS asks `stop` between its steps and
        ends with the best it has when it says so."""
        h = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
        for option, v in (("output_flag", False), ("threads", 1), ("time_limit", seconds),
                          ("mip_rel_gap", 0.0)):
            h.setOptionValue(option, v)
        h.passModel(self.m.highs_lp())
        start = highspy.HighsSolution()
        start.col_value = self.start_values()  # a list assigned whole: the property is a copy
        start.value_valid = True
        h.setSolution(start)

        def interrupt(event: Any) -> None:
            if stop():
                event.interrupt()

        h.cbMipInterrupt += interrupt
        h.cbSimplexInterrupt += interrupt
        h.run()
        values = h.getSolution().col_value
        if len(values) != len(self.m.cost) or h.getInfo().primal_solution_status != 2:
            return None
        out = self.r.copy()
        out[self.free] = -1
        for (e, d, t), c in self.x.items():
            if values[c] > 0.5:
                out[e, d] = t
        return out
