"""The dev trace file: OTLP JSON lines the reader understands, bounded by rotation; sampling
follows the standard variables and the monolith's sampled flag."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import propagate
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from shared.observability.otlp_file import load_traces, spans_from_line, traces_of_job
from shared.observability.span_file import JsonLinesSpanExporter, encode_line, rotated
from shared.observability.tracing import current_span
from tests.conftest import request_json


class Entry:
    def __init__(self, traceparent: str) -> None:
        self.entry_id = "1-0"
        self.headers = {"traceparent": traceparent}
        self.traced = False


_MEM = InMemorySpanExporter()
_PROVIDER = TracerProvider(resource=Resource.create({"service.name": "shiftstream-test"}))
_PROVIDER.add_span_processor(SimpleSpanProcessor(_MEM))


def spans(n: int, flags: str = "01") -> list:  # type: ignore[type-arg]
    """What a hop records for `n` entries under a monolith's traceparent with `flags`."""
    _MEM.clear()
    tp = f"00-{'ab' * 16}-{'cd' * 8}-{flags}"
    for i in range(n):
        with current_span(
            "s process", parent=propagate.extract(Entry(tp).headers), kind=SpanKind.CONSUMER,
            attributes={"job.id": f"job-{i}", "job.attempt": 1}, provider=_PROVIDER,
        ):  # fmt: skip
            pass
    return list(_MEM.get_finished_spans())


def test_lines_read_back_as_the_spans_written() -> None:
    got = spans(3)
    line = encode_line(got)
    doc = json.loads(line)
    assert doc["resourceSpans"][0]["resource"]["attributes"]
    back = list(spans_from_line(line))
    assert [s.attributes["job.id"] for s in back] == ["job-0", "job-1", "job-2"]
    assert all(s.trace_id == "ab" * 16 and s.parent_id == "cd" * 8 for s in back)
    assert back[0].service == "shiftstream-test" and back[0].kind == 5  # CONSUMER
    assert back[0].attributes["job.attempt"] == 1


