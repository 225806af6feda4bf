"""Priorities (docs/decisions/0016-priorities.md): a waiting higher-priority job is always
taken before a lower one, a low job is not starved for ever, and a worker killed while it holds
entries of several priority streams loses no job and doubles none.

The read is checked on its own against a real Redis (entry ids set by hand, so the aging is
exact, not timed), then through the services.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from faststream.redis.message import bDATA_KEY
from pydantic import BaseModel

from shared.cli.devrunner import EmbeddedServer
from shared.connection.factory import async_client
from shared.names import READ_ORDER, Names, Priority
from shared.settings import Settings
from shared.streaming.broker import build_service
from shared.streaming.codec import encode_entry
from shared.streaming.hop import Delivery, Poison
from shared.streaming.priority import PriorityRead, PriorityReclaim
from tests.conftest import Stack, StackFactory, curtois_json, request_json


@pytest.fixture
def names(redis_server: EmbeddedServer) -> Iterator[tuple[Settings, Names]]:
    s = Settings(redis_url=redis_server.url, shiftstream_prefix=f"p{time.time_ns()}:")
    n = Names.from_settings(s)
    r = redis.Redis.from_url(redis_server.url)
    for stream in n.prioritized(n.jobs):
        r.xgroup_create(stream, "solver", id="0", mkstream=True)
    yield s, n
    r.close()


def read_all(s: Settings, n: Names, aging_ms: int, count: int = 10) -> list[tuple[str, list[str]]]:
    """Every read until none is left: (stream, the entries' `v` fields) per read."""

    async def run() -> list[tuple[str, list[str]]]:
        r = async_client(s)
        reader = PriorityRead(r, n.prioritized(n.jobs), "solver", aging_ms)
        out = []
        while got := await reader.read(r, "c1", count, 10):
            [(stream, entries)] = got
            out.append((stream.decode(), [f[b"v"].decode() for _, f in entries]))
        await r.aclose()
        return out

    return asyncio.run(run())


def test_each_read_takes_the_highest_priority_that_waits(names: tuple[Settings, Names]) -> None:
    s, n = names
    r = redis.Redis.from_url(s.redis_url)
    # Written lowest first, so arrival order alone would serve them the wrong way round.
    for p, vs in (("low", ["l1", "l2"]), ("normal", ["n1", "n2"]), ("high", ["h1"])):
        for v in vs:
            r.xadd(n.jobs_for(p), {"v": v})
    reads = read_all(s, n, aging_ms=60_000)
    # One stream per read (a batch never mixes priorities), high, then normal, then low.
    assert reads == [
        (n.jobs_for("high"), ["h1"]),
        (n.jobs_for("normal"), ["n1", "n2"]),
        (n.jobs_for("low"), ["l1", "l2"]),
    ]
    # Taken into the group: pending until acked, like any XREADGROUP.
    for p in READ_ORDER:
        assert r.xpending(n.jobs_for(p), "solver")["pending"] > 0


def test_a_low_job_past_its_aging_goes_before_younger_normal_ones(
    names: tuple[Settings, Names],
) -> None:
    s, n = names
    r = redis.Redis.from_url(s.redis_url)
    now_ms = int(time.time() * 1000)
    r.xadd(n.jobs_for("low"), {"v": "old-low"}, id=f"{now_ms - 20_000}-0")
    r.xadd(n.jobs_for("low"), {"v": "young-low"}, id=f"{now_ms - 1_000}-0")
    # A flood of normal jobs, the oldest queued 10 s after the old low one.
    for i in range(3):
        r.xadd(n.jobs_for("normal"), {"v": f"n{i}"}, id=f"{now_ms - 10_000 + i}-0")
    r.xadd(n.jobs_for("high"), {"v": "h"})
    reads = read_all(s, n, aging_ms=5_000)
    # High first whatever the age; then the old low one, alone (it competes as a normal job
    # queued 5 s later, still before the normal ones); the young low one waits for them.
    assert reads == [
        (n.jobs_for("high"), ["h"]),
        (n.jobs_for("low"), ["old-low"]),
        (n.jobs_for("normal"), ["n0", "n1", "n2"]),
        (n.jobs_for("low"), ["young-low"]),
    ]


def test_without_enough_age_a_low_job_waits_for_normal_ones(
    names: tuple[Settings, Names],
) -> None:
    s, n = names
    r = redis.Redis.from_url(s.redis_url)
    now_ms = int(time.time() * 1000)
    r.xadd(n.jobs_for("low"), {"v": "low"}, id=f"{now_ms - 20_000}-0")
    r.xadd(n.jobs_for("normal"), {"v": "n"}, id=f"{now_ms - 10_000}-0")
    assert read_all(s, n, aging_ms=30_000) == [
        (n.jobs_for("normal"), ["n"]),
        (n.jobs_for("low"), ["low"]),
    ]


def test_a_handed_back_job_keeps_its_wait(names: tuple[Settings, Names]) -> None:
    """A solver writes a batch's extra long jobs back to the tail (ADR 0006) with `since`, the
    time the job was first queued: its aging goes on from there, not from the copy."""
    s, n = names
    r = redis.Redis.from_url(s.redis_url)
    now_ms = int(time.time() * 1000)
    r.xadd(n.jobs_for("normal"), {"v": "n"}, id=f"{now_ms - 10_000}-0")
    r.xadd(n.jobs_for("low"), {"v": "copy", "since": str(now_ms - 20_000)})
    assert [v for _, v in read_all(s, n, aging_ms=5_000)] == [["copy"], ["n"]]


def test_a_read_with_nothing_waiting_wakes_on_the_first_new_entry(
    names: tuple[Settings, Names],
) -> None:
    s, n = names

    async def run() -> Any:
        r = async_client(s)
        reader = PriorityRead(r, n.prioritized(n.jobs), "solver", 0)
        assert await reader.read(r, "c1", 10, 10) == ()
        waiting = asyncio.ensure_future(reader.read(r, "c1", 10, 60_000))
        await asyncio.sleep(0.2)
        await r.xadd(n.jobs_for("low"), {"v": "x"})
        # The wait returns (empty: it takes nothing itself); the next read takes the entry.
        assert await asyncio.wait_for(waiting, 30) == ()
        got = await reader.read(r, "c1", 10, 10)
        await r.aclose()
        return got

    [(stream, [(_, fields)])] = asyncio.run(run())
    assert stream.decode() == n.jobs_for("low") and fields == {b"v": b"x"}


def test_a_dead_workers_entries_are_reclaimed_highest_priority_first(
    names: tuple[Settings, Names],
) -> None:
    """A worker took entries of every priority and died; each reclaim then takes the highest
    priority's idle entry, whichever stream it sits in, and leaves a live worker's alone."""
    s, n = names
    r = redis.Redis.from_url(s.redis_url)
    # Written lowest first, so arrival order alone would give them back the wrong way round.
    for p, vs in (("low", ["l1", "l2"]), ("normal", ["n1", "n2"]), ("high", ["h1", "h2"])):
        for v in vs:
            r.xadd(n.jobs_for(p), {"v": v})
    for p in READ_ORDER:
        [(_, entries)] = r.xreadgroup("solver", "dead", {n.jobs_for(p): ">"})
        ids = [entry_id for entry_id, _ in entries]
        # Idle for a minute, as a dead worker's entries are; the busy worker's n2 is fresh.
        r.xclaim(n.jobs_for(p), "solver", "dead", 0, ids, idle=60_000)
        if p == "normal":
            r.xclaim(n.jobs_for(p), "solver", "busy", 0, ids[1:])

    async def run() -> list[tuple[str, str]]:
        client = async_client(s)
        reclaim = PriorityReclaim(n.prioritized(n.jobs), "solver", 30_000, 10)
        out = []
        while got := await reclaim.claim(client, "alive"):
            [(stream, [(_, fields)])] = got
            out.append((stream.decode(), fields[b"v"].decode()))
        await client.aclose()
        return out

    assert asyncio.run(run()) == [
        (n.jobs_for("high"), "h1"),
        (n.jobs_for("high"), "h2"),
        (n.jobs_for("normal"), "n1"),
        (n.jobs_for("low"), "l1"),
        (n.jobs_for("low"), "l2"),
    ]
    # Claimed: pending under the reclaimer now, the live worker's entry still its own.
    owners = {
        p: sorted(c["name"].decode() for c in r.xinfo_consumers(n.jobs_for(p), "solver")
                  if c["pending"])
        for p in READ_ORDER
    }  # fmt: skip
    assert owners == {"high": ["alive"], "normal": ["alive", "busy"], "low": ["alive"]}


class Tag(BaseModel):
    v: str


def test_a_hops_reclaimers_take_the_highest_priority_first(
    redis_server: EmbeddedServer,
) -> None:
    """Through FastStream: a prioritized hop with no readers, only its three reclaimers, each
    holding on to what it took. The three they take are the two high entries and the normal
    one; the low ones wait until a reclaimer is free again."""
    s = Settings(
        redis_url=redis_server.url,
        shiftstream_prefix=f"rc{time.time_ns()}:",
        reclaim_idle_ms=30_000,
        reclaim_poll_ms=20,
    )
    svc = build_service("reclaim", s)
    n = svc.names
    r = redis.Redis.from_url(s.redis_url)
    for stream in n.prioritized(n.fallback):
        r.xgroup_create(stream, "fallback", id="0", mkstream=True)

    async def entry(v: str) -> dict[Any, Any]:
        return {bDATA_KEY: await encode_entry(Tag(v=v))}

    for p, vs in (("low", ["l1", "l2"]), ("normal", ["n1"]), ("high", ["h1", "h2"])):
        stream = n.prioritized(n.fallback)[READ_ORDER.index(Priority(p))]
        for v in vs:
            r.xadd(stream, asyncio.run(entry(v)))
        [(_, entries)] = r.xreadgroup("fallback", "dead", {stream: ">"})
        r.xclaim(stream, "fallback", "dead", 0, [e for e, _ in entries], idle=60_000)

    taken: list[str] = []
    release = asyncio.Event()

    async def hold(delivery: Delivery[Tag]) -> None:
        taken.append(delivery.body.v)
        await release.wait()

    async def nothing(delivery: Delivery[Any], pipe: Any) -> None:
        return None

    svc.entry_hop(n.fallback, "fallback", Tag, hold, poison=Poison(5, nothing), readers=0)

    async def run() -> tuple[list[str], list[str]]:
        await svc.broker.start()
        try:
            while len(taken) < 3:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)  # room for a wrong fourth
            first = list(taken)
            release.set()
            while len(taken) < 5:
                await asyncio.sleep(0.02)
            return first, list(taken)
        finally:
            await svc.broker.stop()
            await svc.redis.aclose()

    first, every = asyncio.run(asyncio.wait_for(run(), 60))
    assert sorted(first) == ["h1", "h2", "n1"]
    assert sorted(every[3:]) == ["l1", "l2"]
    r.close()


