"""Broker and app factory: every service gets its broker, raw client and groups from here.

The delivery rules of DESIGN §4 are applied in one place so that no service can forget them:
groups are created at id 0 before any subscriber starts, each handler gets a reader *and* a
reclaimer, every read takes one entry, and the app shuts down gracefully.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis.asyncio as aioredis
from faststream import AckPolicy, FastStream
from faststream.redis import RedisBroker, StreamSub
from faststream.redis.opentelemetry import RedisTelemetryMiddleware
from redis.exceptions import ResponseError

from shared.logs import configure_logging
from shared.metrics import Metrics, meter_provider
from shared.settings import Settings
from shared.streams import Names
from shared.telemetry import tracer_provider

log = logging.getLogger("shiftstream")


async def ensure_group(client: aioredis.Redis, stream: str, group: str) -> None:
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
    redis: aioredis.Redis
    app: FastStream
    metrics: Metrics
    _groups: list[tuple[str, str]] = field(default_factory=list)

    def reader_and_reclaimer(
        self,
        stream: str,
        group: str,
        *,
        readers: int = 1,
        parser: Any = None,
        ack_policy: AckPolicy = AckPolicy.REJECT_ON_ERROR,
    ) -> Callable[[Callable[..., Any]], Any]:
        """Stack `readers` group readers and one XAUTOCLAIM reclaimer on a handler.

        A FastStream subscriber with `min_idle_time` only reclaims, so a handler without a
        second, plain subscriber would never see new entries, and one without a reclaimer would
        leave a dead consumer's entries pending for ever. Several readers (each its own consumer
        name, one entry per read) give concurrency without reading ahead: an entry is only
        taken when a reader is free, so a shutdown strands nothing.
        """
        self._groups.append((stream, group))
        base = self.settings.consumer_name
        s = self.settings
        subs = [
            StreamSub(stream, group=group, consumer=f"{base}-{i}", max_records=1)
            for i in range(readers)
        ]
        subs.append(
            StreamSub(
                stream,
                group=group,
                consumer=f"{base}-reclaim",
                max_records=1,
                min_idle_time=s.reclaim_idle_ms,
                polling_interval=s.reclaim_poll_ms,
            )
        )

        def decorate(func: Callable[..., Any]) -> Any:
            wrapped: Any = func
            for sub in subs:
                wrapped = self.broker.subscriber(stream=sub, parser=parser, ack_policy=ack_policy)(
                    wrapped
                )
            return wrapped

        return decorate

    async def create_groups(self) -> None:
        for stream, group in self._groups:
            await ensure_group(self.redis, stream, group)

    async def publish(self, model: Any, stream: str, *, maxlen: int | None = None) -> None:
        """Publish inside a handler so the next hop's span is a child of this one."""
        await self.broker.publish(
            model, stream=stream, maxlen=maxlen or self.settings.stream_maxlen
        )


def build_service(name: str, settings: Settings | None = None) -> Service:
    settings = settings or Settings()
    configure_logging(name)
    logger = logging.getLogger(f"shiftstream.{name}")
    provider = tracer_provider(f"shiftstream-{name}", settings)
    meters = meter_provider(
        name, trace_file=settings.shiftstream_trace_file, dev=settings.shiftstream_dev
    )
    broker = RedisBroker(
        settings.redis_url,
        middlewares=(RedisTelemetryMiddleware(tracer_provider=provider, meter_provider=meters),),
        graceful_timeout=settings.graceful_timeout,
        logger=logger,
    )
    # No call on this client blocks by design (reads go through the broker), so a reply that
    # takes longer than this is a half-dead connection: fail the handler (the entry stays
    # pending for a reclaimer) rather than hang it for ever.
    client = aioredis.Redis.from_url(
        settings.redis_url, socket_timeout=10, socket_connect_timeout=5
    )
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

    async def _close() -> None:
        await client.aclose()
        if provider is not None:
            provider.shutdown()
        if meters is not None:
            meters.shutdown()

    app.after_shutdown(_close)
    return svc
