"""Benchmark the generetic C solver on Curtois & Qu Instances 1-12 (and a generated instance).

    .venv/bin/python bench/bench_solver.py [--time 10] [--instances 1-12] [--seed 0]
    .venv/bin/python bench/bench_solver.py --seeds 1-6 --jobs 2 \
        --no-generated --no-parallel --no-largest

One row per instance: optimum, objective, gap %, hard violations, time to first feasible, time to
best, evaluations per second (the GA's moves plus the column phase's priced rows; 0 when the
column phase proved its roster optimal and the GA never ran), shifts left uncovered. Then the
mean gap, a generated 80-employee / 200-shift row (with a 1 s solve of it and its proven
optimum), a row at the benchmark's largest size (returned within the limit? memory taken?), and
the GA alone on Instance 12 (`column_share=0`): its move evaluations per second, and the
parallel ratio (two solves in two threads vs one; ~1.0 means the GIL is released).
One seed is one draw: a run can land one uncovered shift (100 points, 2-9 %) above or below
another, so compare builds with `--seeds`, which runs every instance once
per seed and ends with the per-instance means and, per instance, the runs that ended above its
fewest uncovered (the cover lottery, apart from the request polish); `--jobs N` runs N solves
at once in separate processes (one per core: the evals/s column then shares the machine).
The benchmark folder is `SHIFTSTREAM_BENCH_DIR`, else the repo's `bench/curtois`.
"""

from __future__ import annotations

import argparse
import csv
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from csolver import COLUMN_SHARE, solve_generetic  # noqa: E402
from shared.roster.compiled import Problem, compile_request  # noqa: E402
from shared.roster.curtois import bench_dir, load_curtois  # noqa: E402
from shared.roster.evaluator import evaluate  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402
from shared.roster.solving import SolveControl, SolverRun  # noqa: E402

# generate(employees=80, shifts=200, seed=1): optimum 3, proven in ~1 s by OR-Tools CP-SAT
# (bench/cpsat_optimum.py --generated 1); seeds 2 and 3: 2 and 4.
GENERATED_OPTIMUM = 3


