"""The services' raw Redis client: replies must come within a bound, timed per round trip.

A handler that waits on a stalled Redis (a paused server, a half-dead connection) must fail,
so that its entries stay pending for a reclaimer, rather than hang for ever.
"""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.connection.packing import connection_class


class RoundTripTimeout(aioredis.Redis):
    """A client whose replies must arrive within `round_trip_timeout` seconds, timed per round
    trip rather than per reply.

    redis-py's `socket_timeout` arms a timer around every reply it parses, so a pipeline of 192
    commands sets and cancels 192 timers: 8.1 µs of CPU a command instead of 3.7 without them
    (measured on our batch pipelines). One timer around the whole command or pipeline gives a
    stalled server the same bound. When it fires, redis-py's cancelled read drops the connection,
    as a socket timeout does, and the caller gets redis-py's `TimeoutError` as before.
    """

    round_trip_timeout: float = 10.0

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        try:
            async with asyncio.timeout(self.round_trip_timeout):
                return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except TimeoutError as err:
            raise _stalled(self.round_trip_timeout) from err

    def pipeline(self, transaction: bool = True, shard_hint: str | None = None) -> Pipeline:
        pipe = TimedPipeline(self.connection_pool, self.response_callbacks, transaction, shard_hint)
        pipe.round_trip_timeout = self.round_trip_timeout
        return pipe


def _stalled(seconds: float) -> RedisTimeoutError:
    return RedisTimeoutError(f"no reply from Redis within {seconds} s")


def timed_client(url: str, *, round_trip_timeout: float, **kwargs: Any) -> RoundTripTimeout:
    """A `RoundTripTimeout` client for one server at `url`, its connections packing with
    hiredis. (shared/connection/factory.py builds every client; this is its one-server case.)"""
    # redis-py's connections default to a 5 s per-reply timer: off, the round trip has one.
    client = RoundTripTimeout.from_url(
        url, connection_class=connection_class(url), socket_timeout=None, **kwargs
    )
    assert isinstance(client, RoundTripTimeout)
    client.round_trip_timeout = round_trip_timeout
    return client


class TimedPipeline(Pipeline):
    round_trip_timeout: float = 10.0

    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        try:
            async with asyncio.timeout(self.round_trip_timeout):
                return await super().execute(raise_on_error)
        except TimeoutError as err:
            raise _stalled(self.round_trip_timeout) from err


class TimedCluster(RedisCluster):
    """`RoundTripTimeout` for a Redis Cluster: each command, and each pipeline as a whole (its
    per-node shares go out at once), must be answered within `round_trip_timeout`."""

    round_trip_timeout: float = 10.0

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            async with asyncio.timeout(self.round_trip_timeout):
                return await super().execute_command(*args, **kwargs)
        except TimeoutError as err:
            raise _stalled(self.round_trip_timeout) from err

    def pipeline(
        self, transaction: Any | None = None, shard_hint: Any | None = None
    ) -> ClusterPipeline:
        if shard_hint:
            raise ValueError("shard_hint is not supported in cluster mode")
        pipe = TimedClusterPipeline(self, transaction)  # type: ignore[abstract]
        pipe.round_trip_timeout = self.round_trip_timeout
        return pipe


class TimedClusterPipeline(ClusterPipeline):
    round_trip_timeout: float = 10.0

    async def execute(
        self, raise_on_error: bool = True, allow_redirections: bool = True
    ) -> list[Any]:
        try:
            async with asyncio.timeout(self.round_trip_timeout):
                return await super().execute(raise_on_error, allow_redirections)
        except TimeoutError as err:
            raise _stalled(self.round_trip_timeout) from err
