"""Retention of a stream read by one group: remove what the group is done with, promptly.

A foreign producer may XADD without MAXLEN, and a MAXLEN of ours could drop entries the group
has not read yet (a backlog is not garbage). So only what the group has consumed is cut, every
`TRIM_INTERVAL_SECONDS`, exactly (not `~`, which keeps whole macro nodes: a few rejected
20 MiB requests would stay): everything before the oldest pending entry or, with nothing
pending, up to and including the last delivered one. Every hop's input streams are trimmed so
by the service that consumes them (shared/streaming/broker.py starts one `Trimmer` per
service): the public intake stream, `solver.jobs` and `solver.fallback` (each with its high and
low streams), `solver.failures` and `solver.outcomes` (once the events are published). The
memory those streams hold is their backlog, not their history, and no writer caps them with
MAXLEN, which would cut unread entries (docs/services.md, "Memory"; decision 0015).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence

from shared.connection.factory import AsyncRedis
from shared.text import text

log = logging.getLogger("shiftstream.retention")


def id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def after(entry_id: str) -> str:
    """The smallest stream id above `entry_id` (MINID keeps ids >= its argument)."""
    ms, seq = id_key(entry_id)
    return f"{ms}-{seq + 1}" if seq < 2**64 - 1 else f"{ms + 1}-0"


async def trim_consumed(redis: AsyncRedis, stream: str, group: str) -> int:
    """Trim the entries `group` has consumed from `stream`; how many went."""
    groups = await redis.xinfo_groups(stream)
    info = next((g for g in groups if text(g["name"]) == group), None)
    if info is None:
        return 0
    delivered = text(info["last-delivered-id"])
    if delivered == "0-0":
        return 0
    pending = await redis.xpending(stream, group)
    floor = after(delivered)
    if pending["pending"] and id_key(text(pending["min"])) < id_key(floor):
        floor = text(pending["min"])
    return int(await redis.xtrim(stream, minid=floor, approximate=False))


class Trimmer:
    """A background task running `trim_consumed` on each of a service's inputs (then `also`,
    the intake's stream watch, which counts best on a stream holding nothing consumed) every
    `interval` seconds.

    Parameters:
        redis: the service's client.
        inputs: (stream, group) of every stream the service consumes, each read by that one
            group.
        interval: `TRIM_INTERVAL_SECONDS`.
        also: more work of the same period, run after each trim.
    """

    def __init__(
        self,
        redis: AsyncRedis,
        inputs: Sequence[tuple[str, str]],
        interval: float,
        also: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.redis, self.inputs = redis, tuple(inputs)
        self.interval, self.also = interval, also
        self._task: asyncio.Task[None] | None = None

    async def trim(self) -> int:
        trimmed = 0
        for stream, group in self.inputs:
            try:
                trimmed += await trim_consumed(self.redis, stream, group)
            except Exception:  # retried next interval (idempotent); the others still go
                log.warning("trimming %s failed", stream, exc_info=True)
        if self.also is not None:
            await self.also()
        return trimmed

    async def _once(self) -> None:
        try:
            await self.trim()
        except Exception:  # retried next interval
            log.warning("the work after trimming failed", exc_info=True)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            await self._once()

    async def start(self) -> None:
        """Trim once before returning, so that a service that says it has started has done
        its start-up trim (nothing consumed later is cut before the next interval)."""
        if not self.inputs and self.also is None:
            return
        await self._once()
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
