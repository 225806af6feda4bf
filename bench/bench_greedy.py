"""Greedy fallback on Curtois Instances 1-12 and a generated 80x200 instance.

Prints per instance: solve time (ms, best of --repeat runs), hard violations, penalty, the
proven optimum and the gap to it. `task bench:greedy` runs this.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared.roster.compiled import Problem, compile_request
from shared.roster.curtois import bench_dir, load_curtois
from shared.roster.evaluator import evaluate
from shared.roster.generator import generate
from shared.roster.greedy import solve_greedy
from shared.roster.solving import SolveControl


def best_known(directory: Path) -> dict[str, int]:
    with (directory / "best_known.csv").open() as f:
        return {row["instance"]: int(row["best_upper_bound"]) for row in csv.DictReader(f)}


def measure(problem: Problem, seed: int, repeat: int) -> tuple[float, int, int]:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run = solve_greedy(problem, time_limit=10.0, seed=seed, control=SolveControl())
        times.append((time.perf_counter() - started) * 1000)
    score = evaluate(problem, run.roster)
    return min(times), score.hard_violations, score.penalty


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--instances", type=int, default=12, help="Curtois instances 1..N")
    args = parser.parse_args()

    directory = bench_dir()
    optimum = best_known(directory)
    cases: list[tuple[str, Problem, int | None]] = []
    for i in range(1, args.instances + 1):
        name = f"Instance{i}"
        cases.append(
            (name, compile_request(load_curtois(directory / f"{name}.txt")), optimum[name])
        )
    cases.append(("generated 80x200", compile_request(generate(80, 200, seed=args.seed)), None))

    header = f"{'instance':<18}{'E':>4}{'D':>4}{'S':>4}{'ms':>9}{'hard':>6}{'penalty':>9}"
    print(header + f"{'optimum':>9}{'gap':>9}")
    print("-" * (len(header) + 18))
    feasible = 0
    for name, problem, best in cases:
        ms, hard, penalty = measure(problem, args.seed, args.repeat)
        feasible += hard == 0
        gap = "" if best is None or hard else f"{(penalty - best) / best:.1%}"
        print(
            f"{name:<18}{problem.n_employees:>4}{problem.n_days:>4}{problem.n_shifts:>4}"
            f"{ms:>9.1f}{hard:>6}{penalty:>9}{best or '':>9}{gap:>9}"
        )
    print(f"\nfeasible: {feasible}/{len(cases)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
