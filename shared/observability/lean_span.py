"""Our hot-path spans, recorded without the SDK's `Span` machinery, exported through the SDK.

Each stream entry gets a span in every hop (shared.observability.tracing). With the SDK's span
class that cost ~30 µs of CPU a span (a lock, attribute limits and checks on every value, span
processor callbacks, self-metrics), as much as a tiny job's whole hop: tracing every job cut
the pipeline's throughput in half (bench/README.md, "Tracing at production cost").

A `LeanSpan` is the same span for whoever reads it: it implements the OpenTelemetry `Span`
API (context, attributes, events, status, exceptions), so the context it puts in place
propagates like any span's (W3C headers, FastStream's own spans as children), and when it ends
it becomes the SDK's own `ReadableSpan`, handed to the SDK's span processor and exporter. What
it leaves out: span limits (our spans carry a handful of attributes, all of our own making),
`on_start` callbacks (the batch processor has none), and the SDK's self-metrics.

It is used only where its decisions are the SDK's: with the provider built by
`shared.observability.telemetry` and the default parent-based always-on sampler. Any other
`OTEL_TRACES_SAMPLER`, or a provider of someone else's, gets the SDK's spans.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping, Sequence
from time import time_ns
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util import types

_PLAIN = (str, bool, int, float)
_SAMPLED_RANDOM = TraceFlags(TraceFlags.SAMPLED | TraceFlags.RANDOM_TRACE_ID)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def _clean(value: Any) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return tuple(v if isinstance(v, _PLAIN) else str(v) for v in value)
    return str(value)


class LeanSpan(trace.Span):
    __slots__ = (
        "_attributes",
        "_context",
        "_end",
        "_events",
        "_kind",
        "_name",
        "_parent",
        "_start",
        "_status",
        "_tracer",
    )

    def __init__(
        self,
        tracer: LeanTracer,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: Mapping[str, Any] | None,
    ) -> None:
        self._tracer = tracer
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._attributes: dict[str, Any] = (
            {k: _clean(v) for k, v in attributes.items() if v is not None} if attributes else {}
        )
        self._events: list[Event] = []
        self._status = Status(StatusCode.UNSET)
        self._end: int | None = None
        self._start = time_ns()

    def get_span_context(self) -> SpanContext:
        return self._context

    def is_recording(self) -> bool:
        return self._end is None

    def set_attribute(self, key: str, value: types.AttributeValue) -> None:
        if self._end is None and value is not None:
            self._attributes[key] = _clean(value)

    def set_attributes(self, attributes: Mapping[str, types.AttributeValue]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def add_event(
        self, name: str, attributes: types.Attributes = None, timestamp: int | None = None
    ) -> None:
        if self._end is None:
            clean = {k: _clean(v) for k, v in (attributes or {}).items() if v is not None}
            self._events.append(Event(name, clean, timestamp or time_ns()))

    def update_name(self, name: str) -> None:
        self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        # The SDK's rules: OK is final, UNSET never overrides.
        if self._end is not None or self._status.status_code is StatusCode.OK:
            return
        if isinstance(status, StatusCode):
            status = Status(status, description)
        if status.status_code is not StatusCode.UNSET:
            self._status = status

    def record_exception(
        self,
        exception: BaseException,
        attributes: types.Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        module = type(exception).__module__
        qualname = type(exception).__qualname__
        found: dict[str, Any] = {
            "exception.type": qualname if module in (None, "builtins") else f"{module}.{qualname}",
            "exception.message": str(exception),
            "exception.stacktrace": "".join(traceback.format_exception(exception)),
            "exception.escaped": str(escaped),
        }
        found.update(attributes or {})
        self.add_event("exception", found, timestamp)

    def end(self, end_time: int | None = None) -> None:
        if self._end is not None:
            return
        self._end = end_time or time_ns()
        t = self._tracer
        t.processor.on_end(
            ReadableSpan(
                name=self._name,
                context=self._context,
                parent=self._parent,
                resource=t.resource,
                attributes=self._attributes,
                events=tuple(self._events),
                kind=self._kind,
                status=self._status,
                start_time=self._start,
                end_time=self._end,
                instrumentation_scope=t.scope,
            )
        )


class LeanTracer:
    """Starts `LeanSpan`s with the parent-based always-on decision of the SDK's default."""

    def __init__(
        self,
        processor: SpanProcessor,
        resource: Resource,
        scope: InstrumentationScope,
        id_generator: IdGenerator | None = None,
    ) -> None:
        self.processor = processor
        self.resource = resource
        self.scope = scope
        self.ids = id_generator or RandomIdGenerator()

    def start_span(
        self,
        name: str,
        parent: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Mapping[str, Any] | None = None,
    ) -> trace.Span:
        parent_ctx = trace.get_current_span(parent).get_span_context()
        if parent_ctx.is_valid:
            if not parent_ctx.trace_flags.sampled:
                # The monolith (or an earlier hop) decided: not recorded, and passed on so.
                return trace.NonRecordingSpan(parent_ctx)
            flags = _SAMPLED_RANDOM if parent_ctx.trace_flags.random_trace_id else _SAMPLED
            context = SpanContext(
                parent_ctx.trace_id,
                self.ids.generate_span_id(),
                is_remote=False,
                trace_flags=flags,
                trace_state=parent_ctx.trace_state,
            )
            return LeanSpan(self, name, context, parent_ctx, kind, attributes)
        context = SpanContext(
            self.ids.generate_trace_id(),
            self.ids.generate_span_id(),
            is_remote=False,
            trace_flags=_SAMPLED_RANDOM,
        )
        return LeanSpan(self, name, context, None, kind, attributes)
