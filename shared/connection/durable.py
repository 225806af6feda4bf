"""Writes that must survive a failover: WAIT until replicas hold them (docs/decisions/0012).

Redis replicates asynchronously: a primary acknowledges a write before any replica has it, and
a failover promotes a replica that may lack the primary's last writes. `WAIT n ms` blocks until
`n` replicas acknowledged every write the same connection made before it, so it must travel on
that connection: in the writes' own pipeline. A replica holds a prefix of the primary's history
(one replication stream, applied in order), so a WAIT also covers everything any client wrote
before those writes.

Two uses:
- `write_durably`: a client's own write (a submission, a cancel, a dead-letter replay): the
  writes and a WAIT in one pipeline; fewer replicas than asked is `NotReplicated`, and the
  caller may repeat the write (each of them is idempotent).
- `fence`: the notifier, before it shows a batch's events to clients, writes a fence key and
  WAITs for it, so whatever the batch's events tell (a job accepted, a roster completed) is on
  a replica before a client can read it. It waits as long as it takes: showing the events
  earlier is exactly what must not happen.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("shiftstream.durable")


class NotReplicated(RuntimeError):
    """A write reached the primary but not enough replicas within the timeout."""


def _short(replicas: int, acked: int, timeout_ms: int) -> NotReplicated:
    return NotReplicated(
        f"written to the primary, but {acked} of {replicas} replicas acknowledged within "
        f"{timeout_ms} ms: it may not survive a failover (REDIS_WAIT_REPLICAS={replicas}); "
        "the write is idempotent, repeat it"
    )


async def write_durably(
    redis: Any, replicas: int, timeout_ms: int, queue: Callable[[Any], object]
) -> list[Any]:
    """Run the writes `queue` adds to a pipeline, then WAIT for `replicas` (0: no WAIT).

    Returns the writes' replies; raises `NotReplicated` when fewer replicas acknowledged.
    """
    async with redis.pipeline(transaction=False) as pipe:
        queue(pipe)
        if replicas:
            pipe.wait(replicas, timeout_ms)
        replies: list[Any] = await pipe.execute()
    if replicas:
        acked = int(replies.pop())
        if acked < replicas:
            raise _short(replicas, acked, timeout_ms)
    return replies


def write_durably_sync(
    redis: Any, replicas: int, timeout_ms: int, queue: Callable[[Any], object]
) -> list[Any]:
    """`write_durably` for a blocking client (the CLI)."""
    with redis.pipeline(transaction=False) as pipe:
        queue(pipe)
        if replicas:
            pipe.wait(replicas, timeout_ms)
        replies: list[Any] = pipe.execute()
    if replicas:
        acked = int(replies.pop())
        if acked < replicas:
            raise _short(replicas, acked, timeout_ms)
    return replies


async def fence(redis: Any, key: str, replicas: int, timeout_ms: int) -> int:
    """Block until `replicas` replicas hold everything written before this call; the number
    of WAITs it took.

    Retries for as long as it takes: with too few replicas (one is resyncing after a failover)
    the caller holds its batch, which stays pending and is redone if this process dies.
    """
    started = time.monotonic()
    rounds = 0
    while True:
        rounds += 1
        async with redis.pipeline(transaction=False) as pipe:
            # Any write does: WAIT covers what this connection wrote, and the fence comes
            # after everything the caller has read.
            pipe.set(key, "1", px=60_000)
            pipe.wait(replicas, timeout_ms)
            _, acked = await pipe.execute()
        if int(acked) >= replicas:
            if rounds > 1:
                log.warning(
                    "replicas caught up after %.1f s; showing the held events",
                    time.monotonic() - started,
                )
            return rounds
        log.warning(
            "%s of %d replicas hold the writes after %.1f s: holding the batch's events "
            "until they do (REDIS_WAIT_REPLICAS=%d)",
            acked,
            replicas,
            time.monotonic() - started,
            replicas,
        )
