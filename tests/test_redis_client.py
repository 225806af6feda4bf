"""The services' raw Redis client: a stalled server fails a call within its round-trip bound."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.cli.devrunner import EmbeddedServer
from shared.connection.timed import timed_client

pytestmark = pytest.mark.redis


def test_a_stalled_server_fails_commands_and_pipelines_within_the_bound() -> None:
    server = EmbeddedServer().start()

    async def scenario() -> list[float]:
        client = timed_client(server.url, round_trip_timeout=0.5)
        # The bound is the round trip's, not a timer around each reply (redis-py's default).
        assert client.connection_pool.connection_kwargs["socket_timeout"] is None
        waited = []
        try:
            await client.set("k", "v")  # connected while the server still answers
            async with client.pipeline(transaction=False) as pipe:
                pipe.get("k").incr("n")
                assert await pipe.execute() == [b"v", 1]
            os.kill(server.proc.pid, signal.SIGSTOP)  # up and connected, never answers
            try:
                for call in (
                    lambda: client.get("k"),
                    lambda: client.pipeline(transaction=False).get("k").incr("n").execute(),
                ):
                    started = time.monotonic()
                    with pytest.raises(RedisTimeoutError):
                        await call()
                    waited.append(time.monotonic() - started)
            finally:
                os.kill(server.proc.pid, signal.SIGCONT)
            # The timed-out connection was dropped, not left with a reply in flight: the next
            # call reads its own reply.
            assert await client.get("k") == b"v"
        finally:
            await client.aclose()
        return waited

    try:
        waited = asyncio.run(scenario())
    finally:
        server.stop()
    assert all(0.4 < w < 3 for w in waited), waited
