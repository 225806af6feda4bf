"""Broker and app factory: every service gets its broker, raw client and groups from here.

The delivery rules (docs/design.md §4) are applied in one place so that no service can forget
them: groups are created at id 0 before any subscriber starts, each hop gets readers *and* a
reclaimer, the poison rule runs before any handler, a batch is acked only after its handler
returned, every read rides out a lost primary without FastStream's 5 s wait
(shared/streaming/reconnect.py), and the app shuts down gracefully. A prioritized hop
(`solver.jobs`, `solver.fallback`: one stream per priority) gets the same on each of its
streams, its readers reading highest priority first (shared/streaming/priority.py). What a
hop's group has consumed is trimmed from each of its input streams every
`TRIM_INTERVAL_SECONDS` (shared/streaming/retention.py), by the service that consumes them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from faststream import AckPolicy, FastStream
from faststream.redis import RedisBroker, StreamSub
from pydantic import ValidationError
from redis.exceptions import AuthenticationError, AuthorizationError, ResponseError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from shared.connection.factory import AsyncRedis, async_client, broker_for, describe
from shared.names import Names
from shared.observability.logs import configure_logging
from shared.observability.metrics import Metrics, meter_provider
from shared.observability.telemetry import tracer_provider
from shared.settings import Settings, settings_error
from shared.streaming.batch_telemetry import EntryTelemetryMiddleware
from shared.streaming.codec import EntryBody, batch_decoder, batch_parser, envelope_body
from shared.streaming.faststream_reads import read_through
from shared.streaming.hop import BatchHandler, Delivery, EntryHandler, Poison, send
from shared.streaming.priority import (
    PriorityRead,
    PriorityReclaim,
    read_by_priority,
    reclaim_by_priority,
)
from shared.streaming.reconnect import reconnecting
from shared.streaming.retention import Trimmer
from shared.text import text

log = logging.getLogger("shiftstream")

# A service (re)started during a Sentinel failover finds no primary until the sentinels have
# promoted one (down-after-milliseconds plus the election). Exiting then hands the wait to the
# process manager, whose crash-loop backoff (the dev runner's up to 5 s, Kubernetes' 10 s and
# more) comes on top of the promotion; waiting here starts the service as soon as there is a
# primary. Only on Sentinel: on one server or a cluster nobody is about to promote anything.
PRIMARY_WAIT_SECONDS = 30.0
PRIMARY_RETRY_SECONDS = 0.2


async def ensure_group(client: AsyncRedis, stream: str, group: str) -> None:
    """Create `group` at id 0 so entries written before anyone listened are still delivered."""
    try:
        await client.xgroup_create(name=stream, groupname=group, id="0", mkstream=True)
    except ResponseError as err:
        if "BUSYGROUP" not in str(err):
            raise


@dataclass
class Service:
    """What a service's app.py wires its handlers onto."""

    name: str
    settings: Settings
    names: Names
    broker: RedisBroker
    redis: AsyncRedis
    app: FastStream
    metrics: Metrics
    # More work of the trim period, run after each trim (the intake's stream watch).
    after_trim: Callable[[], Awaitable[object]] | None = None
    _groups: list[tuple[str, str]] = field(default_factory=list)
    _trimmer: Trimmer | None = None

    def entry_hop(
        self,
        stream: str,
        group: str,
        model: type[Any],
        handler: EntryHandler,
        *,
        poison: Poison,
        readers: int = 1,
    ) -> None:
        """Feed `handler` one `Delivery[model]` at a time: `readers` readers and one reclaimer.

        For hops whose entries are long work (a fallback solve) or rare (failures). Several
        readers (each its own consumer name, one entry per read) give concurrency without
        reading ahead: an entry is only taken when a reader is free, so a shutdown strands
        nothing. A FastStream subscriber with `min_idle_time` only reclaims, so without the
        plain readers no new entry would be seen, and without the reclaimer a dead consumer's
        entries would stay pending for ever.
        """
        streams = self._prioritized(stream, group)
        base = self.settings.consumer_name
        for i in range(readers):
            consumer = f"{base}-{i}"
            sub = self._subscriber(
                StreamSub(stream, group=group, consumer=consumer, max_records=1)
            )
            self._read_in_order(sub, streams, group, consumer)
            sub(_entry_reader(self.broker, model, handler, consumer))
        self._reclaimers(streams, group, model, lambda d: handler(d[0]), poison, parser=None)

    def batched_hop(
        self,
        stream: str,
        group: str,
        model: type[Any],
        handler: BatchHandler,
        *,
        poison: Poison,
        readers: int = 1,
        max_batch: int = 100,
        parser: Any = None,
        entry_body: EntryBody = envelope_body,
    ) -> None:
        """Feed `handler` lists of `Delivery[model]`: `readers` batch readers and one reclaimer.

        See shared/streaming/hop.py for the rules a batch keeps. Each reader has its own consumer
        name and reads at most `max_batch` entries, decoded by shared/streaming/codec.py
        (`entry_body` splits one entry into its JSON body and headers); the reclaimer hands its one
        entry, parsed by `parser` (FastStream's when None), over as a batch of one.
        """
        streams = self._prioritized(stream, group)
        base = self.settings.consumer_name
        broker = self.broker
        parse_batch, decode_batch = batch_parser(entry_body), batch_decoder(model)
        for i in range(readers):
            consumer = f"{base}-{i}"
            sub = self._subscriber(
                StreamSub(
                    stream, group=group, consumer=consumer, batch=True, max_records=max_batch
                ),
                parser=parse_batch,
                decoder=decode_batch,
            )
            self._read_in_order(sub, streams, group, consumer)
            sub(_batch_reader(broker, model, handler, consumer))
        self._reclaimers(streams, group, model, handler, poison, parser=parser)

    def _prioritized(self, stream: str, group: str) -> tuple[str, ...]:
        """The hop's streams (one per priority for `solver.jobs` and `solver.fallback`), each
        with its group created at 0."""
        streams = self.names.prioritized(stream)
        self._groups.extend((s, group) for s in streams)
        return streams

    def _read_in_order(self, sub: Any, streams: tuple[str, ...], group: str, consumer: str) -> None:
        if len(streams) == 1:
            return
        aging_ms = int(self.settings.priority_aging_seconds * 1000)
        read_by_priority(sub, PriorityRead(self.redis, streams, group, aging_ms), consumer)

    def _reclaimers(
        self,
        streams: tuple[str, ...],
        group: str,
        model: type[Any],
        handler: BatchHandler,
        poison: Poison,
        *,
        parser: Any,
    ) -> None:
        """XAUTOCLAIM subscribers, one per stream of the hop: the only readers that can see a
        redelivery, so the only ones that pay an XPENDING for the delivery count, and where the
        poison rule applies. A prioritized hop's reclaimers each take the highest priority's
        idle entry first (shared/streaming/priority.py `PriorityReclaim`)."""
        s = self.settings
        for i, stream in enumerate(streams):
            consumer = f"{s.consumer_name}-reclaim" + (f"-{i}" if len(streams) > 1 else "")
            sub = self._subscriber(
                StreamSub(
                    stream,
                    group=group,
                    consumer=consumer,
                    max_records=1,
                    min_idle_time=s.reclaim_idle_ms,
                    polling_interval=s.reclaim_poll_ms,
                ),
                parser=parser,
            )
            if len(streams) > 1:
                order = PriorityReclaim(streams, group, s.reclaim_idle_ms, s.reclaim_poll_ms)
                reclaim_by_priority(sub, order, consumer)
            sub(_reclaimed_reader(self.broker, self.redis, model, handler, poison, consumer))

    def _subscriber(self, sub: StreamSub, **options: Any) -> Any:
        """Every subscriber of every hop (readers and reclaimers) is built here, acked after its
        handler returned, its reads riding out a lost primary (shared/streaming/reconnect.py)."""
        subscriber = self.broker.subscriber(
            stream=sub, ack_policy=AckPolicy.REJECT_ON_ERROR, **options
        )
        what = f"{sub.name} as {sub.consumer}"
        read_through(subscriber, lambda read: reconnecting(read, what))
        return subscriber

    async def create_groups(self) -> None:
        sentinel = self.settings.redis_mode == "sentinel"
        deadline = time.monotonic() + (PRIMARY_WAIT_SECONDS if sentinel else 0.0)
        warned = False
        for stream, group in self._groups:
            while True:
                try:
                    await ensure_group(self.redis, stream, group)
                    break
                except (AuthenticationError, AuthorizationError):
                    raise  # a wrong login does not get better by waiting
                except (RedisConnectionError, RedisTimeoutError) as err:
                    if time.monotonic() >= deadline:
                        raise
                    if not warned:
                        log.warning("no Redis primary yet, waiting for the sentinels: %s", err)
                        warned = True
                    await asyncio.sleep(PRIMARY_RETRY_SECONDS)

    async def start_trimming(self) -> None:
        """Trim every hop's inputs of what its group consumed (none are capped by MAXLEN)."""
        self._trimmer = Trimmer(
            self.redis, self._groups, self.settings.trim_interval_seconds, also=self.after_trim
        )
        await self._trimmer.start()

    async def stop_trimming(self) -> None:
        if self._trimmer is not None:
            await self._trimmer.stop()

    async def publish(
        self, model: Any, stream: str, *, maxlen: int | None = None, pipeline: Any = None
    ) -> None:
        """Publish inside a handler so the next hop's span is a child of this one.

        With `pipeline` the XADD is only queued: a batch sends all its writes in one round trip.
        `maxlen` only for a stream no group consumes (the dead letters): a hop's input is
        trimmed by its consumer, and a MAXLEN there would cut entries not yet read.
        """
        if pipeline is not None:
            await send(pipeline, stream, model, maxlen)
        else:
            await self.broker.publish(model, stream=stream, maxlen=maxlen)


