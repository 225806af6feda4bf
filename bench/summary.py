"""`task bench`: run the greedy, solver and pipeline benchmarks, then print one summary page.

Each benchmark prints its own full table as it runs (nothing is hidden); the summary at the
end picks out the figures the issues set targets for and says which are met:

    python bench/summary.py                      # everything at the issues' settings (~25 min)
    python bench/summary.py --quick              # smoke: solver 1 s per instance, pipeline --quick
    python bench/summary.py --only pipeline      # one of greedy, solver, pipeline

The pipeline figures come from the JSON that `bench_pipeline.py` writes (bench/results/).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SOLVER_GAP_TARGET = 2.0  # issue #4: mean gap over Curtois Instances 1-12, 10 s each


@dataclass
class Section:
    name: str
    command: list[str]
    lines: list[str] = field(default_factory=list)
    status: int | None = None
    seconds: float = 0.0


def run(section: Section) -> None:
    print(f"\n==== {section.name}: {' '.join(section.command)}", flush=True)
    started = time.monotonic()
    with subprocess.Popen(
        section.command, cwd=HERE.parent, stdout=subprocess.PIPE, text=True, bufsize=1
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(line, end="", flush=True)
            section.lines.append(line.rstrip("\n"))
        section.status = proc.wait()
    section.seconds = time.monotonic() - started


def grab(lines: list[str], pattern: str) -> re.Match[str] | None:
    for line in reversed(lines):
        if m := re.search(pattern, line):
            return m
    return None


def greedy_summary(s: Section) -> list[str]:
    feasible = grab(s.lines, r"feasible: (\d+)/(\d+)")
    out = [f"feasible {feasible.group(1)}/{feasible.group(2)}" if feasible else "no result"]
    for pattern in (r"^within limit.*", r"^mean gap.*"):
        if m := grab(s.lines, pattern):
            out.append(m.group(0))
    return out


def solver_summary(s: Section) -> list[str]:
    out = []
    if m := grab(s.lines, r"mean gap over (\d+) feasible: ([\d.]+) %"):
        gap = float(m.group(2))
        verdict = "met" if gap <= SOLVER_GAP_TARGET else "NOT met"
        out.append(
            f"mean gap {gap:.2f} % over {m.group(1)} feasible instances "
            f"(target <= {SOLVER_GAP_TARGET:g} %: {verdict}; goal <= 0.5 %)"
        )
    for pattern in (r"^generated .*", r"^largest size.*", r"^parallel ratio.*"):
        if m := grab(s.lines, pattern):
            out.append(m.group(0))
    return out or ["no result"]


def latest_pipeline_json(since: float) -> dict[str, object] | None:
    files = sorted(RESULTS.glob("pipeline-*.json"), key=lambda p: p.stat().st_mtime)
    if not files or files[-1].stat().st_mtime < since:
        return None
    data: dict[str, object] = json.loads(files[-1].read_text())
    data["_file"] = str(files[-1].relative_to(HERE.parent))
    return data


def pipeline_summary(started: float) -> list[str]:
    data = latest_pipeline_json(started)
    if data is None:
        return ["no result file written"]
    summary = data["summary"]
    assert isinstance(summary, dict)
    out = [f"{'system':16}{'jobs/s':>10}{'p50 ms':>9}{'p99 ms':>9}{'CPU ms/job':>12}"]
    for name, row in summary.items():
        out.append(
            f"{name:16}{row['throughput_jobs_s']:>10,.0f}{_num(row.get('p50_ms')):>9}"
            f"{_num(row.get('p99_ms')):>9}{_num(row.get('worker_cpu_ms_per_job'), 3):>12}"
        )
    checks = data.get("target_check")
    if isinstance(checks, dict):
        for system, check in checks.items():
            peers = check.get("throughput_ge_python_peers", {})
            measured = {k: v for k, v in peers.items() if v is not None}
            met = sorted(k for k, v in measured.items() if v)
            missed = sorted(k for k, v in measured.items() if not v)
            out.append(
                f"{system}: throughput >= {', '.join(met) or '-'}; below {', '.join(missed) or '-'}"
                f"; p50 <= 3 ms {'met' if check.get('p50_ok') else 'NOT met'}"
                f"; p99 <= 10 ms {'met' if check.get('p99_ok') else 'NOT met'}"
            )
    out.append(f"full results: {data['_file']}")
    return out


def _num(v: object, digits: int = 2) -> str:
    return f"{v:.{digits}f}" if isinstance(v, int | float) else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smoke settings for every benchmark")
    ap.add_argument("--only", choices=["greedy", "solver", "pipeline"], action="append")
    args = ap.parse_args()
    py = sys.executable
    solver_args = ["--time", "1", "--no-parallel"] if args.quick else []
    pipeline_args = ["--quick"] if args.quick else []
    sections = {
        "greedy": Section("bench:greedy", [py, "bench/bench_greedy.py"]),
        "solver": Section("bench:solver", [py, "bench/bench_solver.py", *solver_args]),
        "pipeline": Section("bench:pipeline", [py, "bench/bench_pipeline.py", *pipeline_args]),
    }
    wanted = args.only or list(sections)
    started = time.time()
    for name in wanted:
        run(sections[name])

    print("\n" + "=" * 78 + "\nShiftStream benchmark summary\n" + "=" * 78)
    failed = False
    for name in wanted:
        s = sections[name]
        print(f"\n{s.name} ({s.seconds:.0f} s, exit {s.status})")
        failed |= s.status != 0
        if name == "greedy":
            body = greedy_summary(s)
        elif name == "solver":
            body = solver_summary(s)
        else:
            body = pipeline_summary(started)
        for line in body:
            print(f"  {line}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
