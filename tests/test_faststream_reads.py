"""The adapter to FastStream's stream subscriber (shared/streaming/faststream_reads.py) fits the
installed FastStream: every kind of subscriber the hops build passes its check, a read put in
through it is what FastStream's loop hands to the handler and acks (to the stream the reply
names), and a subscriber without the names it uses is refused at once, naming the version.

If a FastStream upgrade breaks these, the services would refuse to start (the same check runs
when they build their hops): update the adapter, its CHECKED_AGAINST and decision 0021.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from faststream.redis import RedisBroker, StreamSub
from faststream.redis.subscriber.usecases.stream_subscriber import StreamSubscriber

from shared.cli.devrunner import EmbeddedServer
from shared.streaming.faststream_reads import (
    CHECKED_AGAINST,
    IncompatibleFastStream,
    check,
    connection,
    read_through,
    replace_group_read,
)


def test_every_subscriber_a_hop_builds_passes_the_check() -> None:
    broker = RedisBroker("redis://127.0.0.1:1")
    kinds = [
        StreamSub("s", group="g", consumer="c", max_records=1),  # entry reader
        StreamSub("s", group="g", consumer="c", batch=True, max_records=10),  # batch reader
        StreamSub("s", group="g", consumer="r", max_records=1, min_idle_time=10),  # reclaimer
    ]
    for sub in kinds:
        check(broker.subscriber(stream=sub))


def test_a_subscriber_without_what_the_adapter_uses_is_refused_naming_the_version() -> None:
    broker = RedisBroker("redis://127.0.0.1:1")
    with pytest.raises(IncompatibleFastStream, match="not a stream subscriber"):
        check(broker.subscriber(list="a-list"))

    class Reshaped(StreamSubscriber):
        async def _xreadgroup(self, *, count: int | None, block: int | None) -> Any:  # type: ignore[override]
            return ()

    reshaped = broker.subscriber(stream=StreamSub("s", group="g", consumer="c"))
    reshaped.__class__ = Reshaped
    with pytest.raises(IncompatibleFastStream, match=f"checked against {CHECKED_AGAINST}"):
        replace_group_read(reshaped, lambda **_: None)


def test_faststreams_loop_reads_through_the_adapter_and_acks_where_the_reply_says(
    redis_server: EmbeddedServer,
) -> None:
    """The group read is replaced by one that reads another stream than the subscriber's own,
    as the priority read does; every read also passes a wrapper, as the reconnecting one does."""
    r = redis.Redis.from_url(redis_server.url)
    own, other = "fsr:own", "fsr:other"
    for stream in (own, other):
        r.delete(stream)
        r.xgroup_create(stream, "g", id="0", mkstream=True)
    r.xadd(other, {"__data__": b"not read by FastStream itself"})
    r.xadd(own, {"__data__": b"left alone"})

    broker = RedisBroker(redis_server.url)
    sub = broker.subscriber(stream=StreamSub(own, group="g", consumer="c", max_records=5))
    handled: list[str] = []
    wrapped: list[int] = []

    async def read_other(*, count: int | None, block: int | None, noack: bool = False) -> Any:
        got = await connection(sub).xreadgroup("g", "c", {other: ">"}, count=count, block=block)
        return got or ()

    def around(read: Any) -> Any:
        async def counted(last_id: str) -> Any:
            wrapped.append(1)
            return await read(last_id)

        return counted

    replace_group_read(sub, read_other)
    read_through(sub, around)

    @sub
    async def handle(body: bytes) -> None:
        handled.append(broker.context.get_local("message").raw_message["channel"])

    async def run() -> None:
        await broker.start()
        try:
            while not handled:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)  # the ack follows the handler
        finally:
            await broker.stop()

    asyncio.run(asyncio.wait_for(run(), 30))
    assert handled == [other]
    assert wrapped  # FastStream's loop read through the wrapper
    assert r.xpending(other, "g")["pending"] == 0  # acked on the stream the reply named
    assert r.xinfo_groups(own)[0]["last-delivered-id"] == b"0-0"  # its own stream untouched
    r.close()


def test_a_cancel_that_redis_py_turns_into_a_connection_error_still_stops_the_read() -> None:
    """redis-py can surface a cancel that lands mid-command as a connection error. The
    reconnecting read must not retry it: the task was told to stop, and a retry that succeeds
    leaves a reader running that its service is waiting to see end."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    from shared.streaming.reconnect import reconnecting

    calls = 0
    started = asyncio.Event()

    async def read() -> str:
        nonlocal calls
        calls += 1
        if calls > 1:
            return "read again"
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            raise RedisConnectionError("Connection closed by server") from None
        return "never"

    async def scenario() -> None:
        task = asyncio.create_task(reconnecting(read, "a test reader", every=0.01)())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        assert calls == 1

    asyncio.run(scenario())
