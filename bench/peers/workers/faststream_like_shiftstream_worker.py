"""Experiment, not a peer: the bare FastStream worker with ShiftStream's subscriber habits.

Each habit is switched on by an environment variable, so that its cost on one hop can be read
off against the bare `faststream` peer (see bench/README.md, "Where the time goes"):

- FS_MAX_RECORDS=1   one entry per XREADGROUP (shared/streaming/broker.py reads this way)
- FS_MSG_PARAM=1     the handler takes `msg: RedisStreamMessage` (fast_depends resolves it with
                     a sync `Context.use`, i.e. one anyio worker-thread hop per message)
- FS_DELIVERY_COUNT=1  `await msg.get_delivery_count()` per message (one XPENDING)
- FS_CTX_LOCAL=1     with FS_MSG_PARAM: the same message from `broker.context.get_local`
                     instead of a handler parameter (the suggested fix: no thread hop)
- FS_TELEMETRY=1     RedisTelemetryMiddleware with a no-op tracer provider
- FS_QUIET=1         FastStream's per-message "Received"/"Processed" logs at DEBUG
"""

from __future__ import annotations

import logging
import os

import uvloop
from common import DONE_STREAM, GROUP, QUEUE, REDIS_URL
from faststream import FastStream
from faststream.redis import RedisBroker, RedisStreamMessage, StreamSub
from redis.asyncio import Redis


def _on(name: str) -> bool:
    return os.environ.get(name, "") == "1"


middlewares: tuple[object, ...] = ()
if _on("FS_TELEMETRY"):
    from faststream.redis.opentelemetry import RedisTelemetryMiddleware
    from opentelemetry.trace import NoOpTracerProvider

    middlewares = (RedisTelemetryMiddleware(tracer_provider=NoOpTracerProvider()),)

broker = RedisBroker(
    REDIS_URL,
    middlewares=middlewares,  # type: ignore[arg-type]
    log_level=logging.DEBUG if _on("FS_QUIET") else logging.INFO,
)
app = FastStream(broker)
_done = Redis.from_url(REDIS_URL)
sub = StreamSub(
    QUEUE, group=GROUP, consumer="c1", max_records=1 if _on("FS_MAX_RECORDS") else None
)

if _on("FS_MSG_PARAM") and _on("FS_CTX_LOCAL"):

    @broker.subscriber(stream=sub)
    async def noop_ctx(job_id: str) -> None:
        msg: RedisStreamMessage = broker.context.get_local("message")
        if _on("FS_DELIVERY_COUNT"):
            await msg.get_delivery_count()
        await _done.xadd(DONE_STREAM, {"id": job_id})

elif _on("FS_MSG_PARAM"):

    @broker.subscriber(stream=sub)
    async def noop_msg(job_id: str, msg: RedisStreamMessage) -> None:
        if _on("FS_DELIVERY_COUNT"):
            await msg.get_delivery_count()
        await _done.xadd(DONE_STREAM, {"id": job_id})

else:

    @broker.subscriber(stream=sub)
    async def noop(job_id: str) -> None:
        await _done.xadd(DONE_STREAM, {"id": job_id})


if __name__ == "__main__":
    uvloop.run(app.run())
