"""The job record: one hash per job with its state and history summary, for `status` and ops.

It is a convenience view, not part of delivery: every write is a plain HSET (last writer wins)
and the record expires after the retention period so finished jobs do not pile up in memory.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from shared.connection.factory import AsyncRedis
from shared.jobs.messages import now
from shared.names import Names
from shared.settings import Settings
from shared.text import text


class JobState(StrEnum):
    QUEUED = "queued"
    SCHEDULED = "scheduled"
    RUNNING = "running"
    RETRYING = "retrying"
    COMPLETED = "completed"
    FAILED = "failed"


TERMINAL_STATES = {JobState.COMPLETED.value, JobState.FAILED.value}


class JobRecords:
    def __init__(self, redis: AsyncRedis, names: Names, settings: Settings) -> None:
        self.redis = redis
        self.names = names
        self.ttl = settings.job_ttl_seconds

    def queue(
        self,
        pipe: Any,
        job_id: str,
        state: JobState | None = None,
        *,
        created: bool = False,
        **fields: object,
    ) -> None:
        """Queue the record's write into `pipe`, so it travels with the hop's other writes.

        `created` marks the first write of a job (intake): it sets `created_at` in the same HSET
        (a redelivered intake entry moves it by the redelivery delay, no more). `update` keeps
        HSETNX, for writers that cannot know whether they come first.
        """
        self._queue(pipe, job_id, state, created, fields)

    def _queue(
        self,
        pipe: Any,
        job_id: str,
        state: JobState | None,
        created: bool,
        fields: dict[str, object],
    ) -> None:
        mapping: dict[Any, Any] = {k: str(v) for k, v in fields.items() if v is not None}
        if state is not None:
            mapping["state"] = state.value
        stamp = f"{now():.3f}"
        mapping["updated_at"] = stamp
        key = self.names.job(job_id)
        if created:
            mapping["created_at"] = stamp
        pipe.hset(key, mapping=mapping)
        pipe.expire(key, self.ttl)

    async def update(
        self,
        job_id: str,
        state: JobState | None = None,
        *,
        created: bool = True,
        **fields: object,
    ) -> None:
        async with self.redis.pipeline(transaction=True) as pipe:
            if created:
                pipe.hsetnx(self.names.job(job_id), "created_at", f"{now():.3f}")
            self._queue(pipe, job_id, state, False, fields)
            await pipe.execute()

    async def get(self, job_id: str) -> dict[str, str]:
        raw = await self.redis.hgetall(self.names.job(job_id))
        return {text(k): text(v) for k, v in raw.items()}

    async def is_terminal(self, job_id: str) -> bool:
        state = await self.redis.hget(self.names.job(job_id), "state")
        return state is not None and text(state) in TERMINAL_STATES



async def is_cancelled(redis: AsyncRedis, names: Names, job_id: str) -> bool:
    return bool(await redis.exists(names.cancel(job_id)))
