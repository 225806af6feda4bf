"""Bounded memory: the intake stream is trimmed behind the group, every side key expires."""

from __future__ import annotations

import time

import pytest

from tests.conftest import StackFactory, request_json

pytestmark = pytest.mark.redis


def test_untrimmed_foreign_writes_are_trimmed_once_consumed(make_stack: StackFactory) -> None:
    stack = make_stack(env={"STREAM_MAXLEN": "100", "TRIM_INTERVAL_SECONDS": "0.3"})
    for i in range(150):  # a producer that never passes MAXLEN
        stack.redis.xadd(stack.names.intake, {"type": "cancel", "job_id": f"nothing-{i}"})
    job = stack.submit(request_json(implementation="greedy"))
    stack.wait_terminal(job)
    stack.wait_for(
        lambda: stack.redis.xlen(stack.names.intake) <= 100, timeout=20, what="intake trim"
    )
    assert stack.pending("intake") == 0


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
