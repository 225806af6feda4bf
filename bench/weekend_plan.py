"""A plan of who works which weekend, with which shift, drawn alone and pinned into a solve.

    .venv/bin/python bench/weekend_plan.py [--instance 13] [--plan 60] [--time 60]
        [--seeds 3,4] [--pins-from 0] [--pins-seed 1]

The plan is the MIP over weekend patterns (`cover_bounds.weekend_patterns`: one pattern or
none per employee and weekend). It prices the weekend cover by its weights and the requests
on weekend cells, and keeps each employee's weekend budget, per-type maxima and maximum
minutes. So it is a relaxation of the roster's weekend cells: a proven-optimal plan costs no
more than the weekend cells of any rule-abiding roster (`weekend_cost`). HiGHS gets `--plan`
seconds.

The plan's values are pinned on the weekends it works, types and the other day of a weekend
worked on one day included; the weekends it leaves off stay free, for the walk to work within
its rules. The solver then runs `--time` seconds from nothing for each seed, and the roster is
scored on the unpinned problem. `--pins-from S` pins the weekend cells of an unpinned
S-second solve (of seed `--pins-seed`) instead: what a weekend pattern found together with
the weekdays is worth (decision 0058).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import highspy
import numpy as np
import numpy.typing as npt

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_solver import bench_dir, parse_range, uncovered  # noqa: E402
from cover_bounds import weekend_days, weekend_patterns  # noqa: E402

from csolver.column_generation import request_penalties  # noqa: E402
from shared.roster.compiled import FREE, Problem, compile_request  # noqa: E402
from shared.roster.curtois import load_curtois  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402

REQUEST_ARRAYS = ("on_ptr", "on_shift", "on_weight", "off_ptr", "off_shift", "off_weight")


@dataclass(frozen=True)
class Plan:
    # [E, D]: the days of each weekend the plan works (a type, or -1 on the day off of a
    # weekend worked on one day); FREE on weekdays and on the weekends it leaves off
    pins: npt.NDArray[np.int32]
    objective: float
    bound: float
    optimal: bool
    seconds: float


def cell_costs(p: Problem) -> npt.NDArray[np.int64]:
    """[E, D, S+1]: the requests each cell breaks with each value; index S, or -1, is off."""
    arrays = {name: np.asarray(getattr(p, name)) for name in REQUEST_ARRAYS}
    return request_penalties(arrays, p.n_employees, p.n_days, p.n_shifts)


def runs_fit(p: Problem, e: int, days: list[int], combo: tuple[int, ...]) -> bool:
    """Whether each run of work in the pattern can reach e's minimum run: at full stretch
    through the days around the weekend that are not fixed days off (a run touching the
    horizon's edge is exempt, as in the rules)."""
    least = int(p.min_consec[e])
    day_off = np.asarray(p.day_off).reshape(p.n_employees, p.n_days)[e]
    d_n = p.n_days
    worked = {d for d, v in zip(days, combo, strict=True) if v >= 0}
    off = {d for d, v in zip(days, combo, strict=True) if v < 0}
    for d in sorted(worked):
        if d - 1 in worked:
            continue
        lo, hi = d, d
        while hi + 1 in worked:
            hi += 1
        while lo > 0 and lo - 1 not in off and not day_off[lo - 1]:
            lo -= 1
        while hi < d_n - 1 and hi + 1 not in off and not day_off[hi + 1]:
            hi += 1
        if lo > 0 and hi < d_n - 1 and hi - lo + 1 < least:
            return False
    return True


def weekend_cost(p: Problem, roster: npt.NDArray[np.int32]) -> int:
    """What the plan's objective charges for `roster`'s weekend cells: their requests, and the
    weekend slots short or over-covered at their weights."""
    d_n, s_n = p.n_days, p.n_shifts
    days = [d for ds in weekend_days(p) for d in ds]
    pen = cell_costs(p)
    cost = sum(int(pen[e, d, roster[e, d]]) for e in range(p.n_employees) for d in days)
    counts = np.asarray(cover_counts(p, roster.tolist()), np.int64)
    req = np.asarray(p.cover_req).reshape(d_n, s_n)
    under = np.asarray(p.cover_under).reshape(d_n, s_n)
    over = np.asarray(p.cover_over).reshape(d_n, s_n)
    for d in days:
        cost += int((np.maximum(req[d] - counts[d], 0) * under[d]).sum())
        cost += int((np.maximum(counts[d] - req[d], 0) * over[d]).sum())
    return cost


def weekend_plan(p: Problem, seconds: float) -> Plan:
    """The MIP's best plan within `seconds` (HiGHS, one thread)."""
    e_n, d_n, s_n = p.n_employees, p.n_days, p.n_shifts
    days_of = weekend_days(p)
    req = np.asarray(p.cover_req).reshape(d_n, s_n)
    under = np.asarray(p.cover_under).reshape(d_n, s_n)
    over = np.asarray(p.cover_over).reshape(d_n, s_n)
    max_shifts = np.asarray(p.max_shifts).reshape(e_n, s_n)
    inf = highspy.kHighsInf
    rows: dict[tuple[object, ...], int] = {}
    lower: list[float] = []
    upper: list[float] = []

    def row(key: tuple[object, ...], lo: float, hi: float) -> int:
        if key not in rows:
            rows[key] = len(lower)
            lower.append(lo)
            upper.append(hi)
        return rows[key]

    # a pattern's cost is what it changes against the weekend off: the constant is the offset
    pen = cell_costs(p)
    off_cost = [[int(pen[e, days, -1].sum()) for days in days_of] for e in range(e_n)]
    patterns: list[tuple[int, int, tuple[int, ...]]] = []
    cost: list[float] = []
    upper_col: list[float] = []
    columns: list[dict[int, float]] = []
    for e, w, combo in weekend_patterns(p):
        if not runs_fit(p, e, days_of[w], combo):
            continue
        entries = {row(("one", e, w), -inf, 1.0): 1.0,
                   row(("budget", e), -inf, float(p.max_weekends[e])): 1.0}
        minutes = 0
        for d, v in zip(days_of[w], combo, strict=True):
            if v < 0:
                continue
            minutes += int(p.length[v])
            k = row(("cover", d, v), float(req[d, v]), float(req[d, v]))
            entries[k] = entries.get(k, 0.0) + 1.0
            k = row(("type", e, v), -inf, float(max_shifts[e, v]))
            entries[k] = entries.get(k, 0.0) + 1.0
        entries[row(("minutes", e), -inf, float(p.max_minutes[e]))] = float(minutes)
        patterns.append((e, w, combo))
        cost.append(float(pen[e, days_of[w], list(combo)].sum() - off_cost[e][w]))
        upper_col.append(1.0)
        columns.append(entries)
    # every asked weekend slot has a cover row, even one no pattern serves
    for days in days_of:
        for d in days:
            for v in np.nonzero(req[d] > 0)[0].tolist():
                row(("cover", d, v), float(req[d, v]), float(req[d, v]))
    for key, k in rows.items():
        if key[0] == "cover":
            d, v = int(key[1]), int(key[2])  # type: ignore[call-overload]
            cost += [float(under[d, v]), float(over[d, v])]
            upper_col += [inf, inf]
            columns += [{k: 1.0}, {k: -1.0}]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), len(lower)
    lp.col_cost_ = np.array(cost)
    lp.col_lower_ = np.zeros(len(cost))
    lp.col_upper_ = np.array(upper_col)
    lp.row_lower_, lp.row_upper_ = np.array(lower), np.array(upper)
    lp.offset_ = float(sum(map(sum, off_cost)))
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.cumsum([0] + [len(c) for c in columns]).astype(np.int32)
    lp.a_matrix_.index_ = np.array([k for c in columns for k in sorted(c)], np.int32)
    lp.a_matrix_.value_ = np.array([c[k] for c in columns for k in sorted(c)])
    lp.integrality_ = ([highspy.HighsVarType.kInteger] * len(patterns)
                       + [highspy.HighsVarType.kContinuous] * (len(cost) - len(patterns)))
    h = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
    for option, value in (("output_flag", False), ("threads", 1), ("time_limit", seconds),
                          ("mip_rel_gap", 0.0)):
        h.setOptionValue(option, value)
    started = time.monotonic()
    h.passModel(lp)
    h.run()
    x = h.getSolution().col_value
    if len(x) != len(cost):
        raise RuntimeError(f"the weekend MIP found no plan in {seconds:g} s: give it more time "
                           "(--plan)")
    pins = np.full((e_n, d_n), FREE, np.int32)
    for j, (e, w, combo) in enumerate(patterns):
        if x[j] > 0.5:
            pins[e, days_of[w]] = combo
    info = h.getInfo()
    return Plan(pins, float(info.objective_function_value), float(info.mip_dual_bound),
                h.getModelStatus() == highspy.HighsModelStatus.kOptimal,
                time.monotonic() - started)


