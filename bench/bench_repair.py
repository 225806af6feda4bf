"""Re-rostering after absences (issue #25): repair against an unconstrained re-solve.

On each instance: solve it (the published roster), then mark two employees absent for three
days from day 10 and solve twice more: the **repair** (the published roster as `previous`,
every day before day 10 frozen, each changed cell at the default `change_weight`), and
**from scratch** (the same absences, no previous roster, nothing frozen). Prints, per instance
and method: the cells that differ from the published roster, the penalty of the roster by the
instance's own rules (changes not priced, so the two compare) and the repair's change cost,
and the time to the first feasible roster. Targets: the repair changes at most a tenth of what
from scratch changes, and has its first feasible roster within 1 s.

The absent employees are the first two (in the instance's order) that the published roster has
off on day 9 and working on an absent day: someone who calls in sick at the start of a working
stretch. Someone working on day 9 as well would leave a run cut short at the frozen day 9,
which the minimum-run rules may make impossible to repair (the repair then says which rule it
breaks, and no roster is feasible). `task bench:repair` runs this.

Every solve runs in this process, one at a time, in one thread (HiGHS too: `threads` 1).

    python bench/bench_repair.py                          # Instances 7 and 20, 10 s a solve
    python bench/bench_repair.py --limit 5 --instances 7
    python bench/bench_repair.py --solver greedy
    python bench/bench_repair.py --published-by greedy  # the C solver repairs the greedy's roster
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.roster.curtois import bench_dir, load_curtois
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.repair import Absence, repair_request
from shared.solving.dispatch import solve_request

ABSENT_FROM = 10
ABSENT_DAYS = 3
ABSENT_EMPLOYEES = 2
CHANGE_SHARE = 0.1
FIRST_FEASIBLE_MS = 1000.0
SHOWN_VIOLATIONS = 5


@dataclass
class Line:
    instance: int
    method: str
    changed: int
    penalty: int  # by the instance's own rules: the change cost left out
    change_cost: int
    hard: int
    first_feasible_ms: float | None
    time_ms: float


def changed_cells(before: SolveResult, after: SolveResult) -> int:
    return sum(
        a != b
        for ra, rb in zip(before.assignments, after.assignments, strict=True)
        for a, b in zip(ra.shifts, rb.shifts, strict=True)
    )


def absentees(published: SolveResult) -> list[Absence]:
    """The first employees (in the request's order) the published roster has off the day
    before the absence and working on one of its days (see the module's docstring)."""
    days = range(ABSENT_FROM, ABSENT_FROM + ABSENT_DAYS)
    working = [
        a for a in published.assignments
        if a.shifts[ABSENT_FROM - 1] is None and any(a.shifts[d] for d in days)
    ]
    return [Absence(a.employee, days[0], days[-1]) for a in working[:ABSENT_EMPLOYEES]]


def line(instance: int, method: str, published: SolveResult, result: SolveResult) -> Line:
    cost = sum(r.penalty for r in result.breakdown if r.rule == "changes")
    assert result.stats is not None
    return Line(
        instance, method, changed_cells(published, result), result.score.penalty - cost, cost,
        result.score.hard_violations, result.stats.time_to_first_feasible_ms,
        result.stats.time_ms,
    )


def run(instance: int, impl: Implementation, limit: float, seed: int,
        published_by: Implementation) -> list[Line]:
    request = load_curtois(bench_dir() / f"Instance{instance}.txt")
    request = request.model_copy(
        update={"solver": request.solver.model_copy(update={"seed": seed})}
    )
    published = solve_request(request, implementation=published_by, time_limit=limit)
    absences = absentees(published)
    print(f"Instance{instance}: {request.horizon.days} days, {len(request.employees)} employees; "
          f"published roster: {published.score.hard_violations} hard, penalty "
          f"{published.score.penalty}; absent days {ABSENT_FROM}-{ABSENT_FROM + ABSENT_DAYS - 1}:"
          f" {', '.join(a.employee for a in absences)}", flush=True)
    for a in published.assignments:
        if a.employee in {x.employee for x in absences}:
            print(f"  published {a.employee}: " + "".join(s or "." for s in a.shifts))
    repair = repair_request(request, published.assignments, absences,
                            freeze_before_day=ABSENT_FROM)
    repaired = solve_request(repair, implementation=impl, time_limit=limit)
    scratch = repair_request(request, published.assignments, absences)
    scratch = SolveRequest.model_validate(
        {**scratch.model_dump(mode="json"), "previous": None}
    )
    fresh = solve_request(scratch, implementation=impl, time_limit=limit)
    broken = [f"{m.rule} {m.employee}: {m.message}" for r in repaired.breakdown if r.hard
              for m in r.matches]
    for text in broken[:SHOWN_VIOLATIONS]:
        print(f"  repair breaks {text}")
    if len(broken) > SHOWN_VIOLATIONS:
        print(f"  ... and {len(broken) - SHOWN_VIOLATIONS} more hard violations")
    return [line(instance, "repair", published, repaired),
            line(instance, "from scratch", published, fresh)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--instances", type=int, nargs="+", default=[7, 20])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds per solve")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--solver", type=Implementation, default=Implementation.GENERETIC)
    parser.add_argument("--published-by", type=Implementation, default=None,
                        help="solver of the published roster (default: --solver)")
    args = parser.parse_args()
    published_by = args.published_by or args.solver
    lines = []
    for i in args.instances:
        lines += run(i, args.solver, args.limit, args.seed, published_by)
    print(f"\n{args.solver.value} (published roster: {published_by.value}), {args.limit:g} s a "
          f"solve, seed {args.seed}, single-threaded\n")
    head = ("instance", "method", "changed cells", "penalty", "change cost", "hard",
            "first feasible ms", "time ms")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for x in lines:
        first = "-" if x.first_feasible_ms is None else f"{x.first_feasible_ms:.0f}"
        print(f"| {x.instance} | {x.method} | {x.changed} | {x.penalty} | {x.change_cost} | "
              f"{x.hard} | {first} | {x.time_ms:.0f} |")
    print()
    ok = True
    for rep, fresh in zip(lines[::2], lines[1::2], strict=True):
        share = rep.changed / fresh.changed if fresh.changed else 0.0
        met_share = rep.changed <= CHANGE_SHARE * fresh.changed
        met_time = rep.first_feasible_ms is not None and rep.first_feasible_ms <= FIRST_FEASIBLE_MS
        feasible = rep.hard == 0
        ok &= met_share and met_time and feasible
        print(f"Instance{rep.instance}: repair feasible {'yes' if feasible else 'NO'}; changes "
              f"{rep.changed} vs {fresh.changed} = {share:.1%} of from scratch (target <= "
              f"{CHANGE_SHARE:.0%}: {'met' if met_share else 'NOT met'}); first feasible "
              f"{'-' if rep.first_feasible_ms is None else f'{rep.first_feasible_ms:.0f} ms'} "
              f"(target <= {FIRST_FEASIBLE_MS:.0f} ms: {'met' if met_time else 'NOT met'})")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
