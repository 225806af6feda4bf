"""bench/bench_solver.py: the multi-seed mode users compare builds with (issue #4)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_seeds_mode_prints_a_row_per_seed_and_the_means() -> None:
    out = subprocess.run(
        [sys.executable, "bench/bench_solver.py", "--instances", "1-2", "--seeds", "3-4",
         "--jobs", "2", "--evals", "20000", "--no-generated", "--no-parallel",
         "--no-largest"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=True).stdout
    rows = re.findall(r"^Instance(\d+)/s(\d+)\s+(\d+)\s+(\d+)\s+(-?[\d.]+)\s+0\s", out, re.M)
    assert [(i, s) for i, s, *_ in rows] == [("1", "3"), ("1", "4"), ("2", "3"), ("2", "4")]
    gaps: dict[str, list[float]] = {}
    for i, _, opt, objective, gap in rows:
        assert float(gap) == round(100 * (int(objective) - int(opt)) / int(opt), 2)
        gaps.setdefault(i, []).append(100 * (int(objective) - int(opt)) / int(opt))
    means = {i: sum(g) / len(g) for i, g in gaps.items()}
    assert f"1 {means['1']:.2f}, 2 {means['2']:.2f}" in out
    overall = sum(means.values()) / 2
    assert f"mean gap over 2 feasible: {overall:.2f} % (2 seeds each" in out
    # the last column is the run's uncovered shifts; the lottery line counts the runs above
    # each instance's fewest
    short: dict[str, list[int]] = {}
    for i, uncov in re.findall(r"^Instance(\d+)/s\d+\s.*\s(\d+)$", out, re.M):
        short.setdefault(i, []).append(int(uncov))
    assert sorted(short) == ["1", "2"] and all(len(u) == 2 for u in short.values())
    above = ", ".join(f"{i} {sum(u > min(us) for u in us)}/2" for i, us in sorted(short.items()))
    assert f"runs above the fewest uncovered: {above}" in out


def test_cover_bounds_name_the_capacity_each_instance_lacks() -> None:
    """bench/cover_bounds.py: Instance 8's staff may work 74 nights against 86 asked for;
    Instance 10's may work 160 weekend shifts against 206; Instance 9 lacks nothing."""
    sys.path.insert(0, str(REPO / "bench"))
    import numpy as np
    from bench_solver import uncovered
    from cover_bounds import cover_bounds

    from tests.csolver_helpers import instance

    i8, i9, i10 = cover_bounds(instance(8)), cover_bounds(instance(9)), cover_bounds(instance(10))
    assert (i8.types, i8.weekends, i8.best) == (12, 0, 12)
    assert (i10.types, i10.weekends, i10.best) == (0, 46, 46)
    assert i9.best == 0
    p = instance(8)
    nobody = np.full((p.n_employees, p.n_days), -1, dtype=np.int32)
    assert uncovered(p, nobody) == (i8.demand, int((p.cover_req * p.cover_under).sum()))
    one = nobody.copy()
    one[0, 3] = int(np.nonzero(p.cover_req[3])[0][0])  # one shift where it is asked for
    assert uncovered(p, one)[0] == i8.demand - 1


def test_family_runs_exactly_the_long_and_large_instances() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from bench_solver import options, parse_range

    args = options(["--family"])
    assert parse_range(args.instances) == [13, 15, 17, 18, 20, 22, 24]
    assert args.time == 60.0 and len(parse_range(args.seeds)) >= 3 and args.jobs == 1
    assert args.no_generated and args.no_largest and args.no_parallel
    assert parse_range(options(["--family", "--seeds", "1"]).seeds) == [1]


