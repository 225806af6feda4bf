"""Dramatiq peer: Redis broker, one process with DRAMATIQ_THREADS threads (driver sets 10)."""

from __future__ import annotations

import dramatiq
import redis
from common import DONE_STREAM, QUEUE, REDIS_URL
from dramatiq.brokers.redis import RedisBroker

broker = RedisBroker(url=REDIS_URL)
dramatiq.set_broker(broker)
_done = redis.Redis.from_url(REDIS_URL)


@dramatiq.actor(queue_name=QUEUE, max_retries=0)  # type: ignore[untyped-decorator]
def noop(job_id: str) -> None:
    _done.xadd(DONE_STREAM, {"id": job_id})
