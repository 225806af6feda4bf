"""How much an exact re-optimisation of one region of a roster gains: the window test.

    .venv/bin/python bench/exact_regions.py --instance 22 --solve 60 --seed 1 --windows 14
    .venv/bin/python bench/exact_regions.py --instance 24 --solve 60 --employees 2 --draws 6
    .venv/bin/python bench/exact_regions.py --instance 1 --windows 14    # the whole horizon
    .venv/bin/python bench/exact_regions.py --instance 22 --solve 60 --weekends 0 --limit 120

A roster of the generetic solver (`--solve S` seconds, or `--roster R.npy` saved by a previous
run) is taken as fixed except for one region, and that region is solved as a MIP by HiGHS
under every rule of the request, the rest of the roster entering as constants: the cover of the
fixed employees, the minutes, per-type counts and weekends each employee already has outside the
region, and the runs and successions that cross its edges. A region is either a window of days
with every employee (`--windows W`, sliding by `--step`, default W/2) or `--employees G`
employees drawn at random over the whole horizon (`--draws N` of them), or every employee on
every weekend day and the `--weekends X` days either side of each (weekdays further away fixed:
which weekends each employee works, re-planned over the whole horizon at once, decision 0047).
A better region is kept,
so the regions run as a fix-and-optimise pass. Per region it prints the penalty after it (the
evaluator's, which checks the MIP's rows against the rules) and the time HiGHS took.

This answers one question about a search: is the roster it ends with locally optimal over
regions of this shape? Decision 0034 has the answer for Instances 22 and 24 at 60 s (they are:
a 14-day window over all staff gains at most ~120 points, a pair of employees over the year
~25), so their gap to the optimum is not local. With `--splits` it also counts the split
weekends (one day worked of two) by what stops the employee from working the other day.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import highspy
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from shared.roster.compiled import Problem, compile_request  # noqa: E402
from shared.roster.curtois import bench_dir, load_curtois  # noqa: E402
from shared.roster.evaluator import evaluate  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402

INF = highspy.kHighsInf
# A term of a row: a coefficient times a constant (0/1 of a fixed cell) or a sum of columns.
Term = tuple[float, "int | list[int]"]


@dataclass
class Model:
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


class Region:
    """The MIP of the cells `free` ([E, D] bool) of `roster`, every other cell fixed."""

    def __init__(self, p: Problem, roster: np.ndarray, free: np.ndarray) -> None:
        self.p, self.r, self.free = p, roster, free
        self.E, self.D = roster.shape
        self.S = len(p.shift_ids)
        self.m = Model()
        self.x: dict[tuple[int, int, int], int] = {}
        # the columns the roster's cells imply, for a start HiGHS accepts as feasible: each
        # weekend indicator with the cells it covers, each cover row's short and extra
        self.weekend_of: list[tuple[int, list[int]]] = []
        self.slack_of: list[tuple[int, int, float, list[int]]] = []
        self.max_shifts = np.asarray(p.max_shifts)
        emps = sorted(set(np.nonzero(free)[0].tolist()))
        for e in emps:
            self._cells(e)
        for e in emps:
            self._rules(e)
        self._cover()

    def y(self, e: int, d: int) -> int | list[int]:
        """Works e on d: the cell's columns when free, else 0/1."""
        if self.free[e, d]:
            return [self.x[e, d, t] for t in range(self.S) if (e, d, t) in self.x]
        return int(self.r[e, d] >= 0)

    def _cells(self, e: int) -> None:
        p, D = self.p, self.D
        for d in np.nonzero(self.free[e])[0].tolist():
            if p.day_off[e, d]:
                continue
            c = e * D + d
            for t in range(self.S):
                if self.max_shifts[e, t] > 0:
                    off = sum(int(p.off_weight[k]) for k in range(p.off_ptr[c], p.off_ptr[c + 1])
                              if p.off_shift[k] == t)
                    self.x[e, d, t] = self.m.column(float(off))
            for k in range(p.on_ptr[c], p.on_ptr[c + 1]):  # weight w unless x[asked] = 1
                self.m.offset += float(p.on_weight[k])
                col = self.x.get((e, d, int(p.on_shift[k])))
                if col is not None:
                    self.m.cost[col] -= float(p.on_weight[k])

    def _rules(self, e: int) -> None:
        p, D, S, m, r, free = self.p, self.D, self.S, self.m, self.r, self.free
        forbidden = np.asarray(p.forbidden)
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
        k = int(p.max_consec[e])
        for s in range(max(0, days[0] - k), min(days[-1] + 1, D - k)):
            m.row([(1, self.y(e, d)) for d in range(s, s + k + 1)], -INF, k)
        # A run (of work, or of days off) that starts on d lasts through d+j, unless it
        # touches the horizon's last day first; runs touching either edge are exempt.
        for least, work in ((int(p.min_consec[e]), True), (int(p.min_off[e]), False)):
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
            left = int(self.max_shifts[e, t]) - sum(1 for d in fixed if r[e, d] == t)
            if cols and left < len(cols):
                m.row([(1, cols)], -INF, left)
        outside = sum(int(p.length[r[e, d]]) for d in fixed if r[e, d] >= 0)
        minutes: list[Term] = [(float(p.length[t]), [c]) for (f, _, t), c in self.x.items()
                               if f == e]
        m.row(minutes, int(p.min_minutes[e]) - outside, int(p.max_minutes[e]) - outside)

    def _weekends(self, e: int) -> None:
        p, m, r, free = self.p, self.m, self.r, self.free
        weekend = np.asarray(p.weekend)
        worked_outside, cols = 0, []
        for k in range(p.n_weekends):
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
            m.row([(1, [c]) for c in cols], -INF, int(p.max_weekends[e]) - worked_outside)

    def _cover(self) -> None:
        p, D, S = self.p, self.D, self.S
        req = np.asarray(p.cover_req).reshape(D, S)
        under = np.asarray(p.cover_under).reshape(D, S)
        over = np.asarray(p.cover_over).reshape(D, S)
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

    def solve(self, seconds: float) -> np.ndarray | None:
        """The region's best roster within `seconds` (HiGHS, one thread), the current one as
        its start; None when HiGHS has no solution."""
        m = self.m
        lp = highspy.HighsLp()
        lp.num_col_, lp.num_row_ = len(m.cost), len(m.rows)
        lp.col_cost_ = np.array(m.cost)
        lp.col_lower_ = np.zeros(len(m.cost))
        lp.col_upper_ = np.array(m.upper)
        lp.row_lower_ = np.array([lo for lo, _, _ in m.rows])
        lp.row_upper_ = np.array([hi for _, hi, _ in m.rows])
        starts: list[int] = [0]
        index: list[int] = []
        value: list[float] = []
        for _, _, entries in m.rows:
            index.extend(entries)
            value.extend(entries.values())
            starts.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.start_ = np.array(starts, np.int32)
        lp.a_matrix_.index_ = np.array(index, np.int32)
        lp.a_matrix_.value_ = np.array(value, np.float64)
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in m.integral]
        lp.offset_ = m.offset
        h = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
        for option, v in (("output_flag", False), ("threads", 1), ("time_limit", seconds),
                          ("mip_rel_gap", 0.0)):
            h.setOptionValue(option, v)
        h.passModel(lp)
        start = highspy.HighsSolution()
        start.col_value = self.start_values()  # a list assigned whole: the property is a copy
        start.value_valid = True
        h.setSolution(start)
        h.run()
        values = h.getSolution().col_value
        if len(values) != len(m.cost) or h.getInfo().primal_solution_status != 2:
            return None
        out = self.r.copy()
        out[self.free] = -1
        for (e, d, t), c in self.x.items():
            if values[c] > 0.5:
                out[e, d] = t
        return out


