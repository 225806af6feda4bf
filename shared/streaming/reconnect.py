"""Every read of every hop rides out a lost primary by itself, instead of FastStream's 5 s wait.

FastStream waits `CONSUME_ERROR_BACKOFF_SECONDS` (5 s) after any read that raised. A Sentinel
promotion with a short `down-after-milliseconds` takes 2-5 s, so a reader whose read failed when
the primary died sat out the rest of those 5 s after the new primary was already taking writes
(the notifier recovered 5.1-6.2 s after a promotion in the chaos runs); and a reader busy in a
long batch when the primary died met the dead connection only afterwards, so its 5 s began late.

A read wrapped by `reconnecting` tries again every `RECONNECT_EVERY_SECONDS` for up to
`RECONNECT_SECONDS` when it loses its connection. Each attempt takes a fresh connection from
the pool, which asks the sentinels for the primary's address, so the reader follows a promotion
within one attempt. Only connection failures are retried: a wrong login does not get better by
waiting, and a missing group (NOGROUP) is FastStream's to stop on. A longer outage ends in
FastStream's own handling (the error logged, 5 s, read again), so it stays visible in the log.

shared/streaming/broker.py wraps every subscriber it builds (readers and reclaimers of every hop)
through shared/streaming/faststream_reads.py; docs/decisions/0021-one-read-path.md.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from redis.exceptions import AuthenticationError, AuthorizationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger("shiftstream")

# Longer than a Sentinel promotion with a short down-after (4-5 s with 3000 ms).
RECONNECT_SECONDS = 15.0
RECONNECT_EVERY_SECONDS = 0.2

P = ParamSpec("P")
T = TypeVar("T")


def _cancel_requested() -> bool:
    """Whether this task was asked to stop. A cancel that lands while redis-py is inside a
    command can come out as a connection error (see shared/jobs/lease.py); retrying it swallowed
    the cancel, and the reader went on reading, "cancelling" for ever. A chaos run caught a
    solver that way: its start failed when the primary died (a Sentinel failover), FastStream
    cancelled its readers, one of them retried and read again, and the process waited for it
    until the start-up watchdog's 90 s."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def reconnecting(
    read: Callable[P, Awaitable[T]],
    what: str,
    *,
    within: float = RECONNECT_SECONDS,
    every: float = RECONNECT_EVERY_SECONDS,
) -> Callable[P, Awaitable[T]]:
    """`read`, tried again every `every` seconds for up to `within` seconds after it first lost
    its connection; `what` names the reader in the one warning it logs per outage."""

    async def again(*args: P.args, **kwargs: P.kwargs) -> T:
        lost_at: float | None = None
        while True:
            try:
                got = await read(*args, **kwargs)
            except (AuthenticationError, AuthorizationError):
                raise  # subclasses of ConnectionError in redis-py
            except (RedisConnectionError, RedisTimeoutError) as err:
                if _cancel_requested():
                    raise asyncio.CancelledError from err
                now = time.monotonic()
                if lost_at is None:
                    lost_at = now
                    log.warning("reading %s lost Redis, trying again: %s", what, err)
                if now - lost_at >= within:
                    raise
                await asyncio.sleep(every)
                continue
            if lost_at is not None:
                log.warning("reading %s again after %.1f s", what, time.monotonic() - lost_at)
            return got

    return again