# ------------------------------------------------------------------ through the services


def _finished_order(stack: Stack, jobs: list[str]) -> list[str]:
    """Jobs in the order of their terminal events."""
    ends = [e["job_id"] for e in stack.events() if e["type"] in ("solver.completed",)]
    return [j for j in ends if j in jobs]


def test_waiting_jobs_are_solved_highest_priority_first(make_stack: StackFactory) -> None:
    """One solver slot, busy; jobs of every priority queue up behind it, lowest first. Each
    priority comes from another source: the intake entry's field, the request's own, none."""
    stack = make_stack(env={"WORKER_CONCURRENCY": "1"})
    blocker = stack.submit(curtois_json(8, time_limit=6))
    stack.wait_for(lambda: stack.job(blocker).get("state") == "running", what="running")
    low = [stack.submit(request_json(seed=i, time_limit=0.3), priority="low") for i in range(2)]
    normal = [stack.submit(request_json(seed=10 + i, time_limit=0.3)) for i in range(2)]
    high_request = json.loads(request_json(seed=20, time_limit=0.3)) | {"priority": "high"}
    high = [
        stack.submit(json.dumps(high_request)),
        stack.submit(request_json(seed=21, time_limit=0.3), priority="high"),
    ]
    everything = [blocker, *low, *normal, *high]
    stack.wait_for(
        lambda: all(stack.job(j).get("state") == "queued" for j in everything[1:]),
        what="every job queued",
    )
    # The order below is only meaningful if they all waited together behind the busy slot.
    assert stack.job(blocker)["state"] == "running"
    stack.wait_terminal(*everything, timeout=120)
    order = _finished_order(stack, everything)
    assert order[0] == blocker
    assert set(order[1:3]) == set(high)
    assert set(order[3:5]) == set(normal)
    assert set(order[5:7]) == set(low)
    # The priority shows in the accepted event and the job record.
    accepted = {e["job_id"]: e for e in stack.events() if e["type"] == "solver.accepted"}
    assert [accepted[j]["priority"] for j in (blocker, low[0], normal[0], high[0], high[1])] == [
        "normal", "low", "normal", "high", "high",
    ]  # fmt: skip
    assert stack.job(high[0])["priority"] == "high" and stack.job(low[1])["priority"] == "low"
    assert stack.pending("solver") == 0


