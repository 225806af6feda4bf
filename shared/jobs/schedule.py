"""The delay schedule: jobs that must not run before a time (retries with backoff, `not_before`).

A sorted set per priority scored by due time in ms whose members are ready-made FastStream
stream entries. Triage runs `promote_due.lua` every `SCHEDULE_POLL_MS`; the script moves due
members into their priority's stream of `solver.jobs` atomically (highest priority first), so
several triage replicas never forward one twice. The members are encoded here, with the current
trace context in their headers, so a retried attempt still belongs to the job's trace.
"""

from __future__ import annotations

import time
from typing import Any

from shared.connection.factory import AsyncRedis
from shared.jobs.messages import Job
from shared.names import READ_ORDER, Names
from shared.streaming.codec import encode_entry
from shared.streaming.lua import script

# A schedule member naming a `not_before` job whose entry is in `Names.scheduled`.
REF = "ref:"


class Schedule:
    def __init__(self, redis: AsyncRedis, names: Names) -> None:
        self.redis = redis
        self.names = names
        self._promote = redis.register_script(script(__file__, "promote_due"))

    async def add(self, job: Job, due: float, pipe: Any = None) -> None:
        """With `pipe` (a pipeline) the write is queued there, to go with the caller's others."""
        member = await encode_entry(job)
        key = self.names.schedule_for(job.priority)
        if pipe is not None:
            # Not awaited: awaiting a redis-py cluster pipeline initialises it again, which
            # empties the commands queued so far.
            pipe.zadd(key, {member: int(due * 1000)})
            return
        await self.redis.zadd(key, {member: int(due * 1000)})

    async def add_cancellable(self, job: Job, due: float, pipe: Any) -> None:
        """A `not_before` job: its entry is kept under its job id, and the schedule holds a
        reference, so that `cancel` removes it at once instead of at its due time."""
        pipe.hset(self.names.scheduled, job.job_id, await encode_entry(job))
        pipe.zadd(self.names.schedule_for(job.priority), {REF + job.job_id: int(due * 1000)})

    async def cancel(self, job_ids: list[str]) -> set[str]:
        """Take these `not_before` jobs out of the schedule; the ids that were still in it.

        The reference is in its priority's schedule, which the cancel does not know: it is
        removed from each (all in one slot). Racing promote_due.lua is safe: the one that
        removes the reference forwards or drops the entry, the other finds nothing.
        """
        if not job_ids:
            return set()
        schedules = [self.names.schedule_for(p) for p in READ_ORDER]
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                for key in schedules:
                    pipe.zrem(key, REF + job_id)
                pipe.hdel(self.names.scheduled, job_id)
            replies = await pipe.execute()
        per_job = len(schedules) + 1
        return {
            job_id
            for i, job_id in enumerate(job_ids)
            if any(int(r) for r in replies[i * per_job : i * per_job + len(schedules)])
        }

    @property
    def keys(self) -> list[str]:
        """promote_due.lua's keys: the `not_before` entries, then each priority's schedule and
        stream, highest first."""
        n = self.names
        pairs = [k for p in READ_ORDER for k in (n.schedule_for(p), n.jobs_for(p))]
        return [n.scheduled, *pairs]

    async def promote_due(self, batch: int = 100) -> int:
        moved = await self._promote(
            keys=self.keys, args=[int(time.time() * 1000), batch]
        )
        return int(moved)

    async def size(self) -> int:
        async with self.redis.pipeline(transaction=False) as pipe:
            for p in READ_ORDER:
                pipe.zcard(self.names.schedule_for(p))
            sizes = await pipe.execute()
        return sum(int(n) for n in sizes)
