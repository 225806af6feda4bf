"""bench/doubled.py: a doubled instance is the family at another size, and its bound holds."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shared.roster.compiled import compile_request
from shared.roster.curtois import bench_dir, parse_curtois, roster_from_tsv
from shared.roster.evaluator import evaluate

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from doubled import double_instance  # noqa: E402


@pytest.mark.parametrize("i", [1, 7, 10])
def test_a_stored_optimum_worked_by_both_copies_scores_twice(i: int) -> None:
    """Each employee and its copy, the copy working the original's row: every rule holds and
    the penalty is exactly twice, so twice the best known bounds the doubled optimum."""
    text = (bench_dir() / f"Instance{i}.txt").read_text()
    p = compile_request(parse_curtois(text, f"Instance{i}"))
    q = compile_request(parse_curtois(double_instance(text), f"Instance{i}x2"))
    assert (q.n_employees, q.n_days, q.n_shifts) == (2 * p.n_employees, p.n_days, p.n_shifts)
    assert np.array_equal(np.asarray(q.cover_req), 2 * np.asarray(p.cover_req))
    path = next((bench_dir() / "solutions").glob(f"Instance{i}_obj*.tsv"))
    roster = roster_from_tsv(path.read_text(), p)
    row = {e: k for k, e in enumerate(p.employee_ids)}
    both = np.stack([roster[row[e.removesuffix("_2")]] for e in q.employee_ids])
    assert [e for e in q.employee_ids if not e.endswith("_2")] == list(p.employee_ids)
    original, doubled = evaluate(p, roster), evaluate(q, both)
    assert original.hard_violations == doubled.hard_violations == 0
    assert doubled.penalty == 2 * original.penalty


def test_an_id_whose_copy_would_clash_is_refused() -> None:
    text = (bench_dir() / "Instance1.txt").read_text()
    p = compile_request(parse_curtois(text, "Instance1"))
    first = p.employee_ids[0]
    clash = text.replace(f"\n{p.employee_ids[1]},", f"\n{first}_2,", 1)
    with pytest.raises(ValueError, match=f"employee .{first}_2.: an ID ending in"):
        double_instance(clash)


def test_the_cli_writes_the_instances_and_their_bounds(tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "bench/doubled.py", "--out", str(tmp_path),
                          "--instances", "1,2"], cwd=REPO, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    with (tmp_path / "best_known.csv").open() as f:
        rows = {r["instance"]: int(r["best_upper_bound"]) for r in csv.DictReader(f)}
    assert rows == {"Instance1": 2 * 607, "Instance2": 2 * 828}
    assert f"Instance1.txt: upper bound {2 * 607}" in out
    q = compile_request(parse_curtois((tmp_path / "Instance2.txt").read_text(), "x"))
    assert q.n_employees == 2 * compile_request(
        parse_curtois((bench_dir() / "Instance2.txt").read_text(), "y")).n_employees
