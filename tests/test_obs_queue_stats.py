"""Queue health against a real server: groups, pending entries and events made by hand."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
import redis
import typer
from typer.testing import CliRunner

from shared.cli import ops
from shared.cli.devrunner import EmbeddedServer
from shared.names import Names
from shared.observability.queue_stats import collect, percentile
from shared.settings import Settings

pytestmark = pytest.mark.redis


@pytest.fixture
def client(redis_server: EmbeddedServer) -> Iterator[redis.Redis]:
    r = redis.Redis.from_url(redis_server.url)
    yield r
    r.close()


@pytest.fixture
def names() -> Names:
    return Names.from_settings(Settings(shiftstream_prefix=f"qs{uuid.uuid4().hex[:8]}:"))


def _now_ms(r: redis.Redis) -> int:
    sec, usec = r.time()
    return int(sec) * 1000 + int(usec) // 1000


def _populate(r: redis.Redis, names: Names) -> int:
    now_ms = _now_ms(r)
    # Jobs: the first entry was written 60 s ago, so the oldest pending age is known exactly.
    r.xadd(names.jobs, {"n": "1"}, id=f"{now_ms - 60_000}-0")
    r.xadd(names.jobs, {"n": "2"})
    r.xadd(names.jobs, {"n": "3"})
    r.xgroup_create(names.jobs, "solver", id="0")
    delivered = r.xreadgroup("solver", "worker-1", {names.jobs: ">"}, count=1)
    first_id = delivered[0][1][0][0]
    # As if the worker died 20 s ago: XCLAIM with IDLE sets the idle time it reports.
    r.xclaim(names.jobs, "solver", "worker-1", 0, [first_id], idle=20_000)
    # An intake group that has read and acked everything.
    r.xadd(names.intake, {"type": "solve"})
    r.xgroup_create(names.intake, "intake", id="0")
    for _, entries in r.xreadgroup("intake", "i-1", {names.intake: ">"}):
        for entry_id, _ in entries:
            r.xack(names.intake, "intake", entry_id)
    r.xadd(names.dead, {"__data__": "x"})
    r.xadd(names.dead, {"__data__": "y"})
    r.zadd(names.schedule, {"retry-1": now_ms / 1000 + 30})

    # Events: one completion outside the window must not count.
    r.xadd(
        names.events,
        {
            "type": "solver.completed",
            "job_id": "old",
            "solve_time_ms": "99999",
            "solver_used": "greedy",
        },
        id=f"{now_ms - 600_000}-0",
    )
    for i, (ms, solver) in enumerate(
        [(100, "generetic"), (200, "greedy"), (300, "greedy"), (400, "generetic")]
    ):
        job = f"j{i}"
        r.xadd(names.events, {"type": "solver.accepted", "job_id": job})
        r.xadd(names.events, {"type": "solver.progress", "job_id": job, "progress": "50"})
        r.xadd(
            names.events,
            {
                "type": "solver.completed",
                "job_id": job,
                "solve_time_ms": str(ms),
                "solver_used": solver,
                "attempts": "1",
            },
        )
        # Enqueued 10 s before now: the estimated start is the completion minus the solve time.
        r.hset(names.job(job), mapping={"created_at": f"{now_ms / 1000 - 10:.3f}"})
    r.xadd(names.events, {"type": "solver.failed", "job_id": "bad", "error_class": "invalid"})
    # One primary solve handed to the fallback in the window, one long before it; j1 and j2
    # asked for greedy themselves and are no fallbacks.
    r.xadd(names.fallback, {"__data__": "j-old"}, id=f"{now_ms - 600_000}-0")
    r.xadd(names.fallback, {"__data__": "j3"})
    return now_ms


def test_collect(client: redis.Redis, names: Names) -> None:
    _populate(client, names)
    stats = collect(client, names, window=300)

    # The prioritized hops list a stream per priority; these entries are all normal ones.
    lengths = {s.role: s.length for s in stats.streams if s.priority in (None, "normal")}
    assert lengths["jobs"] == 3 and lengths["dead"] == 2 and lengths["fallback"] == 2
    assert stats.dead_letters == 2 and stats.scheduled == 1

    groups = {g.service: g for g in stats.groups if g.priority in (None, "normal")}
    solver = groups["solver"]
    assert solver.exists and solver.consumers == 1
    assert solver.pending == 1 and solver.lag == 2
    assert solver.oldest_pending_age_s is not None and 59 <= solver.oldest_pending_age_s < 90
    assert solver.max_idle_s is not None and 20 <= solver.max_idle_s < 50
    # Each consumer with its own pending count and idle time (XINFO CONSUMERS).
    [worker] = solver.consumer_list
    assert worker.name == "worker-1" and worker.pending == 1 and worker.idle_s < 50
    assert solver.max_deliveries == 2  # read once, claimed once
    intake = groups["intake"]
    assert intake.pending == 0 and intake.lag == 0 and intake.oldest_pending_age_s is None
    assert not groups["notifier"].exists

    w = stats.window
    assert (w.completed, w.failed, w.fallbacks) == (4, 1, 1)
    assert w.fallback_rate == 0.25
    assert w.jobs_per_minute == pytest.approx(1.0)  # 5 terminal events in 5 minutes
    assert w.failures_by_class == {"invalid": 1}
    assert w.solve_ms_p50 == pytest.approx(250.0)
    assert w.solve_ms_p95 == pytest.approx(385.0)
    assert w.queue_wait_samples == 4
    assert w.queue_wait_ms_p50 is not None and 9_000 < w.queue_wait_ms_p50 < 11_000
    assert not w.truncated
    json.dumps(stats.model_dump())  # JSON-able as promised


def test_recorded_start_wins_over_estimate(client: redis.Redis, names: Names) -> None:
    client.xadd(names.events, {"type": "solver.completed", "job_id": "s", "solve_time_ms": "5"})
    client.hset(names.job("s"), mapping={"created_at": "1000.0", "started_at": "1000.25"})
    assert collect(client, names).window.queue_wait_ms_p50 == pytest.approx(250.0)


def test_empty_server_has_no_groups(client: redis.Redis, names: Names) -> None:
    stats = collect(client, names)
    assert all(not g.exists for g in stats.groups)
    assert stats.window.completed == 0 and stats.window.fallback_rate is None


def test_percentile() -> None:
    assert percentile([], 0.5) is None
    assert percentile([7.0], 0.95) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_stats_command(
    client: redis.Redis, names: Names, redis_server: EmbeddedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _populate(client, names)
    monkeypatch.setenv("SHIFTSTREAM_PREFIX", names.prefix)
    app = typer.Typer()
    ops.register(app)
    runner = CliRunner()
    as_json = runner.invoke(app, ["stats", "--json", "--redis-url", redis_server.url])
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.output)
    assert doc["dead_letters"] == 2 and doc["window"]["completed"] == 4
    table = runner.invoke(app, ["stats", "--redis-url", redis_server.url])
    assert table.exit_code == 0, table.output
    for text in ("consumer groups", "dead letters", "fallback rate", "25.0%", names.jobs):
        assert text in table.output
