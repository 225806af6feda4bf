"""A large result stored by the solve's own process (shared/solving/drop.py): the service gets
only its key, and a child that cannot store it sends the result back instead."""

from __future__ import annotations

import pytest

from shared.cli.devrunner import EmbeddedServer, free_port
from shared.connection.factory import sync_client
from shared.names import Names
from shared.roster.evaluator import Rendered, summary_of
from shared.roster.generator import generate
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.solving import SolveControl
from shared.settings import Settings
from shared.solving.drop import ResultDrop
from shared.solving.isolation import solve_isolated_rendered

pytestmark = pytest.mark.redis


def _request() -> SolveRequest:
    request = generate(employees=12, shifts=60, seed=3)
    solver = request.solver.model_copy(update={"seed": 1, "time_limit_seconds": 1.0})
    return request.model_copy(update={"solver": solver})


def _solve(drop: ResultDrop | None, implementation: Implementation) -> Rendered:
    return solve_isolated_rendered(
        _request(),
        implementation=implementation,
        time_limit=1.0,
        control=SolveControl(),
        grace=5.0,
        drop=drop,
    )


def _drop(settings: Settings, min_bytes: int = 1) -> ResultDrop:
    drop = ResultDrop.for_job(settings, Names.from_settings(settings), "drop-1")
    return ResultDrop(drop.settings, drop.key, 600, min_bytes)


@pytest.mark.parametrize("implementation", [Implementation.GENERETIC, Implementation.GREEDY])
def test_a_large_result_is_stored_by_the_solve_process_and_only_its_key_comes_back(
    redis_server: EmbeddedServer, implementation: Implementation
) -> None:
    settings = Settings(redis_url=redis_server.url, shiftstream_prefix="drop1:")
    drop = _drop(settings)
    out = _solve(drop, implementation)
    assert (out.key, out.data) == (drop.key, b"")
    r = sync_client(settings)
    # The stored JSON is the whole result whose summary the service publishes.
    raw = r.get(drop.key)
    assert raw is not None
    stored = SolveResult.model_validate_json(raw)
    assert stored.assignments and stored.feasible
    assert summary_of(stored) == out.summary
    assert 0 < r.ttl(drop.key) <= 600
    r.delete(drop.key)


def test_a_solve_process_that_cannot_store_its_result_sends_it_back() -> None:
    # Nothing listens on the port: the SET fails and the roster still arrives, whole.
    settings = Settings(redis_url=f"redis://127.0.0.1:{free_port()}/0")
    out = _solve(_drop(settings), Implementation.GENERETIC)
    assert out.key is None
    result = out.result()
    assert result.assignments and result.feasible and summary_of(result) == out.summary


def test_a_result_below_the_size_for_a_key_comes_back_as_json(
    redis_server: EmbeddedServer,
) -> None:
    settings = Settings(redis_url=redis_server.url, shiftstream_prefix="drop2:")
    drop = _drop(settings, min_bytes=10**9)
    out = _solve(drop, Implementation.GENERETIC)
    assert out.key is None and out.result().assignments
    assert sync_client(settings).exists(drop.key) == 0


def test_only_a_solve_whose_result_can_reach_the_size_for_a_key_gets_a_drop() -> None:
    # A smaller solve's child opens no connection of its own.
    settings = Settings(result_key_min_bytes=400_000)
    names = Names.from_settings(settings)
    assert ResultDrop.for_solve(settings, names, "j", 99_999) is None
    drop = ResultDrop.for_solve(settings, names, "j", 100_000)
    assert drop is not None and drop.key.startswith(names.result("j", ""))
