"""Doubled instances: the benchmark family at sizes it does not hold, with a known bound.

    .venv/bin/python bench/doubled.py --out /tmp/doubled [--instances 15,17,18,20,22]
    SHIFTSTREAM_BENCH_DIR=/tmp/doubled .venv/bin/python bench/bench_solver.py \
        --instances 15,17,18,20,22 --time 60 --seeds 1-3 \
        --no-generated --no-parallel --no-largest

The solver is judged on instances of the family that are not in `bench/curtois` (issue 21
names five, of 84 to 364 days), so a tuning that only fits the stored files is a risk. A
doubled instance is one of the family at another size: every employee twice (the copy's ID
ends in `_2`, with the same rules, days off and requests) and every cover requirement
doubled, on the same days and shift types. Instance 20 doubled is 182 days x 100 staff,
Instance 22 doubled 364 x 100.

Its optimum is known to within the root LP's gap: the original's optimal roster, each row
worked by both copies, scores exactly twice the original (every rule but cover is per
employee, and the cover's counts and requirements both double), so twice the best known is
an upper bound; and the LP relaxation over whole rows of the doubled instance is exactly
twice the original's. `best_known.csv` in the out folder lists twice the best known as
`best_upper_bound`, so `bench_solver.py`'s gap column is against it (a negative gap is a
roster better than the doubled optimum of the original; Instance 18 doubled: 8 837 against
8 918). The doubled instances found a dive lost on a root that its pace gave up in its last
seconds (decision 0045).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from bench_solver import bench_dir, optimum_table, parse_range

# Sections with one line per employee fact: copied for the copy, its ID suffixed
PER_EMPLOYEE = ("SECTION_STAFF", "SECTION_DAYS_OFF", "SECTION_SHIFT_ON_REQUESTS",
                "SECTION_SHIFT_OFF_REQUESTS")
SUFFIX = "_2"
# The instances whose doubles are nearest the family's missing sizes
DEFAULT = "15,17,18,20,22"


def double_instance(text: str) -> str:
    """The instance text with every employee twice and every cover requirement doubled.
    Comments and blank lines are kept; a section's copies follow its own lines."""
    out: list[str] = []
    section = ""
    copies: list[str] = []

    def close() -> None:
        out.extend(copies)
        copies.clear()

    for line in text.splitlines():
        field = line.strip()
        if field.startswith("SECTION_"):
            close()
            section = field
            out.append(line)
            continue
        if not field or field.startswith("#") or section not in (*PER_EMPLOYEE, "SECTION_COVER"):
            if not field and copies:
                close()
            out.append(line)
            continue
        parts = field.split(",")
        if section == "SECTION_COVER":
            parts[2] = str(2 * int(parts[2]))
            out.append(",".join(parts))
            continue
        if section == "SECTION_STAFF" and parts[0].endswith(SUFFIX):  # another's copy's ID
            raise ValueError(f"employee {parts[0]!r}: an ID ending in {SUFFIX!r} is the "
                             "copies' own; rename it before doubling")
        out.append(line)
        copies.append(",".join([parts[0] + SUFFIX, *parts[1:]]))
    close()
    return "\n".join(out) + "\n"


def write_doubled(source: Path, out: Path, instances: list[int]) -> list[tuple[str, int]]:
    """InstanceN.txt doubled into `out` under its own name, and a best_known.csv there with
    twice each original's best known as its upper bound. Returns (instance, bound) pairs."""
    best = optimum_table(source)
    out.mkdir(parents=True, exist_ok=True)
    bounds: list[tuple[str, int]] = []
    for i in instances:
        name = f"Instance{i}"
        text = (source / f"{name}.txt").read_text()
        (out / f"{name}.txt").write_text(double_instance(text))
        if name in best:
            bounds.append((name, 2 * best[name]))
    with (out / "best_known.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["instance", "best_upper_bound", "lower_bound"])
        w.writerows((name, bound, "") for name, bound in bounds)
    return bounds


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="folder for the doubled instances")
    ap.add_argument("--instances", default=DEFAULT, help=f"default {DEFAULT} (ranges: 15-18)")
    args = ap.parse_args()
    for name, bound in write_doubled(bench_dir(), args.out, parse_range(args.instances)):
        print(f"{args.out / name}.txt: upper bound {bound}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
