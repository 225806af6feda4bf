"""Where a Curtois instance's gap is: cover the staff cannot give, or requests.

    .venv/bin/python bench/cover_bounds.py [--instances 1-12] [--solve 10] [--seed 0]

Per instance, three lower bounds on the shifts left uncovered, each from one capacity that the
demand exceeds, whatever the roster:
- types: sum over shift types of demand minus what the staff may work of that type;
- weekends: weekend demand minus (weekends each may work x days in a weekend);
- minutes: demand minus the shifts that fit in everyone's minutes ceiling (shortest type).
Each is a valid bound on its own (their sum is not). With `--solve N` the generetic solver runs
N seconds and the row shows its uncovered count and the rest of its penalty, so a gap reads as
"one shift more uncovered than needed" (the search lost a cover unit) or "requests" (the cover
is at its bound and the polishing is what is missing). Instance 8, for one: the staff may work
74 night shifts against a demand of 86, so 12 are uncovered in every roster, and the whole gap
to its optimum of 1300 is request penalty.

`wk LP` is a fourth bound, on the weekend slots alone and tighter than `wkends`: the linear
programme over every employee's weekend patterns (a value or nothing on each day of a weekend,
from the types the employee may work, not on a fixed day off, no forbidden succession inside
the weekend), each weekend with any day worked spent from the employee's budget, and the
weekend cover. It sees that where Saturday and Sunday ask for different numbers, a budget
spent on a one-day weekend covers one slot, not two: Instance 22 may work 2 640 weekend
shifts against 2 721 asked for (`wkends` 81), yet no plan of its weekends leaves fewer than
249 slots short. It is `-` where the patterns pass `PATTERNS_MAX` (Instance 24's 32 types).

With `--solve`, a second line per instance is the roster's weekend ledger: the weekend slots
left short are the demand the staff's weekends cannot meet, plus every weekend shift the roster
did not spend on a short slot: weekends split (one day of two worked), weekends unspent,
weekend slots over-covered (decision 0038).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import highspy
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_solver import bench_dir, optimum_table, parse_range, uncovered  # noqa: E402

from shared.roster.compiled import Problem, compile_request  # noqa: E402
from shared.roster.curtois import load_curtois  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402


@dataclass(frozen=True)
class CoverBounds:
    demand: int
    types: int
    weekends: int
    minutes: int

    @property
    def best(self) -> int:
        return max(self.types, self.weekends, self.minutes)


def weekend_capacity(p: Problem) -> int:
    """The shifts the staff may work on weekend days: each one's weekends x days a weekend."""
    weekend = np.asarray(p.weekend)
    if not (weekend >= 0).any():
        return 0
    days_per_weekend = int(np.bincount(weekend[weekend >= 0]).max())
    return sum(min(int(m), p.n_weekends) for m in p.max_weekends) * days_per_weekend


