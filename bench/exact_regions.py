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
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from csolver.exact_region import Region, weekend_cells  # noqa: E402
from shared.roster.compiled import Problem, compile_request  # noqa: E402
from shared.roster.curtois import bench_dir, load_curtois  # noqa: E402
from shared.roster.evaluator import evaluate  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402


def improve(p: Problem, roster: np.ndarray, regions: list[np.ndarray], seconds: float,
            log: bool = True) -> np.ndarray:
    """Each region in turn re-optimised exactly; kept when feasible and no worse."""
    best = evaluate(p, roster)
    for free in regions:
        started = time.perf_counter()
        candidate = Region.of_problem(p, roster, free).solve(seconds)
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
    return weekend_cells(p.weekend, shape, extra)


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