def improve(p: Problem, roster: np.ndarray, regions: list[np.ndarray], seconds: float,
            log: bool = True) -> np.ndarray:
    """Each region in turn re-optimised exactly; kept when feasible and no worse."""
    best = evaluate(p, roster)
    for free in regions:
        started = time.perf_counter()
        candidate = Region(p, roster, free).solve(seconds)
        took = time.perf_counter() - started
        ev = evaluate(p, candidate) if candidate is not None else None
        days = np.nonzero(free.any(0))[0]
        who = np.nonzero(free.any(1))[0]
        if log:
            span = (f"days {days[0]}-{days[-1]}" if len(days) == days[-1] - days[0] + 1
                    else f"{len(days)} days in {days[0]}-{days[-1]}")
            what = (span if len(who) == roster.shape[0]
                    else f"employees {','.join(p.employee_ids[e] for e in who)}")
            got = "none" if ev is None else f"{ev.penalty} (hard {ev.hard_violations})"
            print(f"{what:<32} {got:>20} {took:7.1f} s", flush=True)
        if candidate is not None and ev is not None and ev.hard_violations == 0 \
                and ev.penalty <= best.penalty:
            roster, best = candidate, ev
    return roster


def weekend_region(p: Problem, shape: tuple[int, int], extra: int) -> np.ndarray:
    """Every employee on every weekend day and the `extra` days either side of each."""
    weekend = np.asarray(p.weekend)
    days = np.zeros(shape[1], bool)
    for d in np.nonzero(weekend >= 0)[0]:
        days[max(0, d - extra):d + extra + 1] = True
    free = np.zeros(shape, bool)
    free[:, days] = True
    return free


