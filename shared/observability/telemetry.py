"""Tracer provider for a service: OTLP/HTTP to a collector, an OTLP JSON-lines file, or none.

The standard `OTEL_EXPORTER_OTLP_ENDPOINT` wins (the compose stack points it at Jaeger). Without
it, dev mode or `SHIFTSTREAM_TRACE_FILE` write spans to `.shiftstream/traces.jsonl`, which the
CLI can show without any tracing backend. Otherwise tracing is off: no provider, no cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

if TYPE_CHECKING:
    from shared.settings import Settings

DEFAULT_TRACE_FILE = Path(".shiftstream") / "traces.jsonl"


def _exporter(settings: Settings) -> SpanExporter | None:
    if settings.otel_exporter_otlp_endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        # The exporter reads the endpoint (and headers) from the standard OTEL_* variables.
        return OTLPSpanExporter()
    if settings.shiftstream_trace_file or settings.shiftstream_dev:
        from opentelemetry.exporter.otlp.json.file import FileSpanExporter

        path = Path(settings.shiftstream_trace_file or DEFAULT_TRACE_FILE)
        path.parent.mkdir(parents=True, exist_ok=True)
        return FileSpanExporter(str(path))
    return None


def tracer_provider(service_name: str, settings: Settings) -> TracerProvider | None:
    exporter = _exporter(settings)
    if exporter is None:
        return None
    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    # Global too, so the handlers' own spans (shared.observability.tracing) join the
    # middleware's traces.
    trace.set_tracer_provider(provider)
    return provider
