"""Tracer provider for a service: OTLP/HTTP to a collector, an OTLP JSON-lines file, or none.

The standard `OTEL_EXPORTER_OTLP_ENDPOINT` wins (the compose stack points it at Jaeger). Without
it, dev mode or `SHIFTSTREAM_TRACE_FILE` write spans to `.shiftstream/traces.jsonl` (rotated at
`SHIFTSTREAM_TRACE_FILE_MAX_BYTES`, `shared.observability.span_file`), which the CLI and the
console show without any tracing backend. Otherwise tracing is off: no provider, no cost.

Sampling is the SDK's, from the standard variables: `OTEL_TRACES_SAMPLER` (default
`parentbased_always_on`) and `OTEL_TRACES_SAMPLER_ARG`. Parent-based samplers follow the sampled
flag of the `traceparent` a monolith puts on its intake entry, and every later hop follows the
intake's decision, so a job is traced whole or not at all.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import Link, SpanKind, TraceState

if TYPE_CHECKING:
    from shared.settings import Settings

DEFAULT_TRACE_FILE = Path(".shiftstream") / "traces.jsonl"

# The SDK's defaults (queue 2,048, batches of 512, every 5 s) drop spans at a few hundred jobs a
# second (five spans a job) and export in small batches; one export of a bigger batch costs less
# per span. The standard OTEL_BSP_* variables still win.
BSP_DEFAULTS = {
    "OTEL_BSP_MAX_QUEUE_SIZE": 65_536,
    "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": 4_096,
    "OTEL_BSP_SCHEDULE_DELAY": 2_000,
}


class ParentBasedAlwaysOn(Sampler):
    """The SDK's default sampler (`parentbased_always_on`) in one call instead of three.

    Same decisions: a parent's sampled flag is followed (a monolith's `traceparent` with flags
    `00` records nothing), a span without a parent is sampled. The SDK's version dispatches to
    a second sampler and looks the parent up twice; that was a tenth of a span's cost.
    """

    def should_sample(
        self,
        parent_context: Context | None,
        trace_id: int,
        name: str,
        kind: SpanKind | None = None,
        attributes: Any = None,
        links: Sequence[Link] | None = None,
        trace_state: TraceState | None = None,
    ) -> SamplingResult:
        parent = trace.get_current_span(parent_context).get_span_context()
        if not parent.is_valid:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)
        if parent.trace_flags.sampled:
            return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes, parent.trace_state)
        return SamplingResult(Decision.DROP, None, parent.trace_state)

    def get_description(self) -> str:
        return "ParentBased{root:AlwaysOnSampler}"


def sampler() -> Sampler | None:
    """Ours for the default, else None: the SDK reads OTEL_TRACES_SAMPLER(_ARG) itself."""
    name = os.environ.get("OTEL_TRACES_SAMPLER", "parentbased_always_on").strip().lower()
    return ParentBasedAlwaysOn() if name == "parentbased_always_on" else None


def trace_file(settings: Settings) -> Path | None:
    """The OTLP JSON-lines file spans go to, or None (a collector, or tracing off)."""
    if settings.otel_exporter_otlp_endpoint:
        return None
    if settings.shiftstream_trace_file or settings.shiftstream_dev:
        return Path(settings.shiftstream_trace_file or DEFAULT_TRACE_FILE)
    return None


def _exporter(settings: Settings) -> SpanExporter | None:
    if settings.otel_exporter_otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The exporter reads the endpoint (and headers) from the standard OTEL_* variables.
        return OTLPSpanExporter()
    path = trace_file(settings)
    if path is None:
        return None
    from shared.observability.span_file import JsonLinesSpanExporter

    return JsonLinesSpanExporter(path, settings.shiftstream_trace_file_max_bytes)


def _bsp(name: str) -> int | None:
    # None lets the SDK read the variable itself (and validate it).
    return None if os.environ.get(name) else BSP_DEFAULTS[name]


def tracer_provider(service_name: str, settings: Settings) -> TracerProvider | None:
    exporter = _exporter(settings)
    if exporter is None:
        return None
    chosen = sampler()
    provider = TracerProvider(
        sampler=chosen, resource=Resource.create({"service.name": service_name})
    )
    processor = BatchSpanProcessor(
        exporter,
        max_queue_size=_bsp("OTEL_BSP_MAX_QUEUE_SIZE"),
        max_export_batch_size=_bsp("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"),
        schedule_delay_millis=_bsp("OTEL_BSP_SCHEDULE_DELAY"),
    )
    provider.add_span_processor(processor)
    # Global too, so the handlers' own spans (shared.observability.tracing) join the
    # middleware's traces.
    trace.set_tracer_provider(provider)
    if chosen is not None and trace.get_tracer_provider() is provider:
        # The entry spans' fast path (shared.observability.lean_span): only with the default
        # sampler, whose decision it repeats, and this provider's one processor.
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        from shared.observability.lean_span import LeanTracer
        from shared.observability.tracing import TRACER_NAME, use_lean_tracer

        use_lean_tracer(
            provider,
            LeanTracer(processor, provider.resource, InstrumentationScope(TRACER_NAME)),
        )
    return provider
