"""What the overview shows, sampled once per refresh for every open page.

One sampler per console process reads Redis every `CONSOLE_REFRESH_SECONDS` and every open page
gets the same snapshot over server-sent events, so ten open tabs cost what one does.

- Queue figures: `shared.observability.queue_stats.collect`, with its window kept up to date
  incrementally (`EventWindow`): each tick reads only the events written since the last one,
  instead of rescanning minutes of `solver-events` every two seconds.
- The chart's history: one point per minute (most jobs waiting during the minute, jobs ended
  in it), kept in Redis by the console itself in a sorted set `<prefix>console:history`
  (`History`): 61 members at most, the key expires two hours after the last write, so a
  console that restarts keeps its hour and several consoles share one chart.
- Recent jobs (`JobIndex`): job ids in order of their latest event, from the same reads,
  backfilled from the newest events at start; bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import redis
from pydantic import BaseModel

from shared.connection.factory import SyncRedis
from shared.names import Names
from shared.observability.queue_stats import (
    MAX_WINDOW_ENTRIES,
    QueueStats,
    Terminal,
    collect,
    fallbacks_since,
    queue_waits,
    summarise_window,
    terminal_of,
)
from shared.text import text

log = logging.getLogger("shiftstream.console")

HISTORY_MINUTES = 60
PAGE = 1_000
# Most events one tick reads: at this many the window falls behind rather than the page.
MAX_PAGES_PER_TICK = 50
RECENT_JOBS = 1_000
TERMINAL_TYPES = (b"solver.completed", b"solver.failed")
BACKFILL_EVENTS = 2_000


class MinutePoint(BaseModel):
    minute: int  # Unix time // 60
    waiting: int = 0  # most jobs waiting at any sample in the minute
    done: int = 0  # terminal events (completed + failed) in the minute
    failed: int = 0


def waiting_jobs(stats: QueueStats) -> int:
    """Jobs not yet solved: entries the intake and solver groups have not finished
    (undelivered + delivered but not acked), plus jobs waiting in the delay schedule."""
    total = stats.scheduled
    for g in stats.groups:
        if g.service in ("intake", "solver") and g.exists:
            total += (g.lag or 0) + g.pending
    return total


class History:
    """The per-minute series in Redis: a sorted set scored by minute, one member per minute."""

    def __init__(self, names: Names, minutes: int = HISTORY_MINUTES) -> None:
        self.key = f"{names.prefix}console:history"
        self.minutes = minutes

    def write(self, r: SyncRedis, point: MinutePoint) -> None:
        member = point.model_dump_json()
        pipe = r.pipeline(transaction=True)
        pipe.zremrangebyscore(self.key, point.minute, point.minute)
        pipe.zadd(self.key, {member: point.minute})
        pipe.zremrangebyscore(self.key, "-inf", point.minute - self.minutes - 1)
        pipe.expire(self.key, 2 * self.minutes * 60)
        pipe.execute()

    def read(self, r: SyncRedis) -> list[MinutePoint]:
        out: dict[int, MinutePoint] = {}
        members: Any = r.zrange(self.key, 0, -1)
        for raw in members:
            with contextlib.suppress(ValueError):
                p = MinutePoint.model_validate_json(raw)
                out[p.minute] = p
        return [out[m] for m in sorted(out)]


@dataclass
class JobSeen:
    job_id: str
    last_ms: int
    last_type: str


class JobIndex:
    """Recent job ids, newest activity first; bounded to `size`."""

    def __init__(self, size: int = RECENT_JOBS) -> None:
        self.size = size
        self._jobs: OrderedDict[str, JobSeen] = OrderedDict()

    def see(self, job_id: str, at_ms: int, kind: str) -> None:
        self._jobs.pop(job_id, None)
        self._jobs[job_id] = JobSeen(job_id, at_ms, kind)
        while len(self._jobs) > self.size:
            self._jobs.popitem(last=False)

    def newest(self, count: int) -> list[JobSeen]:
        out = []
        for seen in reversed(self._jobs.values()):
            out.append(seen)
            if len(out) >= count:
                break
        return out


@dataclass
class EventWindow:
    """The terminal events of the last `window` seconds, read incrementally."""

    window: float
    terminals: deque[Terminal] = field(default_factory=deque)
    waits: deque[tuple[int, float]] = field(default_factory=deque)
    per_minute: dict[int, list[int]] = field(default_factory=dict)
    last_id: str | None = None
    truncated: bool = False

    def add(self, terminals: Iterable[Terminal], waits: dict[str, float]) -> None:
        for t in terminals:
            self.terminals.append(t)
            counts = self.per_minute.setdefault(t.at_ms // 60_000, [0, 0])
            counts[0] += 1
            if t.kind == "failed":
                counts[1] += 1
            if t.job_id in waits:
                self.waits.append((t.at_ms, waits[t.job_id]))
        # Bounded like the one-shot scan: past the bound the figures say "truncated".
        while len(self.terminals) > MAX_WINDOW_ENTRIES:
            self.terminals.popleft()
            self.truncated = True
        while len(self.waits) > MAX_WINDOW_ENTRIES:
            self.waits.popleft()

    def expire(self, now_ms: int) -> None:
        start = now_ms - int(self.window * 1000)
        while self.terminals and self.terminals[0].at_ms < start:
            self.terminals.popleft()
        while self.waits and self.waits[0][0] < start:
            self.waits.popleft()
        oldest_minute = now_ms // 60_000 - HISTORY_MINUTES - 1
        for m in [m for m in self.per_minute if m < oldest_minute]:
            del self.per_minute[m]


def _id_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


class Sampler:
    """Samples Redis every `interval` seconds in a worker thread; pages await `changed`."""

    def __init__(
        self, client: SyncRedis, names: Names, *, interval: float, window: float
    ) -> None:
        self.redis = client
        self.names = names
        self.interval = interval
        self.window = EventWindow(window)
        self.history = History(names)
        self.jobs = JobIndex()
        self.stats: QueueStats | None = None
        self.points: list[MinutePoint] = []
        self.error: str | None = None
        self.version = 0
        self._minute_waiting: dict[int, int] = {}
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ the loop

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="console-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _run(self) -> None:
        while True:
            started = time.monotonic()
            try:
                await asyncio.to_thread(self.tick)
                self.error = None
            except redis.RedisError as err:
                self.error = f"cannot read Redis: {err}"
                log.warning("%s", self.error)
            except Exception as err:  # the page must say so, and the loop must go on
                self.error = f"sampling failed: {type(err).__name__}: {err}"
                log.exception("sampling failed")
            self.version += 1
            async with self._changed:
                self._changed.notify_all()
            await asyncio.sleep(max(0.05, self.interval - (time.monotonic() - started)))

    async def wait_newer(self, version: int, timeout: float) -> int:
        """Wait until a sample newer than `version` exists (or `timeout`); the newest version."""
        if self.version > version:
            return self.version
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
        return self.version

    # ------------------------------------------------------------------ one tick (a thread)

    def tick(self) -> None:
        sec, usec = self.redis.time()
        now_ms = int(sec) * 1000 + int(usec) // 1000
        if self.window.last_id is None:
            self._backfill(now_ms)
        self._ingest(now_ms)
        self.window.expire(now_ms)
        start_ms = now_ms - int(self.window.window * 1000)
        window_stats = summarise_window(
            self.window.terminals,
            [w for _, w in self.window.waits],
            fallbacks_since(self.redis, self.names, start_ms),
            self.window.window,
            scanned=len(self.window.terminals),
            truncated=self.window.truncated,
        )
        stats = collect(self.redis, self.names, window_stats=window_stats)
        self.stats = stats
        self._record_minute(now_ms, waiting_jobs(stats))

    def _backfill(self, now_ms: int) -> None:
        """At start: the window's and the job list's first contents from the newest events."""
        rows: Any = self.redis.xrevrange(self.names.events, count=BACKFILL_EVENTS)
        start_ms = now_ms - int(self.window.window * 1000)
        terminals = []
        for entry_id, fields in reversed(rows or []):
            eid = text(entry_id)
            self._see(eid, fields)
            t = terminal_of(eid, fields)
            if t is not None and t.at_ms >= start_ms:
                terminals.append(t)
        self.window.add(terminals, queue_waits(self.redis, self.names, terminals))
        self.window.last_id = text(rows[0][0]) if rows else f"{start_ms}-0"

    def _see(self, entry_id: str, fields: Any) -> None:
        job = fields.get(b"job_id", fields.get("job_id")) if fields else None
        kind = fields.get(b"type", fields.get("type")) if fields else None
        if job:
            self.jobs.see(text(job), _id_ms(entry_id), text(kind or ""))

    def _ingest(self, now_ms: int) -> None:
        for _ in range(MAX_PAGES_PER_TICK):
            rows: Any = self.redis.xrange(
                self.names.events, min=f"({self.window.last_id}", max="+", count=PAGE
            )
            if not rows:
                return
            terminals = []
            see = self.jobs.see
            # Every event of every job passes here: only the terminal ones are decoded whole.
            for entry_id, fields in rows:
                kind = fields.get(b"type", b"")
                job = fields.get(b"job_id")
                if job is None:
                    continue
                at = int(entry_id.split(b"-", 1)[0])
                see(job.decode(errors="replace"), at, kind.decode(errors="replace"))
                if kind in TERMINAL_TYPES:
                    t = terminal_of(entry_id, fields)
                    if t is not None:
                        terminals.append(t)
            self.window.add(terminals, queue_waits(self.redis, self.names, terminals))
            self.window.last_id = text(rows[-1][0])
            if len(rows) < PAGE:
                return

    def _record_minute(self, now_ms: int, waiting: int) -> None:
        minute = now_ms // 60_000
        self._minute_waiting[minute] = max(self._minute_waiting.get(minute, 0), waiting)
        for m in [m for m in self._minute_waiting if m < minute - 1]:
            del self._minute_waiting[m]
        # The minute just ended is written once more with its final counts.
        for m in (minute - 1, minute):
            if m not in self._minute_waiting:
                continue
            done, failed = self.window.per_minute.get(m, [0, 0])
            self.history.write(
                self.redis,
                MinutePoint(minute=m, waiting=self._minute_waiting[m], done=done, failed=failed),
            )
        self.points = self.history.read(self.redis)


def chart_points(points: list[MinutePoint], now_minute: int) -> list[MinutePoint | None]:
    """The last hour, one slot per minute (oldest first); None where nothing was sampled."""
    by_minute = {p.minute: p for p in points}
    return [by_minute.get(m) for m in range(now_minute - HISTORY_MINUTES + 1, now_minute + 1)]


def history_json(points: list[MinutePoint]) -> str:
    return json.dumps([p.model_dump() for p in points])