def unpin_rowless(p: Problem, pins: npt.NDArray[np.int32], seconds: float = 5.0,
                  ) -> tuple[npt.NDArray[np.int32], list[int]]:
    """`pins` with the weekends of each employee whose pinned row breaks a rule whatever its
    weekdays left free (the exact region of its row, `csolver.exact_region`) unpinned, and
    those employees. The plan's patterns see each weekend alone: not the runs, rests and
    successions that cross from one weekend to the weekdays around it, nor the minutes the
    weekdays need."""
    from csolver.exact_region import Region
    from shared.roster.evaluator import evaluate

    out = pins.copy()
    rowless = []
    roster = np.maximum(pins, -1)
    for e in range(p.n_employees):
        if not (pins[e] >= 0).any():
            continue
        free = np.zeros(pins.shape, bool)
        free[e] = pins[e] == FREE
        row = Region.of_problem(p, roster, free).solve(seconds)
        # the region takes its fixed cells as consistent: a rule broken among the pins alone
        # shows only in the row it returns
        alone = np.full(pins.shape, -1, np.int32)
        if row is not None:
            alone[e] = row[e]
        if row is None or any(m.hard_violations and m.employee == p.employee_ids[e]
                              for r in evaluate(p, alone).rules for m in r.matches):
            out[e] = FREE
            rowless.append(e)
    return out, rowless


