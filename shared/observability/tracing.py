"""Span helpers for handlers: tag the hop's span with the job, and trace a solve in detail.

FastStream's telemetry middleware opens one span per consumed message and carries the W3C
context to the next hop, but it knows nothing of jobs: without `job.id` on the spans neither
Jaeger's tag search nor `shiftstream trace JOB_ID` can find a job. One line per handler fixes
that:

    with job_scope(job.job_id, attempt=job.attempt):
        ...

which also puts the job id on every log line of the handler (`shared.observability.logs`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from shared.observability.logs import job_context

TRACER_NAME = "shiftstream"
# Tracer per provider: `trace.get_tracer` builds a new tracer (and its instrumentation scope)
# on every call, a third of a span's cost in the notifier's profile (bench/README.md).
_tracers: dict[int, tuple[trace.TracerProvider, trace.Tracer]] = {}


# The fast path for the global provider our telemetry built (shared.observability.lean_span).
_lean: tuple[trace.TracerProvider, Any] | None = None


def use_lean_tracer(provider: trace.TracerProvider, lean: Any) -> None:
    """Start this module's spans with `lean` while `provider` is the global one."""
    global _lean
    _lean = (provider, lean)


def tracer(provider: trace.TracerProvider | None = None) -> trace.Tracer:
    provider = provider or trace.get_tracer_provider()
    found = _tracers.get(id(provider))
    if found is None or found[0] is not provider:
        found = _tracers[id(provider)] = (provider, provider.get_tracer(TRACER_NAME))
    return found[1]


@contextmanager
def current_span(
    name: str,
    *,
    parent: otel_context.Context | None = None,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, Any] | None = None,
    provider: trace.TracerProvider | None = None,
) -> Iterator[Span]:
    """`start_as_current_span` without its two generator context managers (a quarter of a
    span's cost): the span is current inside, ended on exit, and an exception marks it failed
    the way the SDK's would."""
    lean = _lean
    if provider is None and lean is not None and lean[0] is trace.get_tracer_provider():
        span = lean[1].start_span(name, parent, kind, attributes)
    else:
        span = tracer(provider).start_span(name, context=parent, kind=kind, attributes=attributes)
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield span
    except Exception as exc:
        if span.is_recording():
            span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        raise
    finally:
        otel_context.detach(token)
        span.end()


class _EntryLike(Protocol):
    entry_id: str
    headers: Mapping[str, Any]
    traced: bool


def tracing_on() -> bool:
    # Without a configured provider every span is a no-op; skipping them saves ~30 µs an entry.
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


