"""The five services on a Sentinel deployment started by the test: a primary, a replica and
three sentinels (`redis-server sentinel.conf --sentinel`) on free ports.

- A failover in the middle of the work: every service finds the new primary by itself (no
  process is restarted), every job ends with exactly one terminal event, nothing stays pending.
- The durability gate (docs/decisions/0012-failover-durability.md): while no replica takes the
  writes, the notifier shows a client nothing, so nothing a client saw can vanish in a failover;
  the held events appear once a replica holds what they stand on.
- Clients: a submission with `REDIS_WAIT_REPLICAS` returns only once a replica holds it, and says
  so plainly when none does.
- Every hop's reader (shared/streaming/reconnect.py), prioritized or not, that loses its primary
  reads from the promoted replica without failing its read (a failed read costs FastStream's 5 s
  wait), and a service starting while there is no primary waits for one instead of exiting.

The chaos run does the same twice with a thousand jobs and lossy failovers (bench/chaos.py
`--failovers`; tests/test_chaos.py runs it at CI size).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import redis
from faststream.redis.message import bDATA_KEY
from pydantic import BaseModel

from shared.cli.topology import SentinelSet, pause, resume
from shared.connection.durable import NotReplicated
from shared.jobs.client import Client
from shared.settings import Settings
from shared.streaming.broker import build_service
from shared.streaming.codec import encode_entry
from shared.streaming.hop import Delivery, Poison
from tests.conftest import Stack, curtois_json, request_json

pytestmark = pytest.mark.redis
T = TypeVar("T")


@pytest.fixture
def sentinel_set() -> Iterator[SentinelSet]:
    s = SentinelSet(replicas=1, sentinels=3).start()
    yield s
    s.stop()


@pytest.fixture
def sentinel_stack(sentinel_set: SentinelSet, tmp_path: Path) -> Iterator[Stack]:
    env = sentinel_set.env()
    stack = Stack(env["REDIS_URL"], tmp_path / "logs", env).start()
    yield stack
    stack.stop()


def retrying(call: Callable[[], T], timeout: float = 30.0) -> T:
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_a_failover_mid_run_every_job_ends_once_without_restarts(
    sentinel_set: SentinelSet, sentinel_stack: Stack
) -> None:
    stack = sentinel_stack
    stack.wait_terminal(stack.submit(request_json(implementation="greedy")), timeout=60)
    pids = sorted(stack.supervisor.pids())
    long_job = stack.submit(curtois_json(8, time_limit=4))
    quick = [stack.submit(request_json(implementation="greedy", seed=i)) for i in range(10)]
    stack.wait_for(lambda: stack.job(long_job).get("state") == "running", what="running")

    old = sentinel_set.kill_primary()
    promoted = sentinel_set.wait_promotion(old.port)
    assert promoted.port != old.port
    sentinel_set.restart(old)  # back as a replica of the new primary
    # Like any producer, the test retries while the sentinels settle on the new primary.
    after = [
        retrying(lambda i=i: stack.submit(request_json(implementation="greedy", seed=20 + i)))
        for i in range(10)
    ]

    # Through triage too: refused, its failure goes intake -> triage -> notifier.
    refused = retrying(lambda: stack.submit('{"version": 99}'))

    jobs = [long_job, *quick, *after]
    found = stack.wait_terminal(*jobs, refused, timeout=90)
    assert all(found[j]["type"] == "solver.completed" for j in jobs), found
    assert found[refused]["error_class"] == "invalid"
    time.sleep(1.0)  # room for a wrong second terminal event
    assert all(len(stack.terminal(j)) == 1 for j in [*jobs, refused])
    # No service's read failed into FastStream's 5 s wait: each rode out the promotion.
    assert stack.supervisor.log_dir is not None
    failed_reads = {
        log.name: log.read_text(errors="replace").count("Message fetch error")
        for log in stack.supervisor.log_dir.glob("*.log")
    }
    assert not any(failed_reads.values()), failed_reads
    for service in stack.names.groups:
        stack.wait_for(lambda s=service: stack.pending(s) == 0, what=f"{service} pending 0")
    # Nobody restarted anything: the same processes followed the promotion.
    assert sorted(stack.supervisor.pids()) == pids and stack.alive()
    assert stack.redis.info("replication")["role"] == "master"


def test_no_event_is_shown_before_a_replica_holds_what_it_tells(
    sentinel_set: SentinelSet, sentinel_stack: Stack
) -> None:
    stack = sentinel_stack
    stack.wait_terminal(stack.submit(request_json(implementation="greedy")), timeout=60)
    replica = next(n for n in sentinel_set.nodes if n.port != sentinel_set.primary().port)
    assert stack.supervisor.log_dir is not None
    notifier_log = stack.supervisor.log_dir / "notifier-0.log"
    pause(replica)  # takes no writes; the sentinels see it down only after 1 s of silence
    try:
        job = stack.submit(request_json(implementation="greedy"))
        # The intake accepts it and the solver solves it on the primary...
        stack.wait_for(
            lambda: any(o.get("job_id") == job for o in stack.records(stack.names.outcomes)),
            what="the outcome on the primary",
        )
        # ...the notifier's WAIT runs out and it says it holds the events...
        stack.wait_for(
            lambda: "holding the batch's events" in notifier_log.read_text(), what="the hold"
        )
        # ...and no client sees anything of the job while a failover could take it away.
        assert stack.events(job) == []
    finally:
        resume(replica)
    done = stack.wait_terminal(job, timeout=30)[job]
    assert done["type"] == "solver.completed"
    assert stack.events(job)[0]["type"] == "solver.accepted"


def test_a_submission_returns_once_a_replica_holds_it(
    sentinel_set: SentinelSet, tmp_path: Path
) -> None:
    env = {k.lower(): v for k, v in sentinel_set.env().items()}
    settings = Settings(**env, redis_wait_timeout_ms=300, shiftstream_prefix="wait:")

    async def submit() -> str:
        async with Client(settings.redis_url, settings) as client:
            return await client.submit("{}", job_id="w-1")

    assert asyncio.run(submit()) == "w-1"
    replica = next(n for n in sentinel_set.nodes if n.port != sentinel_set.primary().port)
    pause(replica)
    try:
        with pytest.raises(NotReplicated, match="0 of 1 replicas"):
            asyncio.run(submit())
    finally:
        resume(replica)


class Ping(BaseModel):
    n: str


class FetchErrors(logging.Handler):
    """Counts FastStream's "Message fetch error": a read that raised, and the 5 s wait after it."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "Message fetch error" in record.getMessage():
            self.seen.append(record.getMessage())