def main() -> int:
    from csolver import solve_generetic
    from shared.roster.evaluator import evaluate
    from shared.roster.solving import SolveControl

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--instance", type=int, default=13)
    ap.add_argument("--plan", type=float, default=60.0, help="seconds for the plan's MIP")
    ap.add_argument("--time", type=float, default=60.0, help="seconds for each pinned solve")
    ap.add_argument("--seeds", default="3,4")
    ap.add_argument("--pins-from", type=float, default=0.0,
                    help="pin an unpinned solve's weekend cells (this many seconds)")
    ap.add_argument("--pins-seed", type=int, default=1, help="that solve's seed")
    args = ap.parse_args()
    p = compile_request(load_curtois(bench_dir() / f"Instance{args.instance}.txt"))
    if args.pins_from:
        run = solve_generetic(p, time_limit=args.pins_from, seed=args.pins_seed,
                              control=SolveControl())
        source = np.asarray(run.roster)
        pins = np.full(source.shape, FREE, np.int32)
        weekend = np.asarray(p.weekend) >= 0
        pins[:, weekend] = source[:, weekend]
        print(f"pins: the weekend cells of a {args.pins_from:g} s solve, penalty "
              f"{evaluate(p, source).penalty}, weekend cost {weekend_cost(p, source)}")
    else:
        plan = weekend_plan(p, args.plan)
        pins, rowless = unpin_rowless(p, plan.pins)
        print(f"plan: objective {plan.objective:.0f}, bound {plan.bound:.0f}, "
              f"{'optimal' if plan.optimal else 'not proven'}, {plan.seconds:.1f} s; "
              f"{len(rowless)} employees without a row under it, left unpinned")
    for seed in parse_range(args.seeds):
        run = solve_generetic(dataclasses.replace(p, pin=pins), time_limit=args.time, seed=seed,
                              control=SolveControl())
        roster = np.asarray(run.roster)
        ev = evaluate(p, roster)
        parts = ", ".join(f"{r.rule} {r.penalty}" for r in ev.rules if r.penalty)
        print(f"seed {seed}: penalty {ev.penalty}, {ev.hard_violations} hard, "
              f"{uncovered(p, roster)[0]} short ({parts})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
