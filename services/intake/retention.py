"""Retention of the public intake stream: trim what the intake's group has consumed.

Foreign producers may XADD without MAXLEN, and a MAXLEN of ours could drop entries the group
has not read yet (a backlog is not garbage). So only what the group has taken is cut:
everything before the oldest pending entry and the last delivered one, once the stream holds
more than `STREAM_MAXLEN` entries, every `TRIM_INTERVAL_SECONDS`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from shared.connection.factory import AsyncRedis
from shared.text import text

log = logging.getLogger("shiftstream.intake")


def id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


async def trim_consumed(redis: AsyncRedis, stream: str, group: str, maxlen: int) -> int:
    """Trim the entries `group` has consumed once `stream` exceeds `maxlen`; how many went."""
    if await redis.xlen(stream) <= maxlen:
        return 0
    groups = await redis.xinfo_groups(stream)
    info = next((g for g in groups if text(g["name"]) == group), None)
    if info is None:
        return 0
    floor = text(info["last-delivered-id"])
    pending = await redis.xpending(stream, group)
    if pending["pending"] and id_key(text(pending["min"])) < id_key(floor):
        floor = text(pending["min"])
    return int(await redis.xtrim(stream, minid=floor))


class Trimmer:
    """A background task running `trim_consumed` every `interval` seconds.

    Parameters:
        redis: the service's client.
        stream, group: the intake stream and the intake's group.
        maxlen: `STREAM_MAXLEN`: below it nothing is trimmed.
        interval: `TRIM_INTERVAL_SECONDS`.
    """

    def __init__(
        self, redis: AsyncRedis, stream: str, group: str, maxlen: int, interval: float
    ) -> None:
        self.redis, self.stream, self.group = redis, stream, group
        self.maxlen, self.interval = maxlen, interval
        self._task: asyncio.Task[None] | None = None

    async def trim(self) -> int:
        return await trim_consumed(self.redis, self.stream, self.group, self.maxlen)

    async def _loop(self) -> None:
        while True:
            try:
                await self.trim()
            except Exception:  # retried next interval; trimming is idempotent
                log.warning("trimming the intake stream failed", exc_info=True)
            await asyncio.sleep(self.interval)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