def test_the_instance_table_has_means_bounds_and_peak_memory() -> None:
    """One table row per instance over its seeds, and the mean gap row."""
    out = subprocess.run(
        [sys.executable, "bench/bench_solver.py", "--instances", "2-3", "--seeds", "1-2",
         "--time", "5", "--no-generated", "--no-parallel", "--no-largest"],
        cwd=REPO, capture_output=True, text=True, timeout=300, check=True).stdout
    table = out[out.index("per instance, 2 seed(s) each"):]
    rows = re.findall(r"^Instance(\d+)\s+(\d+)x(\d+)x(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+"
                      r"(\d+)\s+(\d)/2\s+(\d+)\s+(\d+)\s+(\d+)$", table, re.M)
    assert [r[0] for r in rows] == ["2", "3"], table
    for i, days, staff, _, best, penalty, gap, hard, feasible, _, bound, peak in rows:
        assert (days, staff) == {"2": ("14", "14"), "3": ("14", "20")}[i]
        # Instances 2 and 3 are proven optimal in well under a second: the bound is the optimum
        assert int(bound) == int(best) == round(float(penalty))
        assert float(gap) == 0 and hard == "0" and feasible == "2" and int(peak) > 0
    assert re.search(r"^mean gap\s+0\.00  over 2 of 2 instances", table, re.M), table
    assert "infeasible runs: none" in table


def test_the_weekend_ledger_accounts_for_every_short_weekend_slot() -> None:
    """bench/cover_bounds.py's ledger: a weekend slot is short because the staff's weekends
    cannot reach it, or because a weekend shift went elsewhere (split, unspent, over)."""
    sys.path.insert(0, str(REPO / "bench"))
    import numpy as np
    from cover_bounds import weekend_ledger

    from shared.roster.curtois import bench_dir, roster_from_tsv
    from tests.csolver_helpers import instance

    p = instance(10)
    nobody = np.full((p.n_employees, p.n_days), -1, dtype=np.int32)
    empty = weekend_ledger(p, nobody)
    assert (empty.short, empty.split, empty.over) == (empty.demand, 0, 0)
    assert empty.unspent == empty.capacity and empty.balances
    saturday = int(np.nonzero(np.asarray(p.weekend) == 0)[0][0])
    asked = int(np.nonzero(p.cover_req[saturday])[0][0])
    one = nobody.copy()
    one[0, saturday] = asked  # one Saturday worked: a weekend of the budget on one shift
    w = weekend_ledger(p, one)
    assert (w.split, w.unspent, w.short, w.over) == (1, empty.capacity - 2, empty.demand - 1, 0)
    crowd = one.copy()
    crowd[1 : 1 + int(p.cover_req[saturday, asked]), saturday] = asked  # one more than asked
    w = weekend_ledger(p, crowd)
    assert w.over == 1 and w.balances
    for path in sorted((bench_dir() / "solutions").glob("Instance*_obj*.tsv")):
        problem = instance(int(path.name.split("_")[0].removeprefix("Instance")))
        assert weekend_ledger(problem, roster_from_tsv(path.read_text(), problem)).balances


def test_the_weekend_patterns_bound_holds_for_every_stored_roster_and_sees_one_day_weekends(
) -> None:
    """bench/cover_bounds.py's `wk LP`: no roster leaves fewer weekend slots short. It is
    tighter than the weekend budget alone where a weekend's two days ask for different staff:
    Instance 7's staff may work all but 1 of its weekend shifts, yet at least 10 stay short."""
    sys.path.insert(0, str(REPO / "bench"))
    from cover_bounds import cover_bounds, weekend_ledger, weekend_patterns_bound

    from shared.roster.curtois import bench_dir, roster_from_tsv
    from tests.csolver_helpers import instance

    assert cover_bounds(instance(7)).weekends == 1
    assert weekend_patterns_bound(instance(7)) == 10.0
    for path in sorted((bench_dir() / "solutions").glob("Instance*_obj*.tsv")):
        problem = instance(int(path.name.split("_")[0].removeprefix("Instance")))
        bound = weekend_patterns_bound(problem)
        assert bound is not None
        short = weekend_ledger(problem, roster_from_tsv(path.read_text(), problem)).short
        assert short >= bound - 1e-6, path.name


