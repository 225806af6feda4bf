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
from collections.abc import AsyncIterator

import redis.asyncio as aioredis

log = logging.getLogger("shiftstream.lease")


async def renew(
    redis: aioredis.Redis, stream: str, group: str, entry_id: str | bytes, consumer: str
) -> bool:
    """Reset the entry's idle time; False if it is no longer pending (acked or trimmed)."""
    claimed = await redis.xclaim(
        stream, group, consumer, min_idle_time=0, message_ids=[entry_id], justid=True
    )
    return bool(claimed)


async def owner(redis: aioredis.Redis, stream: str, group: str, entry_id: str | bytes) -> str:
    rows = await redis.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
    if not rows:
        return ""
    name = rows[0]["consumer"]
    return name.decode() if isinstance(name, bytes) else str(name)


@contextlib.asynccontextmanager
async def lease(
    redis: aioredis.Redis,
    stream: str,
    group: str,
    entry_id: str | bytes,
    interval: float,
) -> AsyncIterator[None]:
    """Renew the claim on `entry_id` every `interval` seconds while the block runs."""
    # Renew in the name of whichever of our consumers (reader or reclaimer) holds it, so
    # XINFO CONSUMERS stays truthful.
    consumer = await owner(redis, stream, group, entry_id)

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                if consumer and not await renew(redis, stream, group, entry_id, consumer):
                    return
            except Exception:  # a Redis blip must not kill the solve; the next tick retries
                log.warning("lease renewal of %r failed", entry_id, exc_info=True)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
