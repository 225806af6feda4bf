"""The C scorer (gr_score) must equal the Python evaluator on every roster."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import csolver
from shared.roster.compiled import Problem, compile_request
from shared.roster.curtois import roster_from_tsv
from shared.roster.evaluator import evaluate
from shared.roster.generator import generate
from shared.roster.solving import SolveControl
from tests.csolver_helpers import (
    BENCH,
    instance,
    pinned_roster,
    random_problem,
    random_roster,
    with_repair,
)

FIXTURES = sorted((Path(BENCH) / "solutions").glob("Instance*_obj*.tsv"))


def assert_same(p: Problem, roster: np.ndarray) -> None:
    ev = evaluate(p, roster)
    assert csolver.score(p, roster) == (ev.hard_violations, ev.penalty)


def test_fixtures_present() -> None:
    assert len(FIXTURES) >= 10


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f.stem)
def test_published_fixture_rosters(fixture: Path) -> None:
    name, obj = fixture.stem.split("_obj")
    p = instance(int(name.removeprefix("Instance")))
    roster = roster_from_tsv(fixture.read_text(), p)
    assert csolver.score(p, roster) == (0, int(obj))
    assert_same(p, roster)


@pytest.mark.parametrize("i", range(1, 13))
def test_random_rosters_on_benchmark(i: int) -> None:
    p = instance(i)
    rng = np.random.default_rng(i)
    for share in (0.0, 0.3, 0.6, 1.0):
        for _ in range(3):
            assert_same(p, random_roster(p, rng, share))


@pytest.mark.parametrize("i", range(1, 13))
def test_solver_rosters_on_benchmark(i: int) -> None:
    p = instance(i)
    run = csolver.solve_generetic(p, time_limit=0.2, seed=i, control=SolveControl())
    assert_same(p, run.roster)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_instances(seed: int) -> None:
    p = compile_request(generate(employees=12 + 10 * seed, shifts=60 * seed, seed=seed))
    rng = np.random.default_rng(seed)
    for _ in range(5):
        assert_same(p, random_roster(p, rng))
    run = csolver.solve_generetic(p, time_limit=0.2, seed=seed, control=SolveControl())
    assert_same(p, run.roster)


@pytest.mark.parametrize("seed", range(40))
def test_random_problems(seed: int) -> None:
    rng = np.random.default_rng(1000 + seed)
    e, d, s = int(rng.integers(1, 9)), int(rng.integers(1, 30)), int(rng.integers(1, 5))
    p = random_problem(rng, e, d, s, start_weekday=int(rng.integers(0, 7)))
    for _ in range(10):
        assert_same(p, random_roster(p, rng, float(rng.random())))


@pytest.mark.parametrize("seed", range(40))
def test_random_pinned_problems_with_a_previous_roster(seed: int) -> None:
    """Pins (hard) and changes (soft) count the same in C, which gets the changes folded into
    its requests, as in the evaluator's own rules."""
    rng = np.random.default_rng(5000 + seed)
    e, d, s = int(rng.integers(1, 9)), int(rng.integers(1, 30)), int(rng.integers(1, 5))
    p = with_repair(random_problem(rng, e, d, s, start_weekday=int(rng.integers(0, 7))), rng)
    for _ in range(10):
        assert_same(p, pinned_roster(p, rng))
    assert_same(p, p.previous.clip(-1))


@pytest.mark.parametrize("i", [1, 4, 7])
def test_pinned_benchmark_rosters_and_solves(i: int) -> None:
    rng = np.random.default_rng(i)
    p = with_repair(instance(i), rng, pin_share=0.05, change_weight=10)
    for _ in range(5):
        assert_same(p, pinned_roster(p, rng))
    run = csolver.solve_generetic(p, time_limit=0.3, seed=i, control=SolveControl())
    assert_same(p, run.roster)
    pinned = p.pin != -2
    assert (run.roster[pinned] == p.pin[pinned]).all()


def test_score_rejects_bad_roster() -> None:
    p = instance(1)
    bad = p.empty_roster()
    bad[0, 0] = p.n_shifts
    with pytest.raises(ValueError, match="roster"):
        csolver.score(p, bad)
    with pytest.raises(ValueError, match="shape"):
        csolver.score(p, bad[:, :-1])


def test_the_largest_counts_and_weights_are_scored_exactly() -> None:
    """Every accepted request is one both solvers score exactly: counts and weights at their
    contract maxima give the same score in C (int64) and in the Python evaluator."""
    from shared.roster.model import MAX_COUNT, SolveRequest

    request = generate(employees=6, shifts=40, seed=7)
    data = request.model_dump(mode="json")
    for c in data["cover"]:
        c |= {"required": MAX_COUNT, "under_weight": 1_000_000, "over_weight": 1_000_000}
    for e in data["employees"]:
        e["max_consecutive_shifts"] = MAX_COUNT
        e["max_weekends"] = MAX_COUNT
        e["max_shifts"] = {k: MAX_COUNT for k in e.get("max_shifts", {})}
    p = compile_request(SolveRequest.model_validate(data))
    rng = np.random.default_rng(7)
    for share in (0.0, 0.5, 1.0):
        assert_same(p, random_roster(p, rng, share))
    run = csolver.solve_generetic(p, time_limit=0.2, seed=1, control=SolveControl())
    assert_same(p, run.roster)
    assert 0 < evaluate(p, run.roster).penalty < 2**63


def test_counts_beyond_the_contract_are_invalid_and_named() -> None:
    from shared.errors import InvalidRequest
    from shared.roster.limits import Limits
    from shared.roster.parse import parse_request

    data = generate(employees=3, shifts=5, seed=1).model_dump(mode="json")
    data["cover"][0]["required"] = 10**18
    with pytest.raises(InvalidRequest, match=r"cover\[0\]\.required: .*10000"):
        parse_request(json.dumps(data), Limits())
