"""Bounded memory: every hop's input is trimmed behind its group, every side key expires."""

from __future__ import annotations

import json
import re
import subprocess
import time
from pathlib import Path

import pytest
import redis

from shared.cli.devrunner import free_port, server_binary
from tests.conftest import ROOT, StackFactory, request_json

pytestmark = pytest.mark.redis


def test_untrimmed_foreign_writes_are_trimmed_once_consumed(make_stack: StackFactory) -> None:
    stack = make_stack(env={"STREAM_MAXLEN": "100", "TRIM_INTERVAL_SECONDS": "0.3"})
    for i in range(150):  # a producer that never passes MAXLEN
        stack.redis.xadd(stack.names.intake, {"type": "cancel", "job_id": f"nothing-{i}"})
    job = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(job)
    # Everything consumed goes, not only what lies past STREAM_MAXLEN.
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.intake) == 0, timeout=20, what="intake trim"
    )
    assert stack.pending("intake") == 0


def test_rejected_oversized_requests_leave_redis(make_stack: StackFactory) -> None:
    """Requests over the size limit are answered `invalid` and their bytes leave Redis: the
    intake stream keeps no consumed entry, so a flood of them does not stay in memory."""
    stack = make_stack(env={"TRIM_INTERVAL_SECONDS": "0.3", "SOLVER_MAX_JSON_BYTES": "100000"})
    before = int(stack.redis.info("memory")["used_memory"])
    big = '{"x": "' + "y" * 2_000_000 + '"}'
    jobs = [stack.submit(big) for _ in range(10)]
    found = stack.wait_terminal(*jobs)
    assert all(e["error_class"] == "invalid" for e in found.values())
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.intake) == 0, timeout=20, what="intake trim"
    )
    # The dead letters hold the raw entry shortened (10,000 characters a field).
    grown = int(stack.redis.info("memory")["used_memory"]) - before
    assert grown < 5_000_000, grown


def test_outcomes_are_removed_once_published(make_stack: StackFactory) -> None:
    """A result is kept once, in `solver-events`, not a second time in `solver.outcomes`."""
    stack = make_stack(env={"TRIM_INTERVAL_SECONDS": "0.3"})
    jobs = [stack.submit(request_json(implementation="greedy")) for _ in range(3)]
    stack.wait_terminal(*jobs)
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.outcomes) == 0, timeout=20, what="outcomes trim"
    )
    assert all(stack.terminal(j)[0]["type"] == "solver.completed" for j in jobs)


def test_every_hop_input_keeps_only_its_backlog(make_stack: StackFactory) -> None:
    """Each service removes what its group consumed from every stream it reads: the solver's
    three priority streams, the fallback's (a crashed C solve goes there), triage's failures
    (an invalid request goes there) and the rest; none is capped by a MAXLEN that could cut
    unread jobs."""
    stack = make_stack(
        env={
            "TRIM_INTERVAL_SECONDS": "0.3",
            "SHIFTSTREAM_TEST_CRASH": "1",
            "SOLVER_WATCHDOG_GRACE_SECONDS": "1",
        }
    )
    crash = json.loads(request_json(time_limit=1.0))
    crash["name"] = "__crash__ please"
    jobs = [
        stack.submit(request_json(seed=i, implementation="greedy"), priority=p)
        for i, p in enumerate(("high", "normal", "low"))
    ]
    jobs += [stack.submit("not json"), stack.submit(json.dumps(crash))]
    done = stack.wait_terminal(*jobs)
    assert done[jobs[3]]["error_class"] == "invalid"
    assert done[jobs[4]]["solver_used"] == "greedy"
    inputs = [s for service in stack.names.groups for s, _ in stack.names.inputs(service)]
    assert len(inputs) == 9

    def left() -> dict[str, int]:
        return {s: n for s in inputs if (n := int(stack.redis.xlen(s)))}

    stack.wait_for(lambda: not left(), timeout=30, what="every input trimmed")
    assert all(stack.pending(service) == 0 for service in stack.names.groups)


def test_a_backlog_past_stream_maxlen_is_kept(make_stack: StackFactory) -> None:
    """No internal stream is capped: 300 jobs queued for a solver that is not running, with
    STREAM_MAXLEN 100, all wait in `solver.jobs` (MAXLEN ~ 100 used to cut them unread).
    `bench/soak.py --stream-maxlen 100` shows such a backlog solved to the last job."""
    stack = make_stack(
        env={"STREAM_MAXLEN": "100", "TRIM_INTERVAL_SECONDS": "0.3"}, scale={"solver": 0}
    )
    body = request_json(implementation="greedy", time_limit=0.3)
    with stack.redis.pipeline(transaction=False) as pipe:
        for i in range(300):
            pipe.xadd(stack.names.intake, {"type": "solve", "job_id": f"b-{i}", "payload": body})
        pipe.execute()
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.intake) == 0, timeout=60, what="intake consumed"
    )
    assert stack.redis.xlen(stack.names.jobs) == 300


def test_every_side_key_expires(make_stack: StackFactory) -> None:
    stack = make_stack()
    ok = stack.submit(request_json(implementation="greedy"))
    bad = stack.submit("[]")
    stack.xadd({"type": "cancel", "job_id": ok})
    stack.wait_terminal(ok, bad)
    time.sleep(0.5)
    n = stack.names
    streams = {
        n.intake, *n.prioritized(n.jobs), *n.prioritized(n.fallback), n.failures, n.outcomes,
        n.events, n.dead,
    }  # fmt: skip
    keys = [k for k in stack.redis.scan_iter(match="*") if stack.prefix in k]
    side = [k for k in keys if k not in streams and k != stack.names.schedule]
    assert len(side) >= 5, keys  # job records, idempotency keys, guards, the cancel marker
    forever = [k for k in side if stack.redis.ttl(k) < 0]
    assert forever == [], forever


def test_redis_refuses_oversized_writes_at_the_protocol_level(tmp_path: Path) -> None:
    """`proto-max-bulk-len` in the shipped configs: a producer's 40 MB field never takes
    memory, a roster at the size limits (about 14 MB) still fits."""
    values = {
        re.search(r"^proto-max-bulk-len (\S+)$", (ROOT / conf).read_text(), re.M).group(1)  # type: ignore[union-attr]
        for conf in ("infra/redis/redis.conf", "infra/k8s/redis/redis.conf")
    }
    (value,) = values
    port = free_port()
    proc = subprocess.Popen(
        [server_binary(), "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(tmp_path), "--proto-max-bulk-len", value],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        r = redis.Redis(port=port)
        deadline = time.monotonic() + 10
        while True:
            try:
                r.ping()
                break
            except redis.ConnectionError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        r.xadd("s", {"result": b"x" * 16_000_000})
        with pytest.raises(redis.RedisError):
            redis.Redis(port=port).xadd("s", {"payload": b"x" * 40_000_000})
        assert r.xlen("s") == 1
    finally:
        proc.terminate()
        proc.wait(10)