def test_every_hop_reads_through_a_failover_without_a_failed_read(
    sentinel_set: SentinelSet,
) -> None:
    """Each kind of hop the services build (batched: intake, notifier, solver; one entry at a
    time: triage, fallback; prioritized or not) reads an entry written after a promotion, and
    none of their reads, nor their reclaimers', fails into FastStream's 5 s wait meanwhile."""
    settings = Settings(
        **{k.lower(): v for k, v in sentinel_set.env().items()},
        shiftstream_prefix="fo:",
        # Only the readers can deliver below: what they read, they read after the failover.
        reclaim_idle_ms=600_000,
        reclaim_poll_ms=100,
    )
    svc = build_service("failover", settings)
    errors = FetchErrors()
    logging.getLogger("shiftstream.failover").addHandler(errors)
    got: dict[str, list[str]] = collections.defaultdict(list)

    def record(hop: str) -> Callable[..., Any]:
        async def batch(deliveries: list[Delivery[Ping]]) -> None:
            got[hop] += [d.body.n for d in deliveries]

        return batch

    async def nothing(delivery: Delivery[Any], pipe: Any) -> None:
        return None

    poison = Poison(5, nothing)
    n = svc.names
    hops = {  # hop -> the stream an entry is written to
        "batched": "fo:plain-batched",
        "entry": "fo:plain-entry",
        "prioritized batched": n.jobs_for("high"),
        "prioritized entry": n.prioritized(n.fallback)[0],
    }
    svc.batched_hop(hops["batched"], "g", Ping, record("batched"), poison=poison)
    entry_batch = record("entry")
    svc.entry_hop(hops["entry"], "g", Ping, lambda d: entry_batch([d]), poison=poison)
    svc.batched_hop(n.jobs, "g", Ping, record("prioritized batched"), poison=poison)
    prio_batch = record("prioritized entry")
    svc.entry_hop(n.fallback, "g", Ping, lambda d: prio_batch([d]), poison=poison)

    async def wait_for(label: str) -> None:
        while any(label not in got[hop] for hop in hops):
            await asyncio.sleep(0.05)

    async def run() -> None:
        await svc.create_groups()
        await svc.broker.start()
        try:
            with sentinel_set.primary().client(socket_timeout=5) as direct:
                for stream in hops.values():
                    direct.xadd(stream, {bDATA_KEY: await encode_entry(Ping(n="before"))})
            await asyncio.wait_for(wait_for("before"), 30)
            old = sentinel_set.kill_primary()
            new = await asyncio.to_thread(sentinel_set.wait_promotion, old.port)
            with new.client(socket_timeout=5) as direct:
                for stream in hops.values():
                    direct.xadd(stream, {bDATA_KEY: await encode_entry(Ping(n="after"))})
            await asyncio.wait_for(wait_for("after"), 30)
        finally:
            await svc.broker.stop()
            await svc.redis.aclose()

    try:
        asyncio.run(run())
    finally:
        logging.getLogger("shiftstream.failover").removeHandler(errors)
    assert {hop: got[hop] for hop in hops} == {hop: ["before", "after"] for hop in hops}
    assert errors.seen == []


def test_a_service_started_without_a_primary_waits_for_the_promotion(
    sentinel_set: SentinelSet,
) -> None:
    settings = Settings(**{k.lower(): v for k, v in sentinel_set.env().items()})
    svc = build_service("solver", settings)
    svc._groups.extend(svc.names.inputs("solver"))  # what the solver's hops register
    old = sentinel_set.kill_primary()

    async def start() -> None:
        await svc.create_groups()  # during the election: no primary, then the promoted one
        await svc.redis.aclose()

    asyncio.run(asyncio.wait_for(start(), timeout=60))
    new = sentinel_set.wait_promotion(old.port)
    with new.client(socket_timeout=5) as direct:
        for stream, group in svc.names.inputs("solver"):
            assert [g["name"] for g in direct.xinfo_groups(stream)] == [group.encode()]
