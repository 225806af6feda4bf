"""Batched hops: one XREADGROUP takes up to N entries, one handler call handles them, one XACK.

A message-at-a-time hop pays FastStream's per-message machinery (a read, a handler call with
its middlewares, an ack: ~0.3–0.6 ms of CPU) for every entry; on tiny jobs that machinery was
most of the pipeline's cost (bench/README.md). A batch pays it once per read.

What stays as before (docs/design.md §4):
- acks follow the writes: FastStream XACKs the batch's ids only after the handler returned, so
  a handler queues every next-hop write of the batch into one pipeline and executes it before
  returning; when it raises, every entry of the batch stays pending for a reclaimer;
- no hoarding of long work: a solver batch runs at most one guarded (long) solve and puts the
  batch's other long jobs back at the tail of the stream (`requeue`), so another replica can
  start them now. (FastStream reads with a copy of `StreamSub` taken at start, so the batch
  size cannot adapt at run time; it is fixed per hop: `BATCH_MAX_RECORDS`, `SOLVER_BATCH`.)
- a reclaimer per hop (XAUTOCLAIM, one entry at a time) picks up a dead consumer's entries;
  only those can be redeliveries, so only they cost an XPENDING for the delivery count;
- poison: an entry delivered more than `MAX_DELIVERIES` times never reaches a handler again;
  `Poison` applies that one rule for every hop, and the hop's reaction (shared/jobs/poison.py,
  or triage's own) takes the entry out of the loop;
- one trace per job: each entry of a batch gets its own consume span
  (shared/observability/tracing.py: `entry_span`), and what the handler publishes for that
  entry hangs off it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faststream.redis.message import bDATA_KEY
from pydantic import BaseModel

from shared.connection.factory import is_cluster
from shared.streaming.codec import encode_entry, envelope

T = TypeVar("T")
log = logging.getLogger("shiftstream")


@dataclass(slots=True)
class Delivery(Generic[T]):
    """One entry of a hop's input, as the shared logic sees it."""

    body: T
    entry_id: str
    # W3C trace headers of the entry's producer.
    headers: Mapping[str, Any]
    # 1 for an entry read with `>` (a first delivery by definition); the real count for an
    # entry a reclaimer took over.
    delivery_count: int
    # The consumer that holds the entry, for lease renewals (XCLAIM in its name).
    consumer: str
    # Set when the telemetry middleware already opened this entry's own span (reclaimed
    # entries arrive one at a time, like before).
    traced: bool = False
    # The stream it was read from: a prioritized hop reads several (shared/streaming/
    # priority.py), and a lease or a hand-back must go to the entry's own.
    stream: str = ""


BatchHandler = Callable[[list[Delivery[Any]]], Awaitable[None]]
EntryHandler = Callable[[Delivery[Any]], Awaitable[None]]
# Queues a poisoned entry's way out of the pipeline into `pipe` (a Redis pipeline).
PoisonReaction = Callable[[Delivery[Any], Any], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Poison:
    """The poison rule, applied by the hop layer before any handler sees an entry.

    Parameters:
        max_deliveries: an entry delivered more often than this is poison (`MAX_DELIVERIES`):
            handling it keeps failing or killing its consumer, so it must leave the loop.
        react: what the hop does with it instead of handling it, queued into the pipeline
            whose execution precedes the entry's ack (shared/jobs/poison.py).
    """

    max_deliveries: int
    react: PoisonReaction

    def poisoned(self, delivery: Delivery[Any]) -> bool:
        return delivery.delivery_count > self.max_deliveries

    async def take_out(self, redis: Any, stream: str, delivery: Delivery[Any]) -> None:
        """Run the reaction for one poisoned entry; the caller acks it afterwards."""
        log.error(
            "entry %s of %s delivered %d times: poison, taken out of the loop",
            delivery.entry_id,
            stream,
            delivery.delivery_count,
        )
        async with redis.pipeline(transaction=False) as pipe:
            await self.react(delivery, pipe)
            await pipe.execute()


async def send(pipe: Any, stream: str, model: BaseModel, maxlen: int | None = None) -> None:
    """Queue `model` for `stream` in `pipe`.

    What `broker.publish` writes, without its per-message middleware (two spans per
    publish): in a batch the entry's own span is the next hop's parent. `maxlen` (`~`) only
    for a stream no group consumes: a hop's input is trimmed by its consumer of what it
    consumed (shared/streaming/retention.py), and a cap would cut its unread backlog.
    """
    data = await encode_entry(model)
    pipe.xadd(stream, {bDATA_KEY: data}, maxlen=maxlen, approximate=maxlen is not None)


async def requeue(
    pipe: Any, stream: str, delivery: Delivery[Any], since_ms: int | None = None
) -> None:
    """Queue a copy of the entry at the tail of `stream`, with its producer's headers.

    No span of its own: the job's trace continues from the copy's next reader as if the entry
    had never been read. `since_ms`: when the job was first queued, so that the copy keeps its
    wait for the aging of low priorities (shared/streaming/priority_read.lua).
    """
    data = await envelope(delivery.body.model_dump_json().encode(), dict(delivery.headers))
    fields: dict[Any, Any] = {bDATA_KEY: data}
    if since_ms is not None:
        fields["since"] = str(since_ms)
    pipe.xadd(stream, fields)


@contextlib.asynccontextmanager
async def ordered_pipelines(redis: Any) -> AsyncIterator[tuple[Any, Any]]:
    """Two pipelines, `first` and `then`, whose writes land in that order; both are executed
    when the block ends without an error.

    One server runs a pipeline's commands in order, so there both are the same pipeline and cost
    one round trip. A Redis Cluster client sends each node its share of a pipeline at once, so a
    write to one node can land before an earlier write to another: there `then` is sent only
    after `first` was answered, one round trip more (docs/managed-redis.md).
    """
    if not is_cluster(redis):
        async with redis.pipeline(transaction=False) as pipe:
            yield pipe, pipe
            await pipe.execute()
        return
    async with redis.pipeline(transaction=False) as first, redis.pipeline(
        transaction=False
    ) as then:
        yield first, then
        await first.execute()
        await then.execute()