def test_a_low_job_is_not_starved_by_normal_ones(make_stack: StackFactory) -> None:
    """With PRIORITY_AGING_SECONDS=1, a low job that waited over a second longer than the
    normal jobs queued behind it is solved before them, though they are of higher priority."""
    stack = make_stack(env={"WORKER_CONCURRENCY": "1", "PRIORITY_AGING_SECONDS": "1"})
    blocker = stack.submit(curtois_json(8, time_limit=6))
    stack.wait_for(lambda: stack.job(blocker).get("state") == "running", what="running")
    low = stack.submit(request_json(seed=1, time_limit=0.3), priority="low")
    stack.wait_for(lambda: stack.job(low).get("state") == "queued", what="low queued")
    time.sleep(1.5)  # its age: past the aging before any normal job arrives
    normal = [stack.submit(request_json(seed=10 + i, time_limit=0.3)) for i in range(3)]
    stack.wait_for(
        lambda: all(stack.job(j).get("state") == "queued" for j in normal), what="queued"
    )
    assert stack.job(blocker)["state"] == "running"
    stack.wait_terminal(blocker, low, *normal, timeout=120)
    assert _finished_order(stack, [blocker, low, *normal])[:2] == [blocker, low]


def test_delayed_jobs_wait_in_their_priority_schedule_and_a_cancel_finds_them(
    make_stack: StackFactory,
) -> None:
    stack = make_stack()
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)).isoformat()
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(days=30)).isoformat()
    due = stack.submit(request_json(time_limit=0.3), not_before=soon, priority="low")
    parked = stack.submit(request_json(time_limit=0.3), not_before=later, priority="high")
    stack.wait_for(lambda: stack.job(parked).get("state") == "scheduled", what="scheduled")
    high_schedule = stack.names.schedule_for("high")
    assert stack.redis.zrange(high_schedule, 0, -1) == [f"ref:{parked}"]
    # The due one went through the low schedule into the low stream.
    assert stack.wait_terminal(due)[due]["type"] == "solver.completed"
    assert any(r["job_id"] == due for r in stack.records(stack.names.jobs_for("low")))
    # A cancel takes the high one out of its schedule at once.
    stack.xadd({"type": "cancel", "job_id": parked})
    done = stack.wait_terminal(parked)[parked]
    assert done["type"] == "solver.failed" and done["error_class"] == "cancelled"
    assert stack.redis.zcard(high_schedule) == 0
    assert not stack.redis.hexists(stack.names.scheduled, parked)


