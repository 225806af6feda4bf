"""Bare FastStream peer: one stream subscriber in a consumer group, default ack policy, uvloop."""

from __future__ import annotations

import uvloop
from common import DONE_STREAM, GROUP, QUEUE, REDIS_URL
from faststream import FastStream
from faststream.redis import RedisBroker, StreamSub
from redis.asyncio import Redis

broker = RedisBroker(REDIS_URL)
app = FastStream(broker)
_done = Redis.from_url(REDIS_URL)


@broker.subscriber(stream=StreamSub(QUEUE, group=GROUP, consumer="c1"))
async def noop(job_id: str) -> None:
    await _done.xadd(DONE_STREAM, {"id": job_id})


if __name__ == "__main__":
    uvloop.run(app.run())
