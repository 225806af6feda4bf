"""Prove the optimum of a small instance with OR-Tools CP-SAT, to anchor the generetic figures.

    pip install ortools   # not a dependency of ShiftStream: an analysis tool only
    .venv/bin/python bench/cpsat_optimum.py --generated 1 [--time 120]
    .venv/bin/python bench/cpsat_optimum.py --curtois bench/curtois/Instance1.txt

The same rules as shared/roster/rules.py, stated as constraints on the compiled arrays: one value
per cell, fixed days off, skills, per-type maximum, the minutes window, rotation, run bounds with
the horizon exemptions, the weekend limit; requests and cover are the objective. Prints the
status (OPTIMAL = proven), the objective and the bound. Generated 80 x 14-day instances (seeds
1-3) are proven in 1-2 s (optima 3, 2, 4); Curtois Instances 6 and 8 are not proven in 10 min.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
from ortools.sat.python import cp_model  # noqa: E402

from shared.roster.compiled import Problem, compile_request  # noqa: E402


class _Flat:
    """The compiled arrays, flattened to the C layout (row-major) that the indexes below use."""

    def __init__(self, p: Problem) -> None:
        self._p = p

    def __getattr__(self, name: str) -> np.ndarray:
        return np.asarray(getattr(self._p, name)).ravel()


def build(p: Problem) -> tuple[cp_model.CpModel, list[cp_model.LinearExprT]]:
    E, D, S = p.n_employees, p.n_days, p.n_shifts
    a = _Flat(p)
    m = cp_model.CpModel()
    x = {(e, d, s): m.NewBoolVar(f"x{e}_{d}_{s}")
         for e in range(E) for d in range(D) for s in range(S)}
    work = {(e, d): m.NewBoolVar(f"w{e}_{d}") for e in range(E) for d in range(D)}

    def is_(e: int, d: int, on: bool) -> cp_model.IntVar:
        return work[e, d] if on else work[e, d].Not()

    for e in range(E):
        for d in range(D):
            m.Add(sum(x[e, d, s] for s in range(S)) == work[e, d])
            if a.day_off[e * D + d]:
                m.Add(work[e, d] == 0)
        for s in range(S):
            m.Add(sum(x[e, d, s] for d in range(D)) <= int(a.max_shifts[e * S + s]))
        minutes = sum(int(a.length[s]) * x[e, d, s] for d in range(D) for s in range(S))
        m.Add(minutes <= int(a.max_minutes[e]))
        m.Add(minutes >= int(a.min_minutes[e]))
        for d in range(D - 1):
            for u in range(S):
                for v in range(S):
                    if a.forbidden[u * S + v]:
                        m.AddBoolOr([x[e, d, u].Not(), x[e, d + 1, v].Not()])
        most = int(a.max_consec[e])
        for d in range(D - most):
            m.Add(sum(work[e, d + k] for k in range(most + 1)) <= most)
        # a run of either kind shorter than its minimum, bounded inside the horizon on both sides
        for least, on in ((int(a.min_consec[e]), True), (int(a.min_off[e]), False)):
            for length in range(1, least):
                for d in range(1, D - length):
                    m.AddBoolOr([is_(e, d - 1, on)] + [is_(e, d + k, not on) for k in range(length)]
                                + [is_(e, d + length, on)])
        weekends = []
        for w in range(p.n_weekends):
            worked = m.NewBoolVar(f"wk{e}_{w}")
            m.AddMaxEquality(worked, [work[e, d] for d in range(D) if a.weekend[d] == w])
            weekends.append(worked)
        m.Add(sum(weekends) <= int(a.max_weekends[e]))
    cost: list[cp_model.LinearExprT] = []
    for c in range(E * D):
        e, d = divmod(c, D)
        for i in range(int(a.on_ptr[c]), int(a.on_ptr[c + 1])):
            cost.append(int(a.on_weight[i]) * (1 - x[e, d, int(a.on_shift[i])]))
        for i in range(int(a.off_ptr[c]), int(a.off_ptr[c + 1])):
            cost.append(int(a.off_weight[i]) * x[e, d, int(a.off_shift[i])])
    for d in range(D):
        for s in range(S):
            k = d * S + s
            short, over = m.NewIntVar(0, E + 10**6, ""), m.NewIntVar(0, E, "")
            m.Add(sum(x[e, d, s] for e in range(E)) + short - over == int(a.cover_req[k]))
            cost += [int(a.cover_under[k]) * short, int(a.cover_over[k]) * over]
    m.Minimize(sum(cost))
    return m, cost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--generated", type=int, metavar="SEED",
                     help="generate(employees=80, shifts=200, seed=SEED)")
    src.add_argument("--curtois", type=Path, metavar="FILE", help="a Curtois & Qu instance file")
    ap.add_argument("--time", type=float, default=120.0, help="CP-SAT time limit in seconds")
    args = ap.parse_args()
    if args.generated is not None:
        from shared.roster.generator import generate

        problem = compile_request(generate(employees=80, shifts=200, seed=args.generated))
    else:
        from shared.roster.curtois import load_curtois

        problem = compile_request(load_curtois(args.curtois))
    model, _ = build(problem)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = args.time
    status = solver.Solve(model)
    print(f"{solver.StatusName(status)} objective {solver.ObjectiveValue():.0f} "
          f"bound {solver.BestObjectiveBound():.0f} in {solver.WallTime():.1f} s")
    return 0 if status in (cp_model.OPTIMAL, cp_model.FEASIBLE) else 1


if __name__ == "__main__":
    raise SystemExit(main())
