"""bench/bench_solver.py: the multi-seed mode users compare builds with (issue #4)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
