"""Reading a prioritized hop: one stream per priority, the highest with a waiting entry first.

Redis Streams have no priorities, and one XREADGROUP over several streams takes from all of
them at once: a worker would then hold a low entry, unleased, while it solves the high one, and
a reclaimer would hand that entry to a second worker. So a read is one script
(`priority_read.lua`) that takes entries from exactly one stream, the first of
high, normal, low that has an undelivered entry (a low entry past its aging competes as normal,
docs/decisions/0016-priorities.md). Scripts cannot block; when nothing waits, the script returns
each stream's tail id and the reader blocks on XREAD from those ids (no group: it takes
nothing), which returns on the first new entry in any of them, and reads again.

What the delivery rules need stays as it was (docs/design.md §4): the script reads with
XREADGROUP `>` into the same group and consumer, so entries are pending until acked, and each
batch carries the stream it came from, so the ack, the lease and a hand-back go to that stream.
The reclaimers stay one per stream (shared/streaming/broker.py).

FastStream reads a stream subscriber's batch through its `_xreadgroup`; replacing that one
method on the subscriber keeps the rest of FastStream's loop (decoding, middlewares, the ack
after the handler, the NOGROUP stop) as it is for every other hop.

One thing differs: a read that loses its connection tries again every
`RECONNECT_EVERY_SECONDS` for up to `RECONNECT_SECONDS` before it fails. FastStream waits 5 s
after any failed read; when the primary dies while the solver (or the fallback) is busy in a
batch, its next read fails only once the batch is done, and those 5 s then start late, after
the sentinels may well have promoted the replica already. Each retry asks the sentinels afresh,
so the reader follows the promotion within a retry.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from redis.exceptions import AuthenticationError, AuthorizationError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.connection.factory import AsyncRedis
from shared.streaming.lua import script
from shared.text import text

log = logging.getLogger("shiftstream")

# Longer than a Sentinel promotion with a short down-after (4-5 s with 3000 ms): a reader that
# lost its primary reads from the promoted one without FastStream's 5 s wait. A longer outage
# ends in FastStream's own error handling (logged, 5 s, read again).
RECONNECT_SECONDS = 15.0
RECONNECT_EVERY_SECONDS = 0.2

Entry = tuple[bytes, dict[bytes, bytes]]
ReadResponse = tuple[tuple[bytes, tuple[Entry, ...]], ...]


class PriorityRead:
    """Reads of one prioritized hop.

    Parameters:
        redis: a client to register the script on (the reads run on the subscriber's own).
        streams: the hop's streams, high, normal, low (`Names.prioritized`).
        group: the hop's consumer group.
        aging_ms: a low entry's wait counts this much less against normal ones.
    """

    def __init__(
        self, redis: AsyncRedis, streams: Sequence[str], group: str, aging_ms: int
    ) -> None:
        if len(streams) != 3:
            raise ValueError(f"a prioritized hop has three streams, not {list(streams)}")
        self.streams = list(streams)
        self.group = group
        self.aging_ms = aging_ms
        self._script = redis.register_script(script(__file__, "priority_read"))

    async def read(self, client: Any, consumer: str, count: int, block_ms: int) -> ReadResponse:
        """Up to `count` entries of one stream for `consumer`, or () after waiting up to
        `block_ms` for a new entry when none was waiting."""
        kind, payload = await self._script(
            keys=self.streams,
            args=[self.group, consumer, count, self.aging_ms],
            client=client,
        )
        if int(kind) == 1:
            return tuple(
                (name, tuple((entry_id, _fields(flat)) for entry_id, flat in entries))
                for name, entries in payload
            )
        tails = {stream: text(tail) for stream, tail in zip(self.streams, payload, strict=True)}
        await client.xread(tails, count=1, block=max(1, block_ms))
        return ()


def _fields(flat: Sequence[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


def read_by_priority(subscriber: Any, reader: PriorityRead, consumer: str) -> None:
    """Make the FastStream stream subscriber `subscriber` (a reader of the hop's group, named
    `consumer`) read through `reader`."""

    async def xreadgroup(*, count: int | None, block: int | None, noack: bool = False) -> Any:
        lost_at: float | None = None
        while True:
            try:
                return await reader.read(subscriber._client, consumer, count or 1, block or 100)
            except (AuthenticationError, AuthorizationError):
                raise
            except (RedisConnectionError, RedisTimeoutError) as err:
                now = time.monotonic()
                if lost_at is None:
                    lost_at = now
                    log.warning("reading %s lost Redis, trying again: %s", reader.streams[1], err)
                if now - lost_at >= RECONNECT_SECONDS:
                    raise
                await asyncio.sleep(RECONNECT_EVERY_SECONDS)

    subscriber._xreadgroup = xreadgroup
