"""FastStream's telemetry middleware, without its span for a batch read.

For a batch, FastStream's middleware opens a trace of its own for the read (a `create` and a
`process` span) and links every entry's producer to it: it parses each entry's `traceparent`
and exports one link per entry, twice. That batch trace is part of no job's trace, and it cost
10–15 µs of CPU per entry in every batched hop (a third of what tracing cost the notifier,
bench/README.md). Each entry of a batch gets its own span, in its job's trace, from the hop
itself (shared.observability.tracing.entry_span), so here a batch keeps only FastStream's
messaging metrics (process duration, message count); single entries (reclaimed, or the
single-entry hops) and publishes are traced by FastStream as before.
"""

from __future__ import annotations

import time
from typing import Any

from faststream.opentelemetry.consts import MESSAGING_DESTINATION_PUBLISH_NAME
from faststream.opentelemetry.middleware import BaseTelemetryMiddleware
from faststream.redis.opentelemetry import RedisTelemetryMiddleware
from faststream.redis.opentelemetry.provider import RedisTelemetrySettingsProvider
from opentelemetry.semconv.trace import SpanAttributes

_PROVIDER = RedisTelemetrySettingsProvider()


class _EntryTelemetry(BaseTelemetryMiddleware[Any]):
    async def consume_scope(self, call_next: Any, msg: Any) -> Any:
        if not msg.batch_headers:
            return await super().consume_scope(call_next, msg)
        started = time.perf_counter()
        try:
            return await call_next(msg)
        finally:
            self._metrics.observe_consume(
                {
                    SpanAttributes.MESSAGING_SYSTEM: _PROVIDER.messaging_system,
                    MESSAGING_DESTINATION_PUBLISH_NAME: _PROVIDER.get_consume_destination_name(
                        msg
                    ),
                },
                time.perf_counter() - started,
                len(msg.batch_headers),
            )


class EntryTelemetryMiddleware(RedisTelemetryMiddleware):
    """`RedisTelemetryMiddleware` whose batch reads leave the tracing to the entries' spans."""

    def __call__(self, msg: Any | None, /, *, context: Any) -> Any:
        return _EntryTelemetry(
            msg,
            tracer=self._tracer,
            metrics_container=self._metrics,
            settings_provider_factory=self._settings_provider_factory,
            context=context,
        )
