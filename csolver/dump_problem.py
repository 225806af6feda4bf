"""Write a compiled problem as the flat binary file csolver/tests/test_main.c reads.

Layout (little-endian): magic "GRP1", six int32 sizes (E, D, S, W, R_on, R_off), then every array
of generetic.h's table in that order, int32 except forbidden and day_off (uint8).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from shared.roster.compiled import Problem

ORDER = (
    "length", "forbidden", "max_shifts", "min_minutes", "max_minutes", "max_consec",
    "min_consec", "min_off", "max_weekends", "day_off", "weekend", "on_ptr", "on_shift",
    "on_weight", "off_ptr", "off_shift", "off_weight", "cover_req", "cover_under", "cover_over",
)
U8 = {"forbidden", "day_off"}


def dump(problem: Problem, path: Path) -> None:
    sizes = np.array(
        [problem.n_employees, problem.n_days, problem.n_shifts, problem.n_weekends,
         problem.on_shift.size, problem.off_shift.size],
        dtype="<i4",
    )
    with path.open("wb") as f:
        f.write(b"GRP1")
        f.write(sizes.tobytes())
        for name in ORDER:
            dtype = "<u1" if name in U8 else "<i4"
            f.write(np.ascontiguousarray(getattr(problem, name), dtype=dtype).tobytes())


def main() -> int:
    from shared.roster.compiled import compile_request
    from shared.roster.curtois import load_curtois

    if len(sys.argv) != 3:
        print("usage: python -m csolver.dump_problem INSTANCE.txt OUT.bin", file=sys.stderr)
        return 2
    dump(compile_request(load_curtois(sys.argv[1])), Path(sys.argv[2]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
