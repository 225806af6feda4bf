"""Redis connections that encode commands with hiredis instead of redis-py's Python encoder,
and a client that times round trips rather than replies.

redis-py's asyncio connection builds every command in Python (one `bytes.join` per argument),
which was 9–12 % of intake's and notifier's CPU under load (bench/README.md). hiredis, already
the reply parser, has a C encoder for the same protocol; redis-py's own synchronous client uses
it when hiredis is installed (`HiredisRespSerializer`), the asyncio client does not yet. The
encoding is the same: str as UTF-8, int and float by `repr`, bytes as they are; anything else
is refused with redis-py's `DataError`, as its encoder does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.asyncio.client import Pipeline
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.exceptions import DataError
from redis.exceptions import TimeoutError as RedisTimeoutError


def _split_name(args: tuple[Any, ...]) -> tuple[Any, ...]:
    # A name such as "CONFIG GET" or "XINFO GROUPS" goes out as separate arguments.
    name = args[0]
    if isinstance(name, str):
        return tuple(name.encode().split()) + args[1:]
    if b" " in name:
        return tuple(name.split()) + args[1:]
    return args


def pack(args: tuple[Any, ...]) -> bytes:
    args = _split_name(args)
    try:
        return hiredis.pack_command(args)  # type: ignore[no-any-return]
    except TypeError:
        pass
    # hiredis takes memoryview but not bytearray; redis-py takes both.
    args = tuple(bytes(a) if isinstance(a, bytearray) else a for a in args)
    try:
        return hiredis.pack_command(args)  # type: ignore[no-any-return]
    except TypeError as err:
        raise DataError(f"cannot send {args[0]!r:.40}: {err}") from err


class HiredisPacking(AbstractConnection):
    def pack_command(self, *args: Any) -> list[bytes]:
        return [pack(args)]

    def pack_commands(self, commands: Iterable[Iterable[Any]]) -> list[bytes]:
        # One buffer for the pipeline: a loopback write of a few KB is one syscall either way.
        return [b"".join(pack(tuple(c)) for c in commands)]


class HiredisConnection(HiredisPacking, Connection):
    pass


class HiredisSSLConnection(HiredisPacking, SSLConnection):
    pass


class HiredisUnixConnection(HiredisPacking, UnixDomainSocketConnection):
    pass


def connection_class(url: str) -> type[AbstractConnection]:
    """The class for `url`'s scheme, as redis-py would pick it, with hiredis packing."""
    scheme = url.partition("://")[0].lower()
    if scheme == "rediss":
        return HiredisSSLConnection
    if scheme == "unix":
        return HiredisUnixConnection
    return HiredisConnection


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
    """A `RoundTripTimeout` client for `url`, its connections packing with hiredis."""
    client = RoundTripTimeout.from_url(url, connection_class=connection_class(url), **kwargs)
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
