"""Keep a long-running entry's claim fresh so no reclaimer takes it from a live worker.

XAUTOCLAIM hands an entry to another consumer once it has been idle for `RECLAIM_IDLE_MS`.
A solve may legitimately run longer than that, so while it runs we XCLAIM our own entry with
JUSTID every third of the idle time: that resets its idle time without bumping the delivery
count (which must keep counting real redeliveries for poison detection). Only a dead
consumer's entries ever reach the idle threshold.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from shared.connection.factory import AsyncRedis
from shared.text import text

log = logging.getLogger("shiftstream.lease")


async def renew(
    redis: AsyncRedis,
    stream: str,
    group: str,
    entry_ids: Sequence[str | bytes],
    consumer: str,
) -> bool:
    """Reset the entries' idle time; False if none is pending any more (acked or trimmed)."""
    claimed = await redis.xclaim(
        stream, group, consumer, min_idle_time=0, message_ids=list(entry_ids), justid=True
    )
    return bool(claimed)


async def owner(redis: AsyncRedis, stream: str, group: str, entry_id: str | bytes) -> str:
    rows = await redis.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
    if not rows:
        return ""
    name = rows[0]["consumer"]
    return text(name)


@contextlib.asynccontextmanager
async def lease(
    redis: AsyncRedis,
    stream: str,
    group: str,
    entry_ids: Sequence[str | bytes],
    interval: float,
    consumer: str | None = None,
) -> AsyncIterator[None]:
    """Renew the claim on `entry_ids` every `interval` seconds while the block runs.

    Renewals are made in the name of the consumer that holds the entries, so XINFO CONSUMERS
    stays truthful; when the caller does not know it, it is looked up at the first renewal,
    so a block shorter than `interval` (nearly every solve) costs no round trip at all.
    """

    stop = asyncio.Event()

    async def loop() -> None:
        holder = consumer
        while True:
            try:
                await asyncio.wait_for(stop.wait(), interval)
                return
            except TimeoutError:
                pass
            try:
                if holder is None:
                    holder = await owner(redis, stream, group, entry_ids[0])
                if holder and not await renew(redis, stream, group, entry_ids, holder):
                    return
            except Exception:  # a Redis blip must not kill the solve; the next tick retries
                log.warning("lease renewal of %r failed", entry_ids[0], exc_info=True)

    # Stopped by an event, not by cancelling: a cancel that lands while redis-py is inside a
    # command can be turned into a connection error, which the loop's `except` then took for a
    # blip; the task kept renewing, "cancelling" for ever, and the handler waiting for it hung
    # with its whole batch pending (a chaos run caught it with `kill -USR1`,
    # shared/streaming/runner.py).
    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        stop.set()
        await task