@contextmanager
def entry_span(
    stream: str,
    entry: _EntryLike,
    job_id: str | None = None,
    attempt: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """One stream entry's own consume span, a child of its producer's span.

    FastStream's telemetry middleware traces single entries but not our batch reads
    (shared.streaming.batch_telemetry), so each entry of a batch gets its `<stream> process`
    span here, under the context its producer wrote into the entry's headers; what the handler
    publishes for the entry hangs off it, and one job stays one trace. A reclaimed entry
    (`traced`) already has the middleware's span.
    """
    if entry.traced or not tracing_on():
        if entry.traced:
            annotate_job(job_id, attempt, extra)
        yield
        return
    # Only what varies: each attribute is checked and copied on every span (the constant
    # `messaging.system`/`messaging.operation` cost 10 % of a span; the name says "process",
    # FastStream's batch span says "redis").
    attributes: dict[str, Any] = {
        "messaging.destination.name": stream,
        "messaging.message.id": entry.entry_id,
    }
    # Given at the start, not set afterwards: each later `set_attribute` takes the span's
    # lock and checks the value again.
    if job_id:
        attributes["job.id"] = job_id
    if attempt is not None:
        attributes["job.attempt"] = attempt
    for key, value in (extra or {}).items():
        if value is not None:
            attributes[key] = value
    with current_span(
        f"{stream} process",
        parent=propagate.extract(entry.headers),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    ):
        yield


@contextmanager
def entry_scope(
    stream: str,
    entry: _EntryLike,
    job_id: str | None,
    attempt: int | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Iterator[None]:
    """`entry_span` tagged with the job (and `extra` attributes, None values skipped), and the
    job id on the handler's log lines: what `with entry_span(...), job_scope(...)` does, with
    the attributes given at the span's start rather than set after it."""
    with entry_span(stream, entry, job_id, attempt, extra), job_context(job_id or None):
        yield


class _ProgressLike(Protocol):
    generation: int
    total_generations: int
    population: int
    best_hard: int
    best_penalty: int
    evaluations: int


def annotate_job(
    job_id: str | None, attempt: int | None = None, attributes: Mapping[str, Any] | None = None
) -> None:
    """Put the job on the current span (the hop's consume span inside a handler).

    `attributes` take dotted OTel names (`{"error.class": "crash"}`); None values are skipped.
    """
    span = trace.get_current_span()
    if job_id:
        span.set_attribute("job.id", job_id)
    if attempt is not None:
        span.set_attribute("job.attempt", attempt)
    for key, value in (attributes or {}).items():
        if value is not None:
            # StrEnum members are str, but exporters are happier with the plain value.
            span.set_attribute(key, str(value) if isinstance(value, str) else value)


@contextmanager
def job_scope(
    job_id: str | None, attempt: int | None = None, attributes: Mapping[str, Any] | None = None
) -> Iterator[None]:
    """Tag the handler's span and bind the job id for its log lines; `None` (garbage input
    without an id) tags nothing but still clears any id left from a previous message."""
    annotate_job(job_id, attempt, attributes)
    with job_context(job_id or None):
        yield


def record_failure(error_class: str, err: BaseException | None = None) -> None:
    """Mark the current span failed with the job's error class, so a trace search finds it."""
    span = trace.get_current_span()
    span.set_attribute("error.class", error_class)
    if err is not None:
        span.record_exception(err)
    span.set_status(Status(StatusCode.ERROR, error_class))


class SolveSpan:
    """The `solve` span: progress as events, the solver's figures as attributes at the end."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def progress(self, p: _ProgressLike, percent: float | None = None) -> None:
        attrs: dict[str, Any] = {
            "generation": p.generation,
            "population": p.population,
            "evaluations": p.evaluations,
        }
        if p.total_generations:
            attrs["total_generations"] = p.total_generations
        if p.best_hard >= 0:
            attrs["best.hard"] = p.best_hard
            attrs["best.soft"] = p.best_penalty
        if percent is not None:
            attrs["progress"] = percent
        self.span.add_event("progress", attrs)

    def finished(self, result: Any) -> None:
        """`result` is a `SolveResult`; duck-typed so this module needs no roster import."""
        stats = result.stats
        self.span.set_attributes(
            {
                "solver.used": str(getattr(stats.implementation, "value", stats.implementation)),
                "solver.seed": stats.seed,
                "solver.time_ms": stats.time_ms,
                "solver.generations": stats.iterations,
                "solver.evaluations": stats.evaluations,
                "solver.cancelled": stats.cancelled,
                "solver.timed_out": stats.timed_out,
                "solver.feasible": bool(result.feasible),
                "solver.best_score.hard": result.score.hard_violations,
                "solver.best_score.soft": result.score.penalty,
            }
        )
        if stats.time_to_first_feasible_ms is not None:
            self.span.set_attribute(
                "solver.time_to_first_feasible_ms", stats.time_to_first_feasible_ms
            )
        if stats.time_to_best_ms is not None:
            self.span.set_attribute("solver.time_to_best_ms", stats.time_to_best_ms)


@contextmanager
def solve_span(
    job_id: str, attempt: int, solver: str, tracer_provider: trace.TracerProvider | None = None
) -> Iterator[SolveSpan]:
    """A child of the handler's span around one solve; an exception marks it failed."""
    with current_span(
        "solve",
        attributes={"job.id": job_id, "job.attempt": attempt, "solver.requested": solver},
        provider=tracer_provider,
    ) as span:
        yield SolveSpan(span)


def solved_inline(requested: str, result: Any | None, error: BaseException | None) -> None:
    """A tiny solve run inline in its hop: its figures on the hop's span, no `solve` span."""
    span = trace.get_current_span()
    if result is not None:
        # What tells one tiny greedy solve from another; the GA's figures (generations,
        # evaluations, time to first feasible) mean nothing here and each costs on every job.
        stats = result.stats
        span.set_attributes(
            {
                "solver.requested": requested,
                "solver.used": str(getattr(stats.implementation, "value", stats.implementation)),
                "solver.time_ms": stats.time_ms,
                "solver.feasible": bool(result.feasible),
                "solver.best_score.hard": result.score.hard_violations,
                "solver.best_score.soft": result.score.penalty,
            }
        )
    else:
        span.set_attribute("solver.requested", requested)
        if error is not None:
            span.record_exception(error)
