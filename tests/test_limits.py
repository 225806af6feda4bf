"""Issue 22: limits that hold at the largest accepted request, through the running services.

The timing targets themselves (limit + 1 s, cancel within 200 ms, monotone scores) are
measured by `task bench:limits`, not asserted here: this checks what a user depends on at
that size, that a request the C solver fails on still gets a roster, from the fallback.
"""

from __future__ import annotations

import json

import pytest

from shared.roster.generator import generate
from shared.roster.limits import Limits
from shared.roster.model import SolveResult
from tests.conftest import StackFactory

pytestmark = pytest.mark.redis


def largest_request(name: str, time_limit: float) -> str:
    d = Limits()
    request = generate(
        employees=d.max_employees,
        shifts=d.max_employees * d.max_days // 2,
        seed=1,
        days=d.max_days,
    )
    data = json.loads(request.model_dump_json())
    data["name"] = name
    data["solver"] = {"time_limit_seconds": time_limit, "seed": 0}
    return json.dumps(data)


def test_a_failed_c_solve_at_the_size_limits_still_gets_the_fallbacks_roster(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(
        env={
            "SHIFTSTREAM_TEST_CRASH": "true",
            "SOLVER_MAX_JSON_BYTES": str(Limits().max_json_bytes),
            # A largest-size solve holds the GIL for long stretches: leases renew late.
            "RECLAIM_IDLE_MS": "30000",
        }
    )
    job = stack.submit(largest_request("__crash__ largest", time_limit=5))
    done = stack.wait_terminal(job, timeout=240)[job]
    assert done["type"] == "solver.completed", done
    assert done["solver_used"] == "greedy"
    result = SolveResult.model_validate_json(done["result"])
    assert len(result.assignments) == Limits().max_employees
    assert len(stack.terminal(job)) == 1
