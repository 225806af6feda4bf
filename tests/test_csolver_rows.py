"""The row DP on long horizons (decision 0013): every row it prices keeps every per-employee
rule, its bound is a bound, its quick search spreads a row's work over a year (decision 0028),
and a half-year instance solves to a feasible roster whose progress shows the search's
improvements while it runs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from csolver._generetic import ffi, lib

import csolver
from csolver import _Packed
from csolver.column_generation import request_penalties
from shared.roster.compiled import Problem
from shared.roster.evaluator import evaluate
from shared.roster.solving import SolveControl
from tests.csolver_helpers import instance


def price(p: Problem, cost: np.ndarray, label_cap: int) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    packed = _Packed(p)
    e, d = packed.shape
    rows = np.full((e, d), -1, dtype=np.int32)
    hard = np.zeros(e, dtype=np.int64)
    bound = np.zeros(e, dtype=np.int64)
    cost = np.ascontiguousarray(cost, dtype=np.int64)
    code = lib.gr_price_rows_effort(
        packed.c, ffi.cast("int64_t *", ffi.from_buffer(cost)),
        ffi.cast("int32_t *", ffi.from_buffer(rows)), ffi.cast("int64_t *", ffi.from_buffer(hard)),
        ffi.cast("int64_t *", ffi.from_buffer(bound)), label_cap)
    assert code == 0
    return rows, hard, bound


def row_costs(cost: np.ndarray, rows: np.ndarray) -> np.ndarray:
    s = cost.shape[2] - 1
    e, d = rows.shape
    picked = cost[np.arange(e)[:, None], np.arange(d)[None, :], np.where(rows < 0, s, rows)]
    return picked.sum(axis=1)


@pytest.mark.parametrize(("i", "label_cap"), [(20, -1), (22, 0), (24, 0), (13, -1)])
def test_every_priced_row_keeps_every_rule(i: int, label_cap: int) -> None:
    """Instances 20, 22, 24 (182-364 days): the old DP left most rows all off (breaking the
    minimum minutes); Instance 13 (18 types): its rows broke a second type's maximum."""
    p = instance(i)
    packed = _Packed(p)
    e, d = packed.shape
    rng = np.random.default_rng(i)
    cost = request_penalties(packed.arrays, e, d, len(p.shift_ids)) * 1000
    cost[:, :, :-1] -= rng.integers(0, 100_000, size=cost[:, :, :-1].shape)
    rows, hard, bound = price(p, cost, label_cap)
    assert set(hard.tolist()) <= {0, -2}  # a rule-abiding row for every employee
    assert evaluate(p, rows).hard_violations == 0
    costs = row_costs(cost, rows)
    assert (bound <= costs).all()
    assert (bound[hard == 0] == costs[hard == 0]).all()


@pytest.mark.parametrize("i", [22, 24])
def test_the_quick_search_spreads_a_rows_work_over_a_year(i: int) -> None:
    """Where every shift is wanted alike, the quick search (how a year's start roster is built,
    row after row) puts a row's work across the whole year: cheapest first alone spent it on
    the first days, and Instance 24's start then left its last weeks uncovered (decision
    0028)."""
    p = instance(i)
    e, d = _Packed(p).shape
    cost = np.zeros((e, d, len(p.shift_ids) + 1), dtype=np.int64)
    cost[:, :, :-1] = -100
    rows, hard, _ = price(p, cost, 0)
    assert set(hard.tolist()) <= {0, -2}
    work = rows >= 0
    late = work[:, d // 2 :].sum(axis=1) / work.sum(axis=1)
    # before: some rows worked only in the first half (share 0), the median row 28 % on 24
    assert late.min() >= 0.35, sorted(late.round(2).tolist())[:10]


def test_a_half_year_instance_solves_to_a_feasible_roster() -> None:
    """Instance 20 (182 days, 50 staff) was infeasible after 60 s before decision 0013."""
    p = instance(20)
    run = csolver.solve_generetic(p, time_limit=3.0, seed=1, control=SolveControl())
    assert evaluate(p, run.roster).hard_violations == 0
    assert run.time_to_first_feasible_ms is not None


def test_a_year_solve_reports_its_improvements_while_it_runs() -> None:
    """On long horizons one anneal is nearly the whole solve (decision 0018): its best rosters
    reach the progress (and so `watch` and a cancel) while it runs, not only at its end."""
    p = instance(22)
    control = SolveControl()
    worker = threading.Thread(target=lambda: csolver.solve_generetic(
        p, time_limit=8.0, seed=1, control=control, column_share=0.0))
    worker.start()
    seen: list[int] = []
    while worker.is_alive():
        time.sleep(0.25)
        control.refresh()
        if control.progress.best_hard == 0 and worker.is_alive():
            seen.append(control.progress.best_penalty)
    worker.join()
    assert seen == sorted(seen, reverse=True)  # the best never gets worse
    assert len(set(seen)) >= 3, f"progress moved {len(set(seen)) - 1} times: {sorted(set(seen))}"