def _batch_reader(
    broker: RedisBroker, model: type[Any], handler: BatchHandler, consumer: str
) -> Callable[..., Any]:
    async def on_batch(body: list[Any]) -> None:
        # From the context, not a handler parameter: FastStream resolves a message parameter
        # in a worker thread, one thread hop per call (bench/README.md).
        msg = broker.context.get_local("message")
        ids, stream = msg.raw_message["message_ids"], msg.raw_message["channel"]
        batch = [
            Delivery(item, text(entry_id), headers, 1, consumer, stream=stream)
            for item, entry_id, headers in zip(body, ids, msg.batch_headers, strict=True)
        ]
        await handler(batch)

    # FastStream validates the body against the annotation, so it must name the real model.
    on_batch.__annotations__ = {"body": list[model], "return": None}  # type: ignore[valid-type]
    return on_batch


def _reclaimed_reader(
    broker: RedisBroker,
    redis: AsyncRedis,
    model: type[Any],
    handler: BatchHandler,
    poison: Poison,
    consumer: str,
) -> Callable[..., Any]:
    async def on_reclaimed(body: Any) -> None:
        msg = broker.context.get_local("message")
        ids = msg.raw_message.get("message_ids") or [b""]
        # The stream the entry was claimed from (on a prioritized hop, any of its streams).
        stream = msg.raw_message["channel"]
        count = await msg.get_delivery_count()
        delivery = Delivery(
            body, text(ids[0]), msg.headers, count, consumer, traced=True, stream=stream
        )
        if poison.poisoned(delivery):
            await poison.take_out(redis, stream, delivery)
            return
        await handler([delivery])

    on_reclaimed.__annotations__ = {"body": model, "return": None}
    return on_reclaimed