def parse_range(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def optimum_table(folder: Path) -> dict[str, int]:
    with (folder / "best_known.csv").open() as f:
        return {row["instance"]: int(row["best_upper_bound"]) for row in csv.DictReader(f)}


def run(problem: Problem, seconds: float, seed: int, evals: int = 0,
        column_share: float | None = None) -> tuple[SolverRun, float]:
    started = time.perf_counter()
    result = solve_generetic(problem, time_limit=seconds, seed=seed, control=SolveControl(),
                             max_evaluations=evals,
                             column_share=COLUMN_SHARE if column_share is None else column_share)
    return result, time.perf_counter() - started


def uncovered(p: Problem, roster: np.ndarray) -> tuple[int, int]:
    """Shifts short over all (day, type) slots, and the penalty they cost."""
    counts = np.asarray(cover_counts(p, roster.tolist()), dtype=np.int64)
    short = np.maximum(np.asarray(p.cover_req, dtype=np.int64) - counts, 0)
    return int(short.sum()), int((short * np.asarray(p.cover_under, dtype=np.int64)).sum())


@dataclass(frozen=True)
class Row:
    penalty: int
    hard: int
    first_feasible_ms: float | None
    best_ms: float | None
    evals_per_s: float
    uncovered: int


def instance_row(folder: str, instance: int, seconds: float, seed: int, evals: int) -> Row:
    """One solve of one instance; a top-level function so that worker processes can run it."""
    problem = compile_request(load_curtois(Path(folder) / f"Instance{instance}.txt"))
    result, elapsed = run(problem, seconds, seed, evals)
    ev = evaluate(problem, result.roster)
    return Row(ev.penalty, ev.hard_violations, result.time_to_first_feasible_ms,
               result.time_to_best_ms, result.evaluations / elapsed,
               uncovered(problem, result.roster)[0])


@dataclass(frozen=True)
class LargestRow:
    seconds: float
    elapsed: float
    rss_growth_mb: float
    hard: int
    first_feasible_ms: float | None
    evals_per_s: float


def largest_row(seconds: float, seed: int) -> LargestRow:
    """The largest size of the Curtois benchmark (Instance 24: 364 days, 150 staff, 32 shift
    types), with every rule active and random data (the fuzz tests' builder): does the solve
    return within its limit, and how much memory does it take? Run in a fresh worker process,
    so that the peak RSS growth is the solve's own."""
    import resource

    import numpy as np

    from tests.csolver_helpers import random_problem

    problem = random_problem(np.random.default_rng(seed), 150, 364, 32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result, elapsed = run(problem, seconds, seed)
    growth = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    return LargestRow(seconds, elapsed, growth, evaluate(problem, result.roster).hard_violations,
                      result.time_to_first_feasible_ms, result.evaluations / elapsed)


def fmt_ms(ms: float | None) -> str:
    return "-" if ms is None else f"{ms:.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--time", type=float, default=10.0, help="seconds per instance")
    ap.add_argument("--instances", default="1-12")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", default="",
                    help="run every instance once per seed (e.g. 1-6) and print the means")
    ap.add_argument("--jobs", type=int, default=1, help="solves at once, in separate processes")
    ap.add_argument("--evals", type=int, default=0,
                    help="stop after this many move evaluations instead of the time limit "
                    "(reproducible; --time then only caps the run)")
    ap.add_argument("--no-generated", action="store_true", help="skip the generated row")
    ap.add_argument("--no-parallel", action="store_true", help="skip the parallel ratio")
    ap.add_argument("--no-largest", action="store_true",
                    help="skip the largest-size row (364 days x 150 staff x 32 types)")
    args = ap.parse_args()

    folder = bench_dir()
    optimum = optimum_table(folder)
    seeds = parse_range(args.seeds) if args.seeds else [args.seed]
    header = (f"{'instance':<14}{'optimum':>8}{'objective':>10}{'gap %':>8}{'hard':>6}"
              f"{'first feas ms':>14}{'best ms':>9}{'evals/s':>12}{'uncov':>7}")
    print(header)
    print("-" * len(header))
    jobs = [(i, seed) for i in parse_range(args.instances) for seed in seeds]
    per_instance: dict[int, list[float]] = {}
    short: dict[int, list[int]] = {}
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        rows = pool.map(instance_row, [str(folder)] * len(jobs), [i for i, _ in jobs],
                        [args.time] * len(jobs), [s for _, s in jobs], [args.evals] * len(jobs))
        for (i, seed), row in zip(jobs, rows, strict=True):
            name = f"Instance{i}" + (f"/s{seed}" if len(seeds) > 1 else "")
            opt = optimum.get(f"Instance{i}")
            gap = 100.0 * (row.penalty - opt) / opt if opt else float("nan")
            if row.hard == 0 and opt:
                per_instance.setdefault(i, []).append(gap)
            short.setdefault(i, []).append(row.uncovered)
            print(f"{name:<14}{opt or '-':>8}{row.penalty:>10}{gap:>8.2f}{row.hard:>6}"
                  f"{fmt_ms(row.first_feasible_ms):>14}{fmt_ms(row.best_ms):>9}"
                  f"{row.evals_per_s:>12,.0f}{row.uncovered:>7}", flush=True)
    if len(seeds) > 1:
        print("per instance, mean over seeds " + args.seeds + ": " + ", ".join(
            f"{i} {sum(g) / len(g):.2f}" for i, g in sorted(per_instance.items())))
        # The cover lottery apart from the polish: a run with one shift more uncovered than
        # the instance's best run lost 100 points that no request polish wins back.
        print("runs above the fewest uncovered: " + ", ".join(
            f"{i} {sum(u > min(us) for u in us)}/{len(us)}" for i, us in sorted(short.items())))
    means = [sum(g) / len(g) for g in per_instance.values()]
    if means:
        print(f"mean gap over {len(means)} feasible: {sum(means) / len(means):.2f} %"
              + (f" ({len(seeds)} seeds each, infeasible runs left out)" if len(seeds) > 1 else ""))

    if not args.no_generated:
        try:
            from shared.roster.generator import generate
        except ImportError:
            print("generated 80x200: shared.roster.generator not available")
        else:
            problem = compile_request(generate(employees=80, shifts=200, seed=1))
            result, elapsed = run(problem, args.time, args.seed)
            ev = evaluate(problem, result.roster)
            # the target is "no further improvement after 1 s": a 1 s solve next to the full one
            short, _ = run(problem, min(1.0, args.time), args.seed)
            print(f"generated 80x200 ({problem.n_employees}x{problem.n_days} days, "
                  f"{problem.n_shifts} types): objective {ev.penalty} hard {ev.hard_violations} "
                  f"(1 s solve: {evaluate(problem, short.roster).penalty}; "
                  f"proven optimum {GENERATED_OPTIMUM}) "
                  f"first feasible {fmt_ms(result.time_to_first_feasible_ms)} ms "
                  f"best {fmt_ms(result.time_to_best_ms)} ms "
                  f"evals/s {result.evaluations / elapsed:,.0f}")

    if not args.no_largest:
        with ProcessPoolExecutor(1) as pool:
            big = pool.submit(largest_row, args.time, args.seed).result()
        print(f"largest size (364 days x 150 staff x 32 types, random rules): "
              f"limit {big.seconds:.0f} s, returned in {big.elapsed:.2f} s, "
              f"peak memory +{big.rss_growth_mb:.0f} MB, "
              f"hard {big.hard}, first feasible {fmt_ms(big.first_feasible_ms)} ms, "
              f"evals/s {big.evals_per_s:,.0f}")

    if not args.no_parallel:
        # the GA alone: the throughput target and the GIL release are the C search's
        problem = compile_request(load_curtois(folder / "Instance12.txt"))
        seconds = min(args.time, 3.0)
        one, t_one = run(problem, seconds, args.seed, column_share=0.0)
        results: list[tuple[SolverRun, float]] = []
        lock = threading.Lock()

        def worker(seed: int) -> None:
            r = run(problem, seconds, seed, column_share=0.0)
            with lock:
                results.append(r)

        threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
        wall = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - wall
        rate_one = one.evaluations / t_one
        rate_two = sum(r.evaluations for r, _ in results) / wall
        print(f"GA alone on Instance12 ({seconds:.0f} s): {rate_one:,.0f} move evaluations/s")
        print(f"parallel ratio (Instance12, GA alone, {seconds:.0f} s): two threads "
              f"{rate_two:,.0f} evals/s vs one {rate_one:,.0f} evals/s -> "
              f"{rate_two / rate_one / 2:.2f} (1.0 = perfect scaling on 2 cores; "
              f"wall {wall:.2f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