def test_the_file_is_rotated_and_both_generations_are_read(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    exporter = JsonLinesSpanExporter(path, max_bytes=4096)
    batch = spans(4)
    for _ in range(30):
        exporter.export(batch)
    old = rotated(path)
    assert old.exists()

    def on_disk() -> int:
        return sum(p.stat().st_size for p in (path, old) if p.exists())

    # Bounded: never much more than twice the limit on disk.
    assert on_disk() < 3 * 4096
    # A second writer (another service process) follows the rotation instead of writing to
    # the renamed file for ever.
    other = JsonLinesSpanExporter(path, max_bytes=4096)
    for _ in range(30):
        other.export(batch)
        exporter.export(batch)
    assert on_disk() < 3 * 4096
    assert traces_of_job(path, "job-2") == {"ab" * 16}
    assert load_traces(path, {"ab" * 16})["ab" * 16]


@pytest.mark.parametrize(("flags", "recorded"), [("01", True), ("00", False)])
def test_a_monolith_sampled_flag_is_followed(flags: str, recorded: bool) -> None:
    # The SDK's default sampler, parent-based: an unsampled traceparent records nothing.
    assert bool(spans(1, flags)) is recorded


def test_lines_match_the_reference_exporter() -> None:
    """The same OTLP/JSON as `opentelemetry-exporter-otlp-json-file`, which it replaces (bar
    `flags`, where it also keeps the W3C trace flags in the low byte, as OTLP defines)."""
    from opentelemetry.exporter.otlp.json.file.trace_exporter import _encode_spans_to_dict

    got = spans(3)
    ours = json.loads(encode_line(got))
    ref = _encode_spans_to_dict(got)
    assert ref is not None
    assert ours["resourceSpans"][0]["resource"] == ref["resourceSpans"][0]["resource"]
    for a, b in zip(
        ours["resourceSpans"][0]["scopeSpans"][0]["spans"],
        ref["resourceSpans"][0]["scopeSpans"][0]["spans"],
        strict=True,
    ):
        assert a.pop("flags") & 0x300 == b.pop("flags") & 0x300
        assert a == b


@pytest.mark.redis
def test_the_services_follow_the_monolith_sampling_decision(
    make_stack: Any, tmp_path: Path
) -> None:
    """Through real services: a `traceparent` with the sampled flag off leaves no span in any
    service; with it on, the job's whole trace is in the (rotating) trace file."""
    path = tmp_path / "traces.jsonl"
    stack = make_stack(env={"SHIFTSTREAM_TRACE_FILE": str(path), "OTEL_BSP_SCHEDULE_DELAY": "200"})
    off_trace, on_trace = "1" * 32, "2" * 32
    stack.submit(request_json(employees=5, shifts=12, time_limit=0.5), job_id="sampled-off",
                 traceparent=f"00-{off_trace}-{'a' * 16}-00")  # fmt: skip
    stack.submit(request_json(employees=5, shifts=12, time_limit=0.5), job_id="sampled-on",
                 traceparent=f"00-{on_trace}-{'b' * 16}-01")  # fmt: skip
    stack.wait_terminal("sampled-off", "sampled-on")

    def services_of(job: str) -> set[str]:
        if not path.exists():
            return set()
        found = load_traces(path, traces_of_job(path, job))
        return {s.service for spans in found.values() for s in spans}

    wanted = {"shiftstream-intake", "shiftstream-solver", "shiftstream-notifier"}
    stack.wait_for(lambda: services_of("sampled-on") >= wanted, what="the sampled job's spans")
    assert traces_of_job(path, "sampled-on") == {on_trace}
    time.sleep(1.0)  # a few more export rounds: nothing of the unsampled job may appear
    assert services_of("sampled-off") == set()
    assert not traces_of_job(path, off_trace)


def test_lean_spans_export_what_sdk_spans_do() -> None:
    """The hot path's spans (shared.observability.lean_span) reach the exporter as the SDK's
    own spans would: same ids and parents, attributes, events, status, exception events."""
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import Status, StatusCode

    from shared.observability.lean_span import LeanTracer

    lean_mem = InMemorySpanExporter()
    lean = LeanTracer(SimpleSpanProcessor(lean_mem), _PROVIDER.resource,
                      InstrumentationScope("shiftstream"))  # fmt: skip
    sdk = _PROVIDER.get_tracer("shiftstream")
    parent = propagate.extract({"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-01"})

    def drive(span: Any) -> None:
        span.set_attribute("job.attempt", 2)
        span.set_attributes({"solver.used": "greedy"})
        span.add_event("progress", {"generation": 3})
        span.record_exception(ValueError("bad roster"))
        span.set_status(Status(StatusCode.ERROR, "crash"))
        span.end()

    _MEM.clear()
    attrs = {"job.id": "j1", "messaging.message.id": "1-0"}
    drive(sdk.start_span("s process", context=parent, kind=SpanKind.CONSUMER, attributes=attrs))
    drive(lean.start_span("s process", parent, SpanKind.CONSUMER, attrs))
    [ref], [got] = _MEM.get_finished_spans(), lean_mem.get_finished_spans()
    assert isinstance(got.parent, type(ref.parent)) and got.parent == ref.parent
    assert got.context.trace_id == ref.context.trace_id
    assert got.context.trace_flags == ref.context.trace_flags
    assert (got.name, got.kind, got.resource) == (ref.name, ref.kind, ref.resource)
    assert dict(got.attributes or {}) == dict(ref.attributes or {})
    assert [(e.name, dict(e.attributes or {}).keys()) for e in got.events] == [
        (e.name, dict(e.attributes or {}).keys()) for e in ref.events
    ]
    assert got.events[1].attributes["exception.type"] == "ValueError"
    assert (got.status.status_code, got.status.description) == (StatusCode.ERROR, "crash")
    # The encoded lines agree too, ids and times aside.
    a, b = (json.loads(encode_line([s]))["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            for s in (got, ref))  # fmt: skip
    for d in (a, b):
        for key in ("spanId", "startTimeUnixNano", "endTimeUnixNano", "events"):
            d.pop(key)
    assert a == b
    # An unsampled parent: nothing recorded, the decision passed on; no parent: a new trace.
    off = propagate.extract({"traceparent": f"00-{'ab' * 16}-{'cd' * 8}-00"})
    assert not lean.start_span("x", off).is_recording()
    root = lean.start_span("x")
    assert root.get_span_context().trace_flags.sampled and root.get_span_context().is_valid
