"""Taskiq peer: taskiq-redis RedisStreamBroker (XREADGROUP, ack after the task), one worker."""

from __future__ import annotations

from common import DONE_STREAM, GROUP, QUEUE, REDIS_URL
from redis.asyncio import Redis
from taskiq_redis import RedisStreamBroker

broker = RedisStreamBroker(REDIS_URL, queue_name=QUEUE, consumer_group_name=GROUP)
_done = Redis.from_url(REDIS_URL)


@broker.task(task_name="noop")  # type: ignore[untyped-decorator]
async def noop(job_id: str) -> None:
    await _done.xadd(DONE_STREAM, {"id": job_id})