def test_an_unknown_priority_is_refused_naming_it(make_stack: StackFactory) -> None:
    stack = make_stack()
    job = stack.submit(request_json(), priority="urgent")
    done = stack.wait_terminal(job)[job]
    assert done["type"] == "solver.failed" and done["error_class"] == "invalid"
    assert "priority" in done["reason"] and "urgent" in done["reason"]


def test_a_worker_killed_holding_jobs_of_every_priority_loses_and_doubles_none(
    make_stack: StackFactory,
) -> None:
    stack = make_stack(env={"WORKER_CONCURRENCY": "3"})
    jobs = {p: stack.submit(curtois_json(8, time_limit=4), priority=p) for p in READ_ORDER}
    stack.wait_for(
        lambda: all(stack.job(j).get("state") == "running" for j in jobs.values()),
        what="three solves running",
    )
    # The dying worker holds one entry in each priority's stream.
    for p in READ_ORDER:
        assert stack.redis.xpending(stack.names.jobs_for(p), "solver")["pending"] == 1, p
    [pid] = stack.supervisor.pids("solver")
    os.kill(pid, signal.SIGKILL)
    stack.wait_for(lambda: not stack.alive(), what="solver death")
    stack.restart_dead()  # its reclaimers take over the entries of all three streams
    done = stack.wait_terminal(*jobs.values(), timeout=120)
    assert all(e["type"] == "solver.completed" for e in done.values())
    stack.wait_for(lambda: stack.pending("solver") == 0, what="empty pending lists")
    for job in jobs.values():
        assert len(stack.terminal(job)) == 1
        completed = [
            o for o in stack.records(stack.names.outcomes)
            if o.get("job_id") == job and o.get("kind") == "completed"
        ]  # fmt: skip
        assert len(completed) == 1, job
