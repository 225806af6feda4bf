"""Batched hops: one XREADGROUP takes up to N entries, one handler call handles them, one XACK.

A message-at-a-time hop pays FastStream's per-message machinery (a read, a handler call with
its middlewares, an ack: ~0.3–0.6 ms of CPU) for every entry; on tiny jobs that machinery was
most of the pipeline's cost (bench/README.md). A batch pays it once per read.

What stays as before (DESIGN §4):
- acks follow the writes: FastStream XACKs the batch's ids only after the handler returned, so
  a handler queues every next-hop write of the batch into one pipeline and executes it before
  returning; when it raises, every entry of the batch stays pending for a reclaimer;
- no hoarding of long work: a solver batch runs at most one guarded (long) solve and puts the
  batch's other long jobs back at the tail of the stream (`requeue`), so another replica can
  start them now. (FastStream reads with a copy of `StreamSub` taken at start, so the batch
  size cannot adapt at run time; it is fixed per hop: `BATCH_MAX_RECORDS`, `SOLVER_BATCH`.)
- a reclaimer per hop (XAUTOCLAIM, one entry at a time) picks up a dead consumer's entries;
  only those can be redeliveries, so only they cost an XPENDING for the delivery count;
- one trace per job: FastStream's telemetry middleware gives a batch one span of its own (a
  new trace that links the entries), so each entry gets its own `<stream> process` span under
  its producer's context here, and what the handler publishes for that entry hangs off it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from faststream.redis.message import bDATA_KEY
from faststream.redis.parser import BinaryMessageFormatV1
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind
from pydantic import BaseModel

T = TypeVar("T")

TRACER_NAME = "shiftstream"

# FastStream's envelope wants a correlation id per message; it only has to be unique. A random
# prefix per process and a counter are, without `uuid4`'s urandom syscall per message (4 % of
# intake's CPU under load).
_CORRELATION_PREFIX = os.urandom(8).hex()
_correlation_seq = itertools.count()


def _new_correlation_prefix() -> None:
    # A forked child would otherwise count on from its parent's prefix and repeat its ids.
    global _CORRELATION_PREFIX, _correlation_seq
    _CORRELATION_PREFIX = os.urandom(8).hex()
    _correlation_seq = itertools.count()


os.register_at_fork(after_in_child=_new_correlation_prefix)


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


BatchHandler = Callable[[list[Delivery[Any]]], Awaitable[None]]


@contextmanager
def entry_span(stream: str, delivery: Delivery[Any]) -> Iterator[None]:
    """The entry's own consume span, a child of its producer's span (see the module doc)."""
    if delivery.traced or not tracing_on():
        yield
        return
    parent = propagate.extract(dict(delivery.headers))
    tracer = trace.get_tracer(TRACER_NAME)
    with tracer.start_as_current_span(
        f"{stream} process",
        context=parent,
        kind=SpanKind.CONSUMER,
        attributes={
            "messaging.system": "redis",
            "messaging.operation": "process",
            "messaging.destination.name": stream,
            "messaging.message.id": delivery.entry_id,
        },
    ):
        yield


def tracing_on() -> bool:
    # Without a configured provider every span is a no-op; skipping them saves ~30 µs an entry.
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


def text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


async def envelope(body: bytes, headers: dict[str, Any]) -> bytes:
    """FastStream's stream entry format, so any FastStream subscriber reads what we write."""
    return await BinaryMessageFormatV1.encode(
        message=body,
        reply_to=None,
        headers=headers,
        correlation_id=str(
            headers.get("correlation_id") or f"{_CORRELATION_PREFIX}{next(_correlation_seq):x}"
        ),
    )


async def encode_entry(model: BaseModel) -> bytes:
    """`model` as a stream entry's data, carrying the current trace context."""
    headers: dict[str, Any] = {"content-type": "application/json"}
    propagate.inject(headers)
    return await envelope(model.model_dump_json().encode(), headers)


async def send(pipe: Any, stream: str, model: BaseModel, maxlen: int) -> None:
    """Queue `model` for `stream` in `pipe`.

    What `broker.publish` writes, without its per-message middleware (two spans per
    publish): in a batch the entry's own span is the next hop's parent.
    """
    data = await encode_entry(model)
    pipe.xadd(stream, {bDATA_KEY: data}, maxlen=maxlen, approximate=True)


async def requeue(pipe: Any, stream: str, delivery: Delivery[Any], maxlen: int) -> None:
    """Queue a copy of the entry at the tail of `stream`, with its producer's headers.

    No span of its own: the job's trace continues from the copy's next reader as if the entry
    had never been read.
    """
    data = await envelope(delivery.body.model_dump_json().encode(), dict(delivery.headers))
    pipe.xadd(stream, {bDATA_KEY: data}, maxlen=maxlen, approximate=True)