def cover_bounds(p: Problem) -> CoverBounds:
    req = np.asarray(p.cover_req, dtype=np.int64)
    per_type = np.minimum(np.asarray(p.max_shifts, dtype=np.int64), p.n_days).sum(axis=0)
    types = int(np.maximum(req.sum(axis=0) - per_type, 0).sum())
    on_weekend = np.asarray(p.weekend) >= 0
    weekends = max(0, int(req[on_weekend].sum()) - weekend_capacity(p))
    shortest = int(np.min(p.length))
    fit = sum(int(m) // shortest for m in p.max_minutes)
    minutes = max(0, int(req.sum()) - fit)
    return CoverBounds(int(req.sum()), types, weekends, minutes)


# Patterns (employee x weekend x values of its days) above which `weekend_patterns_bound` gives
# none: its LP would take minutes to build and solve
PATTERNS_MAX = 400_000


def weekend_patterns(p: Problem) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """Every (employee, weekend, values of the weekend's days) with a day worked: each value a
    type the employee may work, or -1 (off, and always off on a fixed day off); no forbidden
    succession inside the weekend."""
    e_n, d_n, s_n = p.n_employees, p.n_days, p.n_shifts
    allowed = np.asarray(p.max_shifts).reshape(e_n, s_n) > 0
    day_off = np.asarray(p.day_off).reshape(e_n, d_n).astype(bool)
    forbidden = np.asarray(p.forbidden).reshape(s_n, s_n).astype(bool)
    days_of = weekend_days(p)
    for e in range(e_n):
        values = [-1, *np.nonzero(allowed[e])[0].tolist()]
        for w, days in enumerate(days_of):
            for combo in itertools.product(*([-1] if day_off[e, d] else values for d in days)):
                if all(v < 0 for v in combo) or any(
                        a >= 0 and b >= 0 and d2 == d1 + 1 and forbidden[a, b]
                        for (d1, a), (d2, b) in itertools.pairwise(zip(days, combo, strict=True))):
                    continue
                yield e, w, combo


def weekend_days(p: Problem) -> list[list[int]]:
    """The days of each weekend, in order."""
    weekend = np.asarray(p.weekend)
    return [np.nonzero(weekend == w)[0].tolist() for w in range(p.n_weekends)]


def pattern_count(p: Problem) -> int:
    """An upper bound on `weekend_patterns`' count: each employee's values to the days."""
    allowed = np.asarray(p.max_shifts).reshape(p.n_employees, p.n_shifts) > 0
    return sum((int(allowed[e].sum()) + 1) ** len(days)
               for e in range(p.n_employees) for days in weekend_days(p))


def weekend_patterns_bound(p: Problem) -> float | None:
    """The fewest weekend slots any roster leaves short, by the LP over weekend patterns (the
    module's docstring); None above PATTERNS_MAX patterns or without weekends."""
    d_n, s_n = p.n_days, p.n_shifts
    req = np.asarray(p.cover_req, dtype=np.int64).reshape(d_n, s_n)
    days_of = weekend_days(p)
    if not days_of or pattern_count(p) > PATTERNS_MAX:
        return None
    asked = np.argwhere((np.asarray(p.weekend) >= 0)[:, None] & (req > 0))
    slot = {(int(d), int(s)): i for i, (d, s) in enumerate(asked)}
    n_slots = len(slot)
    # rows: the weekend slots' cover, then per employee its budget and one row per weekend
    # (at most one pattern); columns: a short slot each, then the patterns
    lower = [float(req[d, s]) for d, s in slot]
    upper: list[float] = [highspy.kHighsInf] * n_slots
    cost = [1.0] * n_slots
    starts, index = list(range(n_slots + 1)), list(range(n_slots))
    budget: dict[int, int] = {}
    one: dict[tuple[int, int], int] = {}
    for e, w, combo in weekend_patterns(p):
        if e not in budget:
            budget[e] = len(lower)
            lower.append(-highspy.kHighsInf)
            upper.append(float(p.max_weekends[e]))
        if (e, w) not in one:
            one[e, w] = len(lower)
            lower.append(-highspy.kHighsInf)
            upper.append(1.0)
        days = days_of[w]
        index += [one[e, w], budget[e]] + [slot[d, v] for d, v in zip(days, combo, strict=True)
                                           if v >= 0 and (d, v) in slot]
        starts.append(len(index))
        cost.append(0.0)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = len(cost), len(lower)
    lp.col_cost_ = np.array(cost)
    lp.col_lower_ = np.zeros(len(cost))
    lp.col_upper_ = np.full(len(cost), highspy.kHighsInf)
    lp.row_lower_, lp.row_upper_ = np.array(lower), np.array(upper)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = np.array(starts, np.int32)
    lp.a_matrix_.index_ = np.array(index, np.int32)
    lp.a_matrix_.value_ = np.ones(len(index))
    h = highspy.Highs()  # type: ignore[no-untyped-call, unused-ignore]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("solver", "ipm")  # simplex: minutes on Instance 22's degenerate LP
    h.passModel(lp)
    h.run()
    return float(h.getInfo().objective_function_value)


@dataclass(frozen=True)
class WeekendLedger:
    """Where a roster's weekend capacity goes, in shifts (two-day weekends)."""

    demand: int  # shifts asked for on weekend days
    capacity: int  # shifts the staff may work on weekends (`weekend_capacity`)
    split: int  # weekends of one day worked: a weekend of the budget spent on one shift
    unspent: int  # shifts of the weekends nobody worked though they could
    over: int  # weekend shifts beyond a slot's demand
    short: int  # weekend slots left short, counted on the roster itself

    @property
    def balances(self) -> bool:
        """short = demand - capacity + split + unspent + over, when every weekend has two days
        and nobody works more weekends than allowed (then it is an identity)."""
        return self.short == self.demand - self.capacity + self.split + self.unspent + self.over


def weekend_ledger(p: Problem, roster: np.ndarray) -> WeekendLedger:
    weekend = np.asarray(p.weekend)
    on_weekend = weekend >= 0
    req = np.asarray(p.cover_req, dtype=np.int64)
    counts = np.asarray(cover_counts(p, roster.tolist()), dtype=np.int64)
    days_worked = np.zeros((p.n_employees, p.n_weekends), dtype=np.int64)
    working = (roster[:, on_weekend] >= 0).astype(np.int64)
    np.add.at(days_worked.T, weekend[on_weekend], working.T)
    allowed = np.minimum(np.asarray(p.max_weekends, dtype=np.int64), p.n_weekends)
    worked = (days_worked > 0).sum(axis=1)
    return WeekendLedger(
        demand=int(req[on_weekend].sum()),
        capacity=weekend_capacity(p),
        split=int((days_worked == 1).sum()),
        unspent=int(np.maximum(allowed - worked, 0).sum()) * 2,
        over=int(np.maximum(counts - req, 0)[on_weekend].sum()),
        short=int(np.maximum(req - counts, 0)[on_weekend].sum()),
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--instances", default="1-12")
    ap.add_argument("--solve", type=float, default=0.0,
                    help="also solve each instance this many seconds and show the split")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    folder = bench_dir()
    optimum = optimum_table(folder)
    header = (f"{'instance':<12}{'optimum':>8}{'demand':>7}{'types':>6}{'wkends':>7}"
              f"{'minutes':>8}{'bound':>6}{'wk LP':>7}")
    if args.solve:
        header += f"{'objective':>10}{'uncovered':>10}{'rest':>6}"
    print(header)
    print("-" * len(header))
    for i in parse_range(args.instances):
        p = compile_request(load_curtois(folder / f"Instance{i}.txt"))
        b = cover_bounds(p)
        line = (f"{f'Instance{i}':<12}{optimum.get(f'Instance{i}', '-'):>8}{b.demand:>7}"
                f"{b.types:>6}{b.weekends:>7}{b.minutes:>8}{b.best:>6}")
        lp = weekend_patterns_bound(p)
        line += f"{'-' if lp is None else format(lp, '.1f'):>7}"
        if args.solve:
            from csolver import solve_generetic
            from shared.roster.evaluator import evaluate
            from shared.roster.solving import SolveControl

            run = solve_generetic(p, time_limit=args.solve, seed=args.seed, control=SolveControl())
            roster = np.asarray(run.roster)
            ev = evaluate(p, roster)
            short, short_penalty = uncovered(p, roster)
            line += f"{ev.penalty:>10}{short:>10}{ev.penalty - short_penalty:>6}"
            w = weekend_ledger(p, roster)
            line += (f"\n{'':<12}weekends: {w.short} short"
                     f" {'=' if w.balances else '(not a balance)'} demand {w.demand}"
                     f" - capacity {w.capacity} + split {w.split} + unspent {w.unspent}"
                     f" + over {w.over}")
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
