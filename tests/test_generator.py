"""The instance generator: reproducible, valid by the model, solvable, the size asked for."""

from __future__ import annotations

import pytest

from shared.roster.compiled import compile_request
from shared.roster.evaluator import evaluate
from shared.roster.generator import generate
from shared.roster.greedy import solve_greedy
from shared.roster.model import SolveRequest
from shared.roster.solving import SolveControl


def test_reproducible_by_seed() -> None:
    assert generate(80, 200, seed=7) == generate(80, 200, seed=7)
    assert generate(80, 200, seed=7) != generate(80, 200, seed=8)


@pytest.mark.parametrize(("employees", "shifts"), [(80, 200), (10, 35), (3, 0), (200, 1500)])
def test_size_and_validity(employees: int, shifts: int) -> None:
    req = generate(employees, shifts, seed=1)
    assert len(req.employees) == employees
    assert sum(c.required for c in req.cover) == shifts
    assert len(req.cover) == req.horizon.days * len(req.shift_types)
    # The JSON form passes the model's own validation unchanged.
    assert SolveRequest.model_validate_json(req.model_dump_json()) == req


def test_default_horizon_and_features() -> None:
    req = generate(80, 200, seed=0)
    assert req.horizon.days == 14
    assert req.horizon.start_date.weekday() == 0
    assert generate(80, 200, seed=0, days=21).horizon.days == 21
    p = compile_request(req)
    ids = p.shift_ids
    # Rest of 11 hours forbids late -> early and night -> early/late, with no explicit lists.
    assert all(not s.cannot_follow for s in req.shift_types)
    assert p.forbidden[ids.index("late"), ids.index("early")] == 1
    assert p.forbidden[ids.index("night"), ids.index("late")] == 1
    assert p.forbidden[ids.index("early"), ids.index("late")] == 0
    # Skills make someone ineligible somewhere; wishes and days off exist.
    assert (p.max_shifts == 0).any()
    assert len(p.on_shift) > 0 and len(p.off_shift) > 0 and p.day_off.any()
    assert {e.min_consecutive_shifts for e in req.employees} == {1, 2}


def test_long_demand_gets_a_longer_horizon() -> None:
    req = generate(10, 200, seed=0)
    assert req.horizon.days % 7 == 0 and req.horizon.days > 14


@pytest.mark.parametrize("seed", range(4))
def test_greedy_solves_the_default_size_feasibly(seed: int) -> None:
    p = compile_request(generate(80, 200, seed=seed))
    run = solve_greedy(p, time_limit=5.0, seed=seed, control=SolveControl())
    assert evaluate(p, run.roster).hard_violations == 0


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="employees"):
        generate(0, 10)
