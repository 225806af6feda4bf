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

With `--service`, the cancel is also measured the way a user sees it: a Redis server and the
five services started here, the request submitted naming each solver, a `cancel` entry
written to the intake `--cancel-at` seconds into the solve, and the time from that XADD to
the job's terminal event read from `solver-events` (the intake's handling, the solver's
100 ms look at the cancel marker, the finish, the outcome and the notifier's hop included).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

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


def service_cancel(request: SolveRequest, solvers: list[str], limit: float, cancel_at: float
                   ) -> list[tuple[str, float | None, dict[str, str]]]:
    """Per solver: (solver, ms from the cancel's XADD to the terminal event, that event); ms
    None when the job ended before the cancel was written (nothing to time)."""
    from shared.cli.devrunner import EmbeddedServer, Supervisor, service_env
    from shared.connection.factory import sync_client
    from shared.names import Names
    from shared.settings import Settings

    server = EmbeddedServer().start()
    out = []
    try:
        prefix = f"bl{uuid.uuid4().hex[:6]}:"
        settings = Settings(redis_url=server.url, shiftstream_prefix=prefix)
        names = Names.from_settings(settings)
        r: Any = sync_client(settings, decode_responses=True)
        env = {"SHIFTSTREAM_PREFIX": prefix}
        with tempfile.TemporaryDirectory(prefix="bench-limits-") as tmp:
            sup = Supervisor(service_env(server.url, env), cwd=REPO, log_dir=Path(tmp), grace=5)
            sup.start()
            try:
                for solver in solvers:
                    data = json.loads(request.model_dump_json())
                    data["solver"] = {"implementation": solver, "time_limit_seconds": limit,
                                      "seed": 1}
                    job = uuid.uuid4().hex[:12]
                    r.xadd(names.intake, {"type": "solve", "job_id": job,
                                          "payload": json.dumps(data)})
                    deadline = time.monotonic() + 120
                    while "started_at" not in r.hgetall(names.job(job)):
                        if time.monotonic() > deadline:
                            raise SystemExit(f"{solver}: the job never started")
                        time.sleep(0.01)
                    started = float(r.hget(names.job(job), "started_at"))
                    time.sleep(max(0.0, started + cancel_at - time.time()))
                    if r.hget(names.job(job), "state") in ("completed", "failed"):
                        out.append((solver, None, {"type": "ended before the cancel"}))
                        continue
                    last = (r.xrevrange(names.events, count=1) or [("0-0", {})])[0][0]
                    sent = time.perf_counter()
                    r.xadd(names.intake, {"type": "cancel", "job_id": job})
                    event: dict[str, str] | None = None
                    deadline = time.monotonic() + 120
                    while event is None:
                        if time.monotonic() > deadline:
                            raise SystemExit(f"{solver}: no terminal event 120 s after the cancel")
                        for _, entries in r.xread({names.events: last}, block=1000) or []:
                            for entry_id, fields in entries:
                                last = entry_id
                                if fields.get("job_id") == job and fields.get("type") in (
                                    "solver.completed", "solver.failed"
                                ):
                                    event = fields
                    out.append((solver, (time.perf_counter() - sent) * 1000, event))
            finally:
                sup.stop()
                r.close()
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    d = Limits()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--employees", type=int, default=d.max_employees)
    p.add_argument("--days", type=int, default=d.max_days)
    p.add_argument("--limits", type=float, nargs="+", default=[5.0, 10.0])
    p.add_argument("--cancel-at", type=float, default=4.0)
    p.add_argument("--solvers", nargs="+", default=["generetic", "greedy"])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--service", action="store_true",
                   help="only the cancel, through Redis and the running services")
    args = p.parse_args(argv)

    shifts = args.employees * args.days // 2
    request = generate(employees=args.employees, shifts=shifts, seed=args.seed, days=args.days)
    print(f"request: {args.employees} employees x {args.days} days, {shifts} heads of cover")
    failures: list[str] = []
    if args.service:
        limit = max(args.limits)
        for solver, ms, event in service_cancel(request, args.solvers, limit, args.cancel_at):
            if ms is None:
                print(f"{solver:9} service cancel at {args.cancel_at:g} s: the job ended first "
                      "(set a larger limit or an earlier --cancel-at to time the cancel)")
                continue
            ok = ms <= CANCEL_TARGET_S * 1000
            print(
                f"{solver:9} service cancel at {args.cancel_at:g} s: {event.get('type')} "
                f"{ms:6.0f} ms after the cancel's XADD  {'ok' if ok else 'MISSED'}  "
                f"cancelled {event.get('cancelled', '-')}  hard "
                f"{event.get('hard_violations', '-')}  penalty {event.get('penalty', '-')}"
            )
            if not ok:
                failures.append(f"{solver} service cancel took {ms:.0f} ms")
        for f in failures:
            print("MISSED:", f)
        return 1 if failures else 0
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
        if latency is None:
            print(f"{solver:9} cancel at {args.cancel_at:g} s: the solve returned first, "
                  f"after {wall:.2f} s (set a larger limit to time the cancel)")
            continue
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
