"""How the column phase's root fares on an instance: its LP round by round, and its pricing.

    .venv/bin/python bench/column_root.py [--instances 13,20] [--seconds 120] [--quality 20]

The solver gives its root a quarter of the time limit and gives it up early when its rounds
cannot fit (`csolver/column_generation.py`, decision 0037). This tool lets the root run
without pacing for `--seconds`, and prints every few seconds the restricted LP's objective, the
Lagrangian bound, the rows in the master, and the seconds spent pricing; what is left of the
elapsed time is the master LP's solves. Then how it ended: converged (no row prices out at the
LP's duals) or out of time.

With `--quality N`, a second part: the generetic solver runs N seconds, and every employee's
row of its roster is priced again under the roster's own marginal costs (its requests, minus
the under weight on each slot the others leave short, plus the over weight on each slot they
already cover). A row's cost there is what it adds to the roster's penalty, so a priced row
dearer than the roster's own is the pricing's loss, not the roster's. Two searches are shown:
the one the column phase runs (`gr_price_rows_from`: the quick construction on rows too large
for the exact search, `gr_row_large`), and the labelling search itself at the column phase's
cap (`gr_price_rows_effort`), with the lower bound it proves. Neither starts from a row: there
is no LP here to take one from (decision 0039).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_solver import bench_dir, parse_range, run  # noqa: E402
from csolver._generetic import ffi, lib  # noqa: E402

import csolver  # noqa: E402
from csolver import column_generation as cg  # noqa: E402
from shared.roster.compiled import Problem, compile_request  # noqa: E402
from shared.roster.curtois import load_curtois  # noqa: E402
from shared.roster.rules import cover_counts  # noqa: E402


@dataclass(frozen=True)
class RootRound:
    seconds: float  # since the phase began
    round: int
    lp: float  # the restricted master's objective
    bound: float  # the Lagrangian bound so far (-inf: none yet)
    rows: int  # columns in the master
    pricing: float  # seconds spent pricing so far


@dataclass(frozen=True)
class RootCurve:
    rounds: list[RootRound]
    converged: bool | None  # None: the root was not run (too many cover rows)


class _Rounds(logging.Handler):
    """Reads the column phase's own per-round debug records (their arguments, not their text)
    until the root's summary record."""

    def __init__(self, began: float) -> None:
        super().__init__(logging.DEBUG)
        self.began = began
        self.rounds: list[RootRound] = []
        self.converged: bool | None = None

    def emit(self, record: logging.LogRecord) -> None:
        args: Any = record.args
        if self.converged is not None or not isinstance(args, tuple):
            return
        if record.msg.startswith("LP %d:"):
            k, lp, bound, rows, pricing, _ = args
            self.rounds.append(RootRound(time.monotonic() - self.began, int(k), float(lp),
                                         float(bound), int(rows), float(pricing)))
        elif record.msg.startswith("root: converged"):
            self.converged = bool(args[0])


def root_curve(p: Problem, seconds: float) -> RootCurve:
    """The root of the column phase over the whole problem, unpaced, for at most `seconds`."""
    if p.n_days * int(p.length.size) > cg.MAX_COVER_ROWS:
        return RootCurve([], None)
    packed = csolver._Packed(p)
    log = logging.getLogger(cg.__name__)
    began = time.monotonic()
    handler = _Rounds(began)
    level, pace = log.level, cg.PACE
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    cg.PACE = False  # the question is how long the root takes, not whether it fits a limit
    try:
        deadline = began + seconds
        cg.solve_by_columns(packed.c, packed.arrays, packed.shape, deadline=deadline,
                            root_deadline=deadline,
                            stop=lambda: handler.converged is not None,  # no dives after it
                            offer=lambda roster, penalty: None)
    finally:
        cg.PACE = pace
        log.setLevel(level)
        log.removeHandler(handler)
    return RootCurve(handler.rounds, bool(handler.converged))


@dataclass(frozen=True)
class PricingQuality:
    employees: int
    phase_worse: int  # rows the column phase's search prices dearer than the roster's own
    phase_excess: float  # their mean excess, in penalty points
    search_worse: int  # the same for the labelling search at the column phase's cap
    search_excess: float
    bound_gap: float  # mean of (the roster's row - the search's proven bound), points
    search_ms: float  # mean time of one search


def marginal_costs(p: Problem, roster: np.ndarray, emp: int, pen: np.ndarray,
                   cover: np.ndarray | None = None) -> np.ndarray:
    """[D, S+1] what each value of each of `emp`'s cells adds to the roster's penalty, the
    other employees' rows fixed. `cover`: the whole roster's [D, S] counts, when the caller
    has them (one count for every employee of a roster)."""
    d, s = p.n_days, int(p.length.size)
    req = np.asarray(p.cover_req, np.int64).reshape(d, s)
    if cover is None:
        cover = np.asarray(cover_counts(p, roster.tolist()), dtype=np.int64)
    count = cover.copy()
    worked = np.nonzero(roster[emp] >= 0)[0]
    count[worked, roster[emp, worked]] -= 1  # the others' cover: this row taken out
    under = np.asarray(p.cover_under, np.int64).reshape(d, s)
    over = np.asarray(p.cover_over, np.int64).reshape(d, s)
    cost = pen[emp].copy()
    cost[:, :s] += np.where(count < req, -under, over)
    return cost


