"""The delay schedule: jobs that must not run before a time (retries with backoff, `not_before`).

A sorted set scored by due time in ms whose members are ready-made FastStream stream entries.
Triage runs `promote_due.lua` every `SCHEDULE_POLL_MS`; the script moves due members into
`solver.jobs` atomically, so several triage replicas never forward one twice. The members are
encoded here, with the current trace context in their headers, so a retried attempt still
belongs to the job's trace.
"""

from __future__ import annotations

import time
from typing import Any

from shared.connection.factory import AsyncRedis
from shared.jobs.messages import Job
from shared.names import Names
from shared.streaming.codec import encode_entry
from shared.streaming.lua import script

# A schedule member naming a `not_before` job whose entry is in `Names.scheduled`.
REF = "ref:"


class Schedule:
    def __init__(self, redis: AsyncRedis, names: Names, maxlen: int) -> None:
        self.redis = redis
        self.names = names
        self.maxlen = maxlen
        self._promote = redis.register_script(script(__file__, "promote_due"))

    async def add(self, job: Job, due: float, pipe: Any = None) -> None:
        """With `pipe` (a pipeline) the write is queued there, to go with the caller's others."""
        member = await encode_entry(job)
        if pipe is not None:
            # Not awaited: awaiting a redis-py cluster pipeline initialises it again, which
            # empties the commands queued so far.
            pipe.zadd(self.names.schedule, {member: int(due * 1000)})
            return
        await self.redis.zadd(self.names.schedule, {member: int(due * 1000)})

    async def add_cancellable(self, job: Job, due: float, pipe: Any) -> None:
        """A `not_before` job: its entry is kept under its job id, and the schedule holds a
        reference, so that `cancel` removes it at once instead of at its due time."""
        pipe.hset(self.names.scheduled, job.job_id, await encode_entry(job))
        pipe.zadd(self.names.schedule, {REF + job.job_id: int(due * 1000)})

    async def cancel(self, job_ids: list[str]) -> set[str]:
        """Take these `not_before` jobs out of the schedule; the ids that were still in it.

        One transaction per job (ZREM, HDEL: one slot), racing promote_due.lua safely: the one
        that removes the reference forwards or drops the entry, the other finds nothing.
        """
        if not job_ids:
            return set()
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.zrem(self.names.schedule, REF + job_id)
                pipe.hdel(self.names.scheduled, job_id)
            replies = await pipe.execute()
        return {j for j, removed in zip(job_ids, replies[::2], strict=True) if int(removed)}

    async def promote_due(self, batch: int = 100) -> int:
        moved = await self._promote(
            keys=[self.names.schedule, self.names.jobs, self.names.scheduled],
            args=[int(time.time() * 1000), batch, self.maxlen],
        )
        return int(moved)

    async def size(self) -> int:
        return int(await self.redis.zcard(self.names.schedule))