def split_weekends(p: Problem, roster: np.ndarray) -> collections.Counter[str]:
    """Split weekends (one of two days worked) by what keeps the other day off."""
    E, D = roster.shape
    S = len(p.shift_ids)
    req = np.asarray(p.cover_req).reshape(D, S)
    cnt = np.asarray(cover_counts(p, roster.tolist())).reshape(D, S)
    max_shifts = np.asarray(p.max_shifts).reshape(E, S)
    forbidden = np.asarray(p.forbidden).reshape(S, S)
    weekend = np.asarray(p.weekend)
    why: collections.Counter[str] = collections.Counter()
    for e in range(E):
        row = roster[e]
        minutes = sum(int(p.length[v]) for v in row if v >= 0)
        for k in range(p.n_weekends):
            days = np.nonzero(weekend == k)[0].tolist()
            if len(days) != 2 or (row[days[0]] >= 0) == (row[days[1]] >= 0):
                continue
            d = days[1] if row[days[0]] >= 0 else days[0]
            reasons = []
            takers = [t for t in range(S) if cnt[d, t] < req[d, t] and max_shifts[e, t] > 0]
            fits = [t for t in takers
                    if (d == 0 or row[d - 1] < 0 or not forbidden[row[d - 1], t])
                    and (d == D - 1 or row[d + 1] < 0 or not forbidden[t, row[d + 1]])
                    and (row == t).sum() < max_shifts[e, t]]
            if not takers:
                reasons.append("nothing short it may work")
            elif not fits:
                reasons.append("succession or type maximum")
            a = b = d
            while a > 0 and row[a - 1] >= 0:
                a -= 1
            while b < D - 1 and row[b + 1] >= 0:
                b += 1
            if b - a + 1 > p.max_consec[e]:
                reasons.append("run too long")
            a = b = d
            while a > 0 and row[a - 1] < 0:
                a -= 1
            while b < D - 1 and row[b + 1] < 0:
                b += 1
            if (a > 0 and 0 < d - a < p.min_off[e]) or (b < D - 1 and 0 < b - d < p.min_off[e]):
                reasons.append("days off too short")
            if minutes + int(np.min(p.length)) > p.max_minutes[e]:
                reasons.append("minutes at their maximum")
            why[", ".join(reasons) or "none: a direct fix exists"] += 1
    return why


def options(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instance", type=int, required=True)
    ap.add_argument("--solve", type=float, default=10.0, help="seconds of generetic first")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--roster", type=Path, help="a saved roster (.npy) instead of a solve")
    ap.add_argument("--save", type=Path, help="save the starting roster here (.npy)")
    ap.add_argument("--windows", type=int, help="windows of this many days, every employee")
    ap.add_argument("--step", type=int, help="days between windows (default: half a window)")
    ap.add_argument("--employees", type=int, help="groups of this many, the whole horizon")
    ap.add_argument("--draws", type=int, default=4, help="groups drawn (with --employees)")
    ap.add_argument("--weekends", type=int,
                    help="every weekend day and this many days either side, every employee")
    ap.add_argument("--limit", type=float, default=10.0, help="HiGHS seconds a region")
    ap.add_argument("--splits", action="store_true", help="classify the split weekends")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = options(argv)
    if sum(x is not None for x in (a.windows, a.employees, a.weekends)) != 1:
        print("exact_regions: give one of --windows, --employees or --weekends", file=sys.stderr)
        return 2
    if a.weekends is not None and a.weekends < 0:
        print("exact_regions: --weekends must be 0 or more days", file=sys.stderr)
        return 2
    p = compile_request(load_curtois(bench_dir() / f"Instance{a.instance}.txt"))
    if a.roster is not None:
        roster = np.load(a.roster).astype(np.int32)
    else:
        from csolver import COLUMN_SHARE, solve_generetic
        from shared.roster.solving import SolveControl

        run = solve_generetic(p, time_limit=a.solve, seed=a.seed, control=SolveControl(),
                              column_share=COLUMN_SHARE)
        roster = np.asarray(run.roster, dtype=np.int32)
    if a.save is not None:
        np.save(a.save, roster)
    E, D = roster.shape
    start = evaluate(p, roster)
    print(f"Instance{a.instance}: start {start.penalty} (hard {start.hard_violations})")
    if a.splits:
        for why, n in split_weekends(p, roster).most_common():
            print(f"  split weekends: {n:4d}  {why}")
    regions = []
    if a.windows is not None:
        step = a.step or max(1, a.windows // 2)
        for first in range(0, D, step):
            free = np.zeros((E, D), bool)
            free[:, first:first + a.windows] = True
            regions.append(free)
            if first + a.windows >= D:
                break
    elif a.weekends is not None:
        regions.append(weekend_region(p, (E, D), a.weekends))
    else:
        rng = np.random.default_rng(a.seed)
        for _ in range(a.draws):
            free = np.zeros((E, D), bool)
            free[rng.choice(E, min(a.employees, E), replace=False)] = True
            regions.append(free)
    started = time.perf_counter()
    end = evaluate(p, improve(p, roster, regions, a.limit))
    print(f"Instance{a.instance}: {start.penalty} -> {end.penalty} (hard {end.hard_violations})"
          f" in {time.perf_counter() - started:.1f} s over {len(regions)} region(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
