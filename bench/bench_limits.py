"""Limits: at the largest accepted request, does a solve keep its time limit, does a cancel
stop it within 200 ms, and does more time never give a worse roster?

    python bench/bench_limits.py                    # 5,000 x 366, limits 5 and 10 s
    python bench/bench_limits.py --employees 1000 --limits 2 5 --solvers greedy

For each solver (the C `generetic` in its own process, as the solver service runs it, and the
`greedy` fallback in a thread, as the fallback runs it) on one generated request at the size
limits (`SOLVER_MAX_EMPLOYEES` x `SOLVER_MAX_DAYS`, demand about half the staff):

- return: the wall time from the call to the roster, per time limit; target limit + 1 s;
- cancel: the solve cancelled `--cancel-at` seconds in, the time from setting the flag to the
  roster; target 200 ms;
- monotone: the score (hard violations, penalty) per limit, in increasing limits: it must never
  get worse with more time.

Exit status 1 when a target is missed. Runs the solves one after the other (one core each,
the machine's other core left to the process that watches): the figures are wall times on a
shared machine, so noisy.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from shared.roster.evaluator import Rendered  # noqa: E402
from shared.roster.generator import generate  # noqa: E402
from shared.roster.limits import Limits  # noqa: E402
from shared.roster.model import Implementation, SolveRequest  # noqa: E402
from shared.roster.solving import SolveControl  # noqa: E402
from shared.solving.isolation import (  # noqa: E402
    solve_direct_rendered,
    solve_isolated_rendered,
)

RETURN_SLACK_S = 1.0
CANCEL_TARGET_S = 0.2


def solve(
    request: SolveRequest, solver: str, limit: float, cancel_at: float | None
) -> tuple[Rendered, float, float | None]:
    """(result, wall seconds, cancel latency seconds or None): the result as the services
    get it, its JSON ready to publish (shared/solving/run.py)."""
    control = SolveControl()
    impl = Implementation(solver)
    cancelled: list[float] = []
    if cancel_at is not None:

        def cancel() -> None:
            time.sleep(cancel_at)
            cancelled.append(time.perf_counter())
            control.cancel.set()

        threading.Thread(target=cancel, daemon=True).start()
    start = time.perf_counter()
    if impl is Implementation.GENERETIC:
        result = solve_isolated_rendered(
            request, implementation=impl, time_limit=limit, control=control, grace=5.0
        )
    else:
        result = solve_direct_rendered(
            request, implementation=impl, time_limit=limit, control=control
        )
    end = time.perf_counter()
    return result, end - start, (end - cancelled[0]) if cancelled else None


def main(argv: list[str] | None = None) -> int:
    d = Limits()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--employees", type=int, default=d.max_employees)
    p.add_argument("--days", type=int, default=d.max_days)
    p.add_argument("--limits", type=float, nargs="+", default=[5.0, 10.0])
    p.add_argument("--cancel-at", type=float, default=4.0)
    p.add_argument("--solvers", nargs="+", default=["generetic", "greedy"])
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)

    shifts = args.employees * args.days // 2
    request = generate(employees=args.employees, shifts=shifts, seed=args.seed, days=args.days)
    print(f"request: {args.employees} employees x {args.days} days, {shifts} heads of cover")
    failures: list[str] = []
    for solver in args.solvers:
        scores = []
        for limit in sorted(args.limits):
            result, wall, _ = solve(request, solver, limit, None)
            score = (result.summary.score.hard_violations, result.summary.score.penalty)
            scores.append((limit, score))
            ok = wall <= limit + RETURN_SLACK_S
            print(
                f"{solver:9} limit {limit:5.1f} s  returned {wall:6.2f} s  "
                f"{'ok' if ok else 'MISSED'}  hard {score[0]}  penalty {score[1]}"
            )
            if not ok:
                failures.append(f"{solver} returned {wall:.2f} s for a {limit:g} s limit")
        for (a, sa), (b, sb) in itertools.pairwise(scores):
            if sb > sa:
                failures.append(f"{solver}: {b:g} s gave {sb}, worse than {a:g} s: {sa}")
                print(f"{solver:9} NOT MONOTONE: {b:g} s worse than {a:g} s")
        limit = max(args.limits)
        result, wall, latency = solve(request, solver, limit, args.cancel_at)
        assert latency is not None
        ok = latency <= CANCEL_TARGET_S
        print(
            f"{solver:9} cancel at {args.cancel_at:g} s: roster {latency * 1000:6.0f} ms later  "
            f"{'ok' if ok else 'MISSED'}  hard {result.summary.score.hard_violations}  "
            f"penalty {result.summary.score.penalty}"
        )
        if not ok:
            failures.append(f"{solver} cancel took {latency * 1000:.0f} ms")
    for f in failures:
        print("MISSED:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