def row_cost(cost: np.ndarray, row: np.ndarray) -> int:
    return int(cost[np.arange(row.size), np.where(row < 0, cost.shape[1] - 1, row)].sum())


def pricing_quality(p: Problem, roster: np.ndarray) -> PricingQuality:
    packed = csolver._Packed(p)
    arrays = packed.arrays
    e, d = packed.shape
    s = int(arrays["length"].size)
    pen = cg.request_penalties(arrays, e, d, s)
    cover = np.asarray(cover_counts(p, roster.tolist()), dtype=np.int64)
    phase_ex: list[int] = []
    search_ex: list[int] = []
    gaps: list[float] = []
    spent = 0.0
    for emp in range(e):
        cost = marginal_costs(p, roster, emp, pen, cover)
        own = row_cost(cost, roster[emp])
        table = np.ascontiguousarray((cost * cg.SCALE)[None], dtype=np.int64)
        pricer = cg._employee_pricer(packed.c, arrays, np.array([emp]), d, s, cg.LABEL_CAP)
        rows, hard = pricer.price(table)
        if hard[0] in (0, cg.CAPPED):
            phase_ex.append(row_cost(cost, rows[0]) - own)
        row = np.full((1, d), -1, np.int32)
        status = np.zeros(1, np.int64)
        bound = np.zeros(1, np.int64)
        began = time.perf_counter()
        code = lib.gr_price_rows_effort(
            pricer.c, ffi.cast("int64_t *", ffi.from_buffer(table)),
            ffi.cast("int32_t *", ffi.from_buffer(row)),
            ffi.cast("int64_t *", ffi.from_buffer(status)),
            ffi.cast("int64_t *", ffi.from_buffer(bound)), cg.LABEL_CAP)
        spent += time.perf_counter() - began
        if code != 0:
            raise RuntimeError(f"gr_price_rows_effort failed with code {code}")
        if status[0] in (0, cg.CAPPED):
            search_ex.append(row_cost(cost, row[0]) - own)
        if bound[0] != cg.UNKNOWN:
            gaps.append(own - bound[0] / cg.SCALE)

    def worse(ex: list[int]) -> tuple[int, float]:
        bad = [x for x in ex if x > 0]
        return len(bad), float(np.mean(bad)) if bad else 0.0

    pw, pe = worse(phase_ex)
    sw, se = worse(search_ex)
    return PricingQuality(e, pw, pe, sw, se, float(np.mean(gaps)) if gaps else float("nan"),
                          1e3 * spent / e)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--instances", default="13,20")
    ap.add_argument("--seconds", type=float, default=120.0,
                    help="the root's time (0: no root, only --quality)")
    ap.add_argument("--every", type=float, default=10.0, help="print a round every this many s")
    ap.add_argument("--quality", type=float, default=0.0,
                    help="also price every row of a roster solved this many seconds")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    folder = Path(bench_dir())
    for inst in parse_range(args.instances):
        p = compile_request(load_curtois(folder / f"Instance{inst}.txt"))
        shape = f"{p.n_days} x {len(p.employee_ids)} x {p.length.size}"
        print(f"Instance {inst} ({shape}):")
        curve = root_curve(p, args.seconds) if args.seconds > 0 else None
        if curve is None:
            pass
        elif curve.converged is None:
            print(f"  no root: {p.n_days * p.length.size} cover rows > {cg.MAX_COVER_ROWS}")
        else:
            print(f"  the root, unpaced, for at most {args.seconds:g} s:")
            print(f"  {'s':>6} {'round':>5} {'LP':>11} {'bound':>11} {'rows':>6} {'pricing s':>9}")
            shown = -args.every
            for r in curve.rounds:
                if r.seconds - shown >= args.every or r is curve.rounds[-1]:
                    shown = r.seconds
                    print(f"  {r.seconds:6.1f} {r.round:5d} {r.lp:11.1f} {r.bound:11.1f} "
                          f"{r.rows:6d} {r.pricing:9.2f}")
            last = curve.rounds[-1] if curve.rounds else None
            ended = "converged" if curve.converged else "out of time"
            if last is not None:
                print(f"  {ended} after {last.seconds:.1f} s: pricing {last.pricing:.1f} s, "
                      f"the master LP's solves the other {last.seconds - last.pricing:.1f} s")
        if args.quality > 0:
            result, _ = run(p, args.quality, args.seed)
            roster = np.asarray(result.roster, dtype=np.int32)
            q = pricing_quality(p, roster)
            penalty = csolver.score(p, roster)[1]
            print(f"  pricing each row of a {args.quality:g} s roster ({penalty}) at its "
                  f"marginal costs:")
            print(f"    column phase's search: {q.phase_worse} of {q.employees} rows dearer "
                  f"than the roster's, by {q.phase_excess:.0f} points on average")
            print(f"    labelling at cap {cg.LABEL_CAP}: {q.search_worse} of {q.employees} "
                  f"dearer, by {q.search_excess:.0f} on average, {q.search_ms:.0f} ms a row; "
                  f"its bound {q.bound_gap:.0f} below the roster's row on average")
    return 0


if __name__ == "__main__":
    sys.exit(main())