def test_the_weekend_plan_costs_no_more_than_an_optimal_rosters_weekends() -> None:
    """bench/weekend_plan.py (decision 0058): the plan's MIP is a relaxation of a roster's weekend
    cells, so a proven-optimal plan costs no more than the weekends of any rule-abiding roster,
    here the stored optimal ones. It pins weekend cells only, each a type the employee may work
    or off, never a fixed day off worked, within the weekend budget."""
    sys.path.insert(0, str(REPO / "bench"))
    import numpy as np
    from cover_bounds import weekend_days
    from weekend_plan import FREE, runs_fit, weekend_cost, weekend_plan

    from shared.roster.curtois import bench_dir, roster_from_tsv
    from shared.roster.evaluator import evaluate
    from tests.csolver_helpers import instance

    priced = {"shift_on_requests", "shift_off_requests", "cover_under", "cover_over"}

    stored = sorted((bench_dir() / "solutions").glob("Instance*_obj*.tsv"))
    assert len(stored) >= 10
    for path in stored:
        p = instance(int(path.name.split("_")[0].removeprefix("Instance")))
        plan = weekend_plan(p, 60.0)
        assert plan.optimal, path.name
        roster = np.asarray(roster_from_tsv(path.read_text(), p))
        assert plan.objective <= weekend_cost(p, roster) + 1e-6, path.name
        weekend = np.asarray(p.weekend)
        # the cost is the evaluator's, restricted to weekend days
        scored = sum(m.penalty for r in evaluate(p, roster).rules if r.rule in priced
                     for m in r.matches if all(weekend[d] >= 0 for d in m.days))
        assert weekend_cost(p, roster) == scored, path.name
        # the filter keeps every pattern a rule-abiding roster has
        for e in range(p.n_employees):
            for days in weekend_days(p):
                combo = tuple(int(roster[e, d]) for d in days)
                assert max(combo) < 0 or runs_fit(p, e, days, combo), (path.name, e, days)
        pins = plan.pins
        # the plan's objective is what its own cells cost
        assert plan.objective == pytest.approx(weekend_cost(p, np.maximum(pins, -1))), path.name
        assert (pins[:, weekend < 0] == FREE).all() and (pins >= 0).any(), path.name
        allowed = np.asarray(p.max_shifts).reshape(p.n_employees, p.n_shifts) > 0
        worked = np.argwhere(pins >= 0)
        assert allowed[worked[:, 0], pins[pins >= 0]].all(), path.name
        day_off = np.asarray(p.day_off).reshape(p.n_employees, p.n_days).astype(bool)
        assert (pins[day_off] < 0).all(), path.name
        for e in range(p.n_employees):
            spent = len({int(weekend[d]) for d in np.nonzero(pins[e] >= 0)[0]})
            assert spent <= p.max_weekends[e], path.name


def test_column_root_shows_the_root_converging_and_prices_rows_at_their_marginal_cost() -> None:
    """bench/column_root.py: the unpaced root's rounds as the column phase logs them, and a
    row's marginal cost is exactly what it adds to the roster's penalty."""
    sys.path.insert(0, str(REPO / "bench"))
    from itertools import pairwise

    from column_root import marginal_costs, pricing_quality, root_curve, row_cost

    import csolver
    from csolver.column_generation import request_penalties
    from shared.roster.curtois import bench_dir, roster_from_tsv
    from tests.csolver_helpers import instance

    p = instance(1)  # proven optimum 607
    curve = root_curve(p, 30.0)
    assert curve.converged and len(curve.rounds) > 2
    lps = [r.lp for r in curve.rounds]
    assert all(b <= a + 1e-6 for a, b in pairwise(lps))  # columns only add
    assert [r.round for r in curve.rounds] == list(range(len(curve.rounds)))
    assert all(r.bound <= 607 + 1e-6 for r in curve.rounds)
    assert curve.rounds[-1].bound <= curve.rounds[-1].lp + 1e-6 <= 607 + 1e-6

    path = next((bench_dir() / "solutions").glob("Instance1_obj*.tsv"))
    roster = roster_from_tsv(path.read_text(), p)
    packed = csolver._Packed(p)
    e, d = packed.shape
    pen = request_penalties(packed.arrays, e, d, int(p.length.size))
    penalty = csolver.score(p, roster)[1]
    for emp in (0, e // 2, e - 1):
        cost = marginal_costs(p, roster, emp, pen)
        off = roster.copy()
        off[emp] = -1
        assert penalty - csolver.score(p, off)[1] == (
            row_cost(cost, roster[emp]) - row_cost(cost, off[emp]))
    q = pricing_quality(p, roster)
    assert q.employees == e
    assert (q.phase_worse, q.search_worse) == (0, 0)  # exact on 14-day rows: never dearer
    assert q.bound_gap >= 0  # a proven bound is never above a row that exists
