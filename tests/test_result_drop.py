"""A large result stored by the solve's own process (shared/solving/drop.py): the service gets
only its key, and a child that cannot store it sends the result back instead."""

from __future__ import annotations

import os
import signal
import time

import pytest

from shared.cli.devrunner import EmbeddedServer, free_port
from shared.connection.factory import sync_client
from shared.names import Names
from shared.roster.evaluator import Rendered, summary_of
from shared.roster.generator import generate
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.solving import SolveControl
from shared.settings import Settings
from shared.solving.drop import STORE_DEADLINE_SECONDS, Dropper, ResultDrop
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


def test_a_redis_that_stops_answering_costs_the_store_its_deadline_and_no_roster() -> None:
    # A Redis that accepts connections but answers nothing (stopped): the store gives up at
    # its deadline, whatever the client's own timeouts and retries, and the result goes back
    # the old way; the parent would kill a child that took much longer, roster and all.
    server = EmbeddedServer().start()
    try:
        settings = Settings(redis_url=server.url)
        dropper = Dropper(_drop(settings))
        dropper.connect()
        assert server.proc is not None
        os.kill(server.proc.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            assert dropper.put(b"{}" * 200_000) is False
            assert time.monotonic() - started < STORE_DEADLINE_SECONDS + 1.5
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
    finally:
        server.stop()


def test_the_store_gives_up_at_its_deadline_however_long_the_client_retries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Cluster or Sentinel client retrying against unresponsive nodes took 12-77 s; stood in
    # for by a SET that takes 30 s.
    import shared.solving.drop as drop_module

    monkeypatch.setattr(drop_module, "_set_uncopied", lambda *a: time.sleep(30))
    dropper = Dropper(_drop(Settings()))
    started = time.monotonic()
    assert dropper.put(b"{}" * 200_000) is False
    assert time.monotonic() - started < STORE_DEADLINE_SECONDS + 1.5


def test_a_result_the_child_could_not_store_goes_under_the_drops_key(
    redis_server: EmbeddedServer,
) -> None:
    # So that a SET of the child's that Redis made after all (after the child gave up on its
    # answer) is overwritten by the service's, not left behind for a day under another key.
    import asyncio
    from types import SimpleNamespace

    from shared.connection.factory import async_client
    from shared.jobs.messages import Job, Outcome
    from shared.roster.evaluator import render
    from shared.solving.report import Reports

    settings = Settings(
        redis_url=redis_server.url, shiftstream_prefix="drop3:", result_key_min_bytes=1
    )
    names = Names.from_settings(settings)
    out = _solve(None, Implementation.GREEDY)
    published: list[Outcome] = []

    async def publish(outcome: Outcome, stream: str, pipeline: object = None) -> None:
        published.append(outcome)

    async def main() -> None:
        redis = async_client(settings)
        metrics = SimpleNamespace(solve_time=lambda *a: None, job_out=lambda *a, **k: None)
        svc = SimpleNamespace(
            names=names, settings=settings, redis=redis, metrics=metrics, publish=publish
        )
        reports = Reports(svc, "solver")  # type: ignore[arg-type]
        job = Job(job_id="j", payload="{}")
        await reports.completed(job, out, 1.0, Implementation.GREEDY, None, key="drop3:k1")
        # A batched (inline) result is carried in its outcome whatever key is offered.
        small = render(out.result())
        await reports.completed(job, small, 1.0, Implementation.GREEDY, object(), key="k2")
        await redis.aclose()

    asyncio.run(main())
    assert published[0].result_key == "drop3:k1" and published[0].result is None
    assert sync_client(settings).get("drop3:k1") == bytes(out.data)
    assert published[1].result_key is None and published[1].result == out.json
    sync_client(settings).delete("drop3:k1")