def _entry_reader(
    broker: RedisBroker, model: type[Any], handler: EntryHandler, consumer: str
) -> Callable[..., Any]:
    async def on_entry(body: Any) -> None:
        msg = broker.context.get_local("message")
        ids = msg.raw_message.get("message_ids") or [b""]
        stream = msg.raw_message["channel"]
        # Read with `>`: a first delivery by definition, no XPENDING needed.
        await handler(
            Delivery(body, text(ids[0]), msg.headers, 1, consumer, traced=True, stream=stream)
        )

    on_entry.__annotations__ = {"body": model, "return": None}
    return on_entry


def build_service(name: str, settings: Settings | None = None) -> Service:
    try:
        settings = settings or Settings()
    except ValidationError as err:
        # One line naming the variable, not a stack trace; the supervisor restarts in vain
        # until the setting is fixed, and says so in the log each time.
        raise SystemExit(f"{name}: settings: {settings_error(err)}") from None
    configure_logging(name)
    logger = logging.getLogger(f"shiftstream.{name}")
    logger.info("redis: %s", describe(settings))
    provider = tracer_provider(f"shiftstream-{name}", settings)
    meters = meter_provider(
        name, trace_file=settings.shiftstream_trace_file, dev=settings.shiftstream_dev
    )
    broker = broker_for(
        settings,
        middlewares=(EntryTelemetryMiddleware(tracer_provider=provider, meter_provider=meters),),
        graceful_timeout=settings.graceful_timeout,
        logger=logger,
        log_level=logging.getLevelName(settings.message_log_level),
    )
    # No call on this client blocks by design (reads go through the broker), so a reply that
    # takes longer than this is a half-dead connection: fail the handler (the entry stays
    # pending for a reclaimer) rather than hang it for ever.
    client = async_client(settings, round_trip_timeout=10, socket_connect_timeout=5)
    app = FastStream(broker, logger=logger)
    svc = Service(
        name=name,
        settings=settings,
        names=Names.from_settings(settings),
        broker=broker,
        redis=client,
        app=app,
        metrics=Metrics(name, meters),
    )
    # Before the broker starts its subscribers, so FastStream's own `$` creation never wins.
    app.on_startup(svc.create_groups)
    app.after_startup(svc.start_trimming)
    app.on_shutdown(svc.stop_trimming)

    async def _close() -> None:
        await client.aclose()
        if provider is not None:
            provider.shutdown()
        if meters is not None:
            meters.shutdown()

    app.after_shutdown(_close)
    return svc
