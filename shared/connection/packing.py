"""Redis connections that encode commands with hiredis instead of redis-py's Python encoder.

redis-py's asyncio connection builds every command in Python (one `bytes.join` per argument),
which was 9–12 % of intake's and notifier's CPU under load (bench/README.md). hiredis, already
the reply parser, has a C encoder for the same protocol; redis-py's own synchronous client uses
it when hiredis is installed (`HiredisRespSerializer`), the asyncio client does not yet. The
encoding is the same: str as UTF-8, int and float by `repr`, bytes as they are; anything else
is refused with redis-py's `DataError`, as its encoder does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import hiredis
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    SSLConnection,
    UnixDomainSocketConnection,
)
from redis.asyncio.sentinel import SentinelManagedConnection, SentinelManagedSSLConnection
from redis.exceptions import DataError


def _split_name(args: tuple[Any, ...]) -> tuple[Any, ...]:
    # A name such as "CONFIG GET" or "XINFO GROUPS" goes out as separate arguments.
    name = args[0]
    if isinstance(name, str):
        return tuple(name.encode().split()) + args[1:]
    if b" " in name:
        return tuple(name.split()) + args[1:]
    return args


def pack(args: tuple[Any, ...]) -> bytes:
    return _pack(_split_name(args))


def _pack(args: tuple[Any, ...]) -> bytes:
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


# An argument this large goes out as it is, beside the packed rest, not copied into one buffer:
# hiredis grows its buffer to 12 MB for a large result, touching ~36 MB of fresh pages, which
# took 90 ms in a new process (a solve's child, decision 0036).
LARGE_ARG_BYTES = 64 * 1024


def _large(arg: Any) -> bool:
    """A bytes-like argument sent as it is: large, and one contiguous buffer (a socket cannot
    send a strided view; hiredis copies one correctly)."""
    if not isinstance(arg, bytes | bytearray | memoryview):
        return False
    view = memoryview(arg)
    return view.nbytes >= LARGE_ARG_BYTES and view.c_contiguous


def chunks(args: tuple[Any, ...]) -> list[bytes | bytearray | memoryview]:
    """`args` as RESP in pieces: each large bytes-like argument a piece of its own, uncopied;
    the rest packed by hiredis. Joined, the pieces are exactly `pack(args)`."""
    args = _split_name(args)
    out: list[bytes | bytearray | memoryview] = []
    head = [b"*%d\r\n" % len(args)]
    for arg in args:
        if _large(arg):
            head.append(b"$%d\r\n" % memoryview(arg).nbytes)
            out += [b"".join(head), arg]
            head = [b"\r\n"]
        else:
            # hiredis's encoding of one argument, without the array header ("*1\r\n")
            head.append(_pack((arg,))[4:])
    out.append(b"".join(head))
    return out


def _has_large(args: tuple[Any, ...]) -> bool:
    return any(_large(a) for a in args)


class HiredisPacking(AbstractConnection):
    def pack_command(self, *args: Any) -> list[bytes]:
        if _has_large(args):
            return chunks(args)  # type: ignore[return-value]
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


class HiredisSentinelConnection(HiredisPacking, SentinelManagedConnection):
    pass


class HiredisSentinelSSLConnection(HiredisPacking, SentinelManagedSSLConnection):
    pass


def connection_class(url: str, *, sentinel: bool = False) -> type[AbstractConnection]:
    """The class for `url`'s scheme, as redis-py would pick it, with hiredis packing.

    With `sentinel` the connection asks the sentinels for the primary's address at every
    connect (redis-py's `SentinelManagedConnection`), which is how a client follows a failover.
    """
    scheme = url.partition("://")[0].lower()
    if sentinel:
        return HiredisSentinelSSLConnection if scheme == "rediss" else HiredisSentinelConnection
    if scheme == "rediss":
        return HiredisSSLConnection
    if scheme == "unix":
        return HiredisUnixConnection
    return HiredisConnection
