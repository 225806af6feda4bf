"""Following `solver-events` for every job the bridge holds, with one reader per process.

Thousands of held BullMQ jobs must not mean thousands of blocked reads: one XREAD loop reads
the stream once and hands each event to the `Watch` of its job id (a dict lookup; events of
jobs nobody here holds are skipped). A watch keeps only what its processor acts on: the
latest progress and the terminal event.

An event written before its watch existed is never read by the loop (it starts at the tail).
That happens when a job is taken again after a bridge died (BullMQ's stalled check gave it
back) and ShiftStream finished it meanwhile, or when ShiftStream knew the job id before. The
notifier's terminal guard holds the terminal event's entry id (services/notifier/
emit_event.lua), so `recall` finds the event itself: register the watch, then look the guard
up, and no terminal event can fall between the two.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from redis.exceptions import RedisError

from shared.connection.factory import AsyncRedis
from shared.jobs.events import TERMINAL_EVENTS
from shared.text import text

log = logging.getLogger("shiftstream.bridge")

PROGRESS = "solver.progress"


class Watch:
    """One held job's view of its events; `changed` is set whenever there is news."""

    __slots__ = ("changed", "job_id", "progress", "terminal")

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.progress: int | None = None
        self.terminal: dict[str, str] | None = None
        self.changed = asyncio.Event()

    def offer(self, event: Mapping[str, str]) -> None:
        kind = event.get("type")
        if kind in TERMINAL_EVENTS:
            if self.terminal is None:  # the first one stands; a recall may find it again
                self.terminal = dict(event)
                self.changed.set()
        elif kind == PROGRESS and self.terminal is None:
            try:
                self.progress = int(float(event.get("progress") or 0))
            except ValueError:
                return
            self.changed.set()


def decode(fields: Mapping[Any, Any]) -> dict[str, str]:
    return {text(k, "replace"): text(v, "replace") for k, v in fields.items()}


class Follower:
    def __init__(
        self,
        redis: AsyncRedis,
        stream: str,
        *,
        count: int = 1000,
        block_ms: int = 1000,
        on_resync: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.redis = redis
        self.stream = stream
        self.count = count
        self.block_ms = block_ms
        # After a failed read events may have been trimmed past us: the owner re-checks every
        # held job's guard then.
        self.on_resync = on_resync
        self.watches: dict[str, list[Watch]] = {}
        self.last = "0-0"
        self._task: asyncio.Task[None] | None = None

    def add(self, watch: Watch) -> None:
        self.watches.setdefault(watch.job_id, []).append(watch)

    def remove(self, watch: Watch) -> None:
        found = self.watches.get(watch.job_id)
        if not found:
            return
        with contextlib.suppress(ValueError):
            found.remove(watch)
        if not found:
            del self.watches[watch.job_id]

    async def start(self) -> None:
        # The tail as it is now, not `$`: `$` re-read at every call would skip whatever was
        # written between two reads.
        tail: Any = await self.redis.xrevrange(self.stream, count=1)
        self.last = text(tail[0][0]) if tail else "0-0"
        self._task = asyncio.create_task(self._run(), name="bridge-follower")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        failed = 0
        while True:
            try:
                got: Any = await self.redis.xread(
                    {self.stream: self.last}, count=self.count, block=self.block_ms
                )
            except (RedisError, OSError) as err:
                failed += 1
                if failed == 1:
                    log.warning("reading %s failed (%s); retrying", self.stream, err)
                await asyncio.sleep(min(2.0, 0.1 * 2**failed))
                continue
            if failed:
                failed = 0
                log.info("reading %s again", self.stream)
                if self.on_resync is not None:
                    await self._resync()
            for _stream, entries in got or []:
                for entry_id, fields in entries:
                    self.last = text(entry_id)
                    self._dispatch(fields)

    def _dispatch(self, fields: Mapping[Any, Any]) -> None:
        job_id = fields.get(b"job_id", fields.get("job_id"))
        if job_id is None:
            return
        watches = self.watches.get(text(job_id, "replace"))
        if not watches:
            return
        event = decode(fields)
        for w in watches:
            w.offer(event)

    async def _resync(self) -> None:
        assert self.on_resync is not None
        try:
            await self.on_resync()
        except (RedisError, OSError) as err:
            log.warning("re-checking held jobs after a read error failed: %s", err)

    async def recall(self, watch: Watch, guard: Any) -> bool:
        """Offer `watch` its terminal event if the guard (the value of the job's terminal
        guard key, None when there is none) points at one still in the stream.

        Returns False when the job ended but its event is gone (trimmed, or a guard written
        before guards held ids): the caller falls back to the job record.
        """
        if guard is None:
            return True
        entry = text(guard)
        if "-" not in entry:
            return False
        rows: Any = await self.redis.xrange(self.stream, min=entry, max=entry)
        if not rows:
            return False
        watch.offer(decode(rows[0][1]))
        return True
