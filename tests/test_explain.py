"""The C evaluator (csolver/explain.py, gr_explain) and the rendered result (gr_render_rows)
must give exactly what the Python reference gives: every rule's matches, the result, its JSON.

At the size limits a solve's result is scored and written by them (docs/decisions/0020), so a
difference here would be a difference in what users get. The times are `task bench:limits`'s.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import numpy as np
import pytest

from csolver.explain import Explainer
from shared.roster.compiled import I32, Problem, compile_request
from shared.roster.evaluator import RESULT_HEAD, build_result, evaluate, rendered
from shared.roster.generator import generate
from shared.roster.model import Implementation, SolveRequest, SolverStats
from shared.roster.solving import SolveControl
from shared.solving.dispatch import EXPLAIN_MIN_CELLS, explainer_for
from shared.solving.isolation import solve_direct_rendered, solve_isolated_rendered
from tests.csolver_helpers import (
    instance,
    pinned_roster,
    random_problem,
    random_roster,
    with_repair,
)

STATS = SolverStats(implementation=Implementation.GENERETIC, seed=3, time_ms=1.5)


def assert_explained_as_evaluated(p: Problem, roster: I32) -> None:
    reference = evaluate(p, roster)
    explainer = Explainer(p)
    fast = explainer.evaluate(roster)
    assert fast.rules == reference.rules  # every rule, every match, in the same order
    want = build_result(p, roster, STATS, evaluation=reference)
    assert build_result(p, roster, STATS, evaluation=fast) == want
    summary = build_result(p, roster, STATS, evaluation=fast, assignments=False)
    out = rendered(summary, explainer.render(roster, RESULT_HEAD))
    assert out.json == want.model_dump_json()
    assert out.result() == want
    assert out.summary.score == want.score and out.summary.stats == want.stats
    assert out.summary.assignments == [] and out.summary.breakdown == []


@pytest.mark.parametrize("seed", range(6))
def test_random_rosters_on_random_problems(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = random_problem(rng, int(rng.integers(1, 12)), int(rng.integers(1, 40)),
                       int(rng.integers(1, 5)), start_weekday=seed % 7)
    for share in (0.0, 0.3, 0.7, 1.0):
        assert_explained_as_evaluated(p, random_roster(p, rng, share))


@pytest.mark.parametrize("seed", range(4))
def test_pins_and_changes(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    p = with_repair(random_problem(rng, 8, 28, 3), rng, change_weight=None if seed else 0)
    for _ in range(3):
        assert_explained_as_evaluated(p, pinned_roster(p, rng))


@pytest.mark.parametrize("i", [1, 5, 9])
def test_benchmark_instances(i: int) -> None:
    p = instance(i)
    rng = np.random.default_rng(i)
    for share in (0.2, 0.6):
        assert_explained_as_evaluated(p, random_roster(p, rng, share))


def test_ids_that_need_escaping_render_as_pydantic_writes_them() -> None:
    request = generate(employees=6, shifts=30, seed=2)
    data = json.loads(request.model_dump_json())
    for k, e in enumerate(data["employees"]):
        e["id"] = ['say "hi"', "back\\slash", "tab\tstop", "café", "日本", "e</script>"][k]
    p = compile_request(SolveRequest.model_validate(data))
    rng = np.random.default_rng(0)
    assert_explained_as_evaluated(p, random_roster(p, rng, 0.5))


def test_a_roster_with_a_cell_out_of_range_is_refused() -> None:
    p = random_problem(np.random.default_rng(1), 3, 7, 2)
    roster = np.zeros((3, 7), dtype=np.int32)
    roster[1, 2] = 2
    with pytest.raises(ValueError, match="-17"):
        Explainer(p).evaluate(roster)
    with pytest.raises(ValueError, match="-17"):
        Explainer(p).render(roster)
    wide = np.zeros((3, 7), dtype=np.int64)
    wide[0, 0] = 2**32  # would wrap to shift 0 as int32
    with pytest.raises(ValueError, match="shift index"):
        Explainer(p).evaluate(wide)


def test_many_matches_past_the_first_buffer() -> None:
    # Every cell on a shift the employee may not work: far more records than the first call's
    # room, so the second call with the exact count is what fills them.
    p = random_problem(np.random.default_rng(2), 40, 200, 3)
    p = dataclasses.replace(p, max_shifts=np.zeros_like(p.max_shifts))
    roster = random_roster(p, np.random.default_rng(3), 0.0)
    assert_explained_as_evaluated(p, roster)


def large_request(implementation: Implementation) -> SolveRequest:
    # Over EXPLAIN_MIN_CELLS, so the solve is scored and written in C.
    employees, days = 120, 200
    assert employees * days >= EXPLAIN_MIN_CELLS
    request = generate(employees=employees, shifts=employees * days // 2, seed=4, days=days)
    return request.model_copy(
        update={"solver": request.solver.model_copy(
            update={"implementation": implementation, "time_limit_seconds": 30.0}
        )}
    )


@pytest.mark.parametrize("implementation", [Implementation.GENERETIC, Implementation.GREEDY])
def test_a_cancelled_large_solve_yields_its_roster_correctly_scored(
    implementation: Implementation,
) -> None:
    request = large_request(implementation)
    assert explainer_for(compile_request(request)) is not None
    control = SolveControl()

    def cancel_once_searching() -> None:
        # Half a second into the search (its phase is published once it starts), well inside
        # its 30 s limit.
        for _ in range(400):
            if control.progress.phase:
                break
            time.sleep(0.05)
        time.sleep(0.5)
        control.cancel.set()

    threading.Thread(target=cancel_once_searching, daemon=True).start()
    if implementation is Implementation.GENERETIC:
        out = solve_isolated_rendered(
            request, implementation=implementation, time_limit=30.0, control=control, grace=5.0
        )
    else:
        out = solve_direct_rendered(
            request, implementation=implementation, time_limit=30.0, control=control
        )
    result = out.result()
    assert result.stats is not None and result.stats.cancelled
    assert out.summary.stats == result.stats and out.summary.score == result.score
    # The reference scorer (`shiftstream evaluate`'s) on the roster that came back.
    p = compile_request(request)
    index = {s: i for i, s in enumerate(p.shift_ids)}
    roster = np.array(
        [[-1 if s is None else index[s] for s in row.shifts] for row in result.assignments],
        dtype=np.int32,
    )
    reference = build_result(p, roster, result.stats)
    assert result == reference
