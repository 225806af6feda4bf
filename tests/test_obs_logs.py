from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from shared.observability.logs import configure_logging, job_context
from shared.observability.tracing import job_scope


@pytest.fixture
def restore_root() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in handlers:
        root.addHandler(h)
    root.setLevel(level)


def test_json_lines_carry_trace_job_and_service(restore_root: None) -> None:
    out = io.StringIO()
    configure_logging("solver", stream=out, json_format=True)
    log = logging.getLogger("shiftstream.test")
    tracer = TracerProvider().get_tracer("t")
    with tracer.start_as_current_span("handle") as span, job_context("job-1"):
        log.info("solving %s", "job-1", extra={"attempt": 2})
        ctx = span.get_span_context()
    log.warning("outside")

    inside, outside = (json.loads(line) for line in out.getvalue().splitlines())
    assert inside["service"] == "solver"
    assert inside["job_id"] == "job-1"
    assert inside["trace_id"] == format(ctx.trace_id, "032x")
    assert inside["span_id"] == format(ctx.span_id, "016x")
    assert inside["message"] == "solving job-1"
    assert inside["attempt"] == 2
    assert inside["level"] == "info"
    # Fields are always present, null outside a job or trace, so queries need no existence test.
    assert outside["trace_id"] is None and outside["job_id"] is None
    assert outside["service"] == "solver"


def test_job_scope_tags_span_and_logs(restore_root: None) -> None:
    out = io.StringIO()
    configure_logging("intake", stream=out, json_format=True)
    provider = TracerProvider()
    with provider.get_tracer("t").start_as_current_span("process") as span:
        with job_scope("job-2", attempt=3):
            logging.getLogger("x").info("hello")
        attrs = dict(span.attributes or {})  # type: ignore[attr-defined]
    assert attrs["job.id"] == "job-2" and attrs["job.attempt"] == 3
    assert json.loads(out.getvalue())["job_id"] == "job-2"


def test_console_format_is_one_readable_line(restore_root: None) -> None:
    out = io.StringIO()
    configure_logging("notifier", stream=out, json_format=False)
    with job_context("job-3"):
        logging.getLogger("shiftstream.n").info("sent")
    line = out.getvalue().strip()
    assert "notifier" in line and "sent" in line and "job=job-3" in line
    assert not line.startswith("{")


def test_solve_span_records_progress_and_figures() -> None:
    from types import SimpleNamespace

    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from shared.observability.tracing import record_failure, solve_span

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    progress = SimpleNamespace(
        generation=4,
        total_generations=10,
        population=20,
        best_hard=0,
        best_penalty=35,
        evaluations=900,
    )
    stats = SimpleNamespace(
        implementation="generetic",
        seed=1,
        time_ms=120.0,
        iterations=10,
        evaluations=2000,
        cancelled=False,
        timed_out=False,
        time_to_first_feasible_ms=12.5,
        time_to_best_ms=80.0,
    )
    result = SimpleNamespace(
        stats=stats, feasible=True, score=SimpleNamespace(hard_violations=0, penalty=30)
    )
    with provider.get_tracer("t").start_as_current_span("solver.jobs process") as handler:
        with solve_span("job-4", 2, "generetic", tracer_provider=provider) as span:
            span.progress(progress, 40.0)  # type: ignore[arg-type]
            span.finished(result)
        record_failure("crash", RuntimeError("boom"))
    solve, process = exporter.get_finished_spans()
    assert solve.parent is not None and solve.parent.span_id == handler.get_span_context().span_id
    attrs = dict(solve.attributes or {})
    assert attrs["job.id"] == "job-4" and attrs["job.attempt"] == 2
    assert attrs["solver.used"] == "generetic" and attrs["solver.generations"] == 10
    assert attrs["solver.time_to_first_feasible_ms"] == 12.5
    assert attrs["solver.best_score.soft"] == 30
    [event] = solve.events
    assert event.name == "progress" and dict(event.attributes or {})["best.soft"] == 35
    assert dict(process.attributes or {})["error.class"] == "crash"
    assert process.status.status_code.name == "ERROR"
