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
A hop's reclaimers (as many as it has streams, shared/streaming/broker.py) take the idle
entries a dead worker left back in the same order: `PriorityReclaim` looks at high, then normal,
then low, so a reclaimed high job is handled before reclaimed normal and low ones.

FastStream reads a stream subscriber's batch through its `_xreadgroup`; replacing that one
method on the subscriber (shared/streaming/faststream_reads.py, the one place that touches
FastStream's insides) keeps the rest of FastStream's loop (decoding, middlewares, the ack after
the handler, the NOGROUP stop) as it is for every other hop. A read that loses its primary is
retried in the read path every hop shares (shared/streaming/reconnect.py), not here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from shared.connection.factory import AsyncRedis
from shared.streaming.faststream_reads import connection, replace_group_read, replace_read
from shared.streaming.lua import script
from shared.text import text

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


class PriorityReclaim:
    """Reclaims of one prioritized hop: an entry idle for `min_idle_ms` (its worker died) of the
    highest priority that has one, one entry at a time.

    Each stream's pending list is scanned whole (XAUTOCLAIM, COUNT 1, from 0-0 until its cursor
    comes back to 0-0) before the next priority's: a hop's pending lists hold what its workers
    have in hand, a few batches, so a scan is a few round trips each `poll_ms`. Reclaimers that
    scan at once each get other entries: XAUTOCLAIM resets an entry's idle time as it claims it.
    """

    def __init__(
        self, streams: Sequence[str], group: str, min_idle_ms: int, poll_ms: int
    ) -> None:
        if len(streams) != 3:
            raise ValueError(f"a prioritized hop has three streams, not {list(streams)}")
        self.streams = list(streams)
        self.group = group
        self.min_idle_ms = min_idle_ms
        self.poll_ms = poll_ms

    async def claim(self, client: Any, consumer: str) -> ReadResponse:
        """One idle entry, now `consumer`'s, of the highest priority that has one; or ()."""
        for stream in self.streams:
            start: Any = "0-0"
            while True:
                cursor, entries, *_ = await client.xautoclaim(
                    stream, self.group, consumer, self.min_idle_ms, start_id=start, count=1
                )
                if entries:
                    return ((stream.encode(), tuple(entries)),)
                if text(cursor) == "0-0":
                    break
                start = cursor
        return ()

    async def read(self, client: Any, consumer: str) -> ReadResponse:
        """`claim`, or after `poll_ms` with nothing idle, ()."""
        got = await self.claim(client, consumer)
        if not got:
            await asyncio.sleep(self.poll_ms / 1000)
        return got


def reclaim_by_priority(subscriber: Any, reclaim: PriorityReclaim, consumer: str) -> None:
    """Make the FastStream reclaimer `subscriber` (named `consumer`) claim through `reclaim`."""

    async def read(_last_id: str) -> Any:
        return await reclaim.read(connection(subscriber), consumer)

    replace_read(subscriber, read)


def _fields(flat: Sequence[bytes]) -> dict[bytes, bytes]:
    return dict(zip(flat[::2], flat[1::2], strict=True))


def read_by_priority(subscriber: Any, reader: PriorityRead, consumer: str) -> None:
    """Make the FastStream stream subscriber `subscriber` (a reader of the hop's group, named
    `consumer`) read through `reader`."""

    async def read(*, count: int | None, block: int | None, noack: bool = False) -> Any:
        return await reader.read(connection(subscriber), consumer, count or 1, block or 100)

    replace_group_read(subscriber, read)
