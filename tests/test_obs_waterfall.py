"""The waterfall reads what the real OTLP JSON-lines exporter writes, not a hand-made file."""

from __future__ import annotations

from pathlib import Path

import typer
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.json.file import FileSpanExporter
from opentelemetry.propagate import extract, inject
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rich.console import Console
from typer.testing import CliRunner

from shared.cli import ops
from shared.cli.waterfall import build_tree, load_traces, render_job, traces_of_job, walk


def _provider(service: str, path: Path) -> TracerProvider:
    p = TracerProvider(resource=Resource.create({"service.name": service}))
    p.add_span_processor(SimpleSpanProcessor(FileSpanExporter(str(path))))
    return p


def _two_service_job(path: Path, job_id: str, replay_of: str | None = None) -> str:
    """intake -> solver across a carrier, like a stream hop; returns the trace id. With
    `replay_of`, the intake marks its span as a dead letter replay's, as the service does."""
    intake, solver = _provider("shiftstream-intake", path), _provider("shiftstream-solver", path)
    carrier: dict[str, str] = {}
    marks = {"job.id": job_id} | ({"job.replay_of": replay_of} if replay_of else {})
    with intake.get_tracer("t").start_as_current_span(
        "workforce-solver process", attributes=marks
    ) as root:
        with intake.get_tracer("t").start_as_current_span("solver.jobs publish"):
            inject(carrier)
        trace_id = format(root.get_span_context().trace_id, "032x")
    token = context.attach(extract(carrier))
    try:
        tracer = solver.get_tracer("t")
        with (
            tracer.start_as_current_span("solver.jobs process", attributes={"job.id": job_id}),
            tracer.start_as_current_span("solve") as solve,
        ):
            solve.add_event("progress", {"generation": 3})
            solve.set_status(trace.StatusCode.ERROR, "crash")
    finally:
        context.detach(token)
    intake.shutdown()
    solver.shutdown()
    return trace_id


def test_finds_and_nests_spans_across_services(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    trace_id = _two_service_job(path, "job-7")
    _two_service_job(path, "other-job")  # another trace in the same file must not leak in

    assert traces_of_job(path, "job-7") == {trace_id}
    spans = load_traces(path, {trace_id})[trace_id]
    assert len(spans) == 4
    rows = [(depth, s.service, s.name) for depth, s in walk(build_tree(spans))]
    assert rows == [
        (0, "shiftstream-intake", "workforce-solver process"),
        (1, "shiftstream-intake", "solver.jobs publish"),
        (2, "shiftstream-solver", "solver.jobs process"),
        (3, "shiftstream-solver", "solve"),
    ]
    solve = next(s for s in spans if s.name == "solve")
    assert solve.status == "error" and solve.status_message == "crash"
    assert solve.events and solve.events[0][1] == "progress"
    t0 = min(s.start_ns for s in spans)
    assert all(s.start_ns >= t0 and s.end_ns >= s.start_ns for s in spans)

    console = Console(width=160, record=True, color_system=None)
    assert render_job(path, "job-7", console) == 1
    out = console.export_text()
    assert trace_id in out
    assert "shiftstream-solver" in out and "  └ solver.jobs publish" in out
    assert "error crash" in out and "█" in out


def test_trace_command(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    _two_service_job(path, "job-8")
    app = typer.Typer()
    ops.register(app)
    runner = CliRunner()
    ok = runner.invoke(app, ["trace", "job-8", "--file", str(path)])
    assert ok.exit_code == 0, ok.output
    assert "solve" in ok.output and "shiftstream-intake" in ok.output
    # piped: 160 columns, unless COLUMNS says otherwise
    wide = runner.invoke(app, ["trace", "job-8", "--file", str(path)], env={"COLUMNS": ""})
    assert max(len(line) for line in wide.output.splitlines()) > 80, wide.output
    narrow = runner.invoke(app, ["trace", "job-8", "--file", str(path)], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0 and "solve" in narrow.output
    assert max(len(line) for line in narrow.output.splitlines()) <= 80, narrow.output
    missing = runner.invoke(app, ["trace", "nope", "--file", str(path)])
    assert missing.exit_code == 4  # nothing by that name (shared/cli/exits.py)
    assert "no spans for nope" in missing.output


def test_torn_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    _two_service_job(path, "job-9")
    # A writer killed mid-line leaves half a JSON document; the rest of the file still counts.
    with path.open("a") as fh:
        fh.write('{"resourceSpans": [{"job-9"\n')
    assert len(traces_of_job(path, "job-9")) == 1


def test_replays_are_lifecycles_and_only_the_rest_is_lost_context(tmp_path: Path) -> None:
    """A dead letter replay is a new lifecycle with its own trace (the intake marks it); only
    traces beyond the lifecycles mean a hop dropped the trace context."""
    path = tmp_path / "traces.jsonl"
    _two_service_job(path, "job-r")
    _two_service_job(path, "job-r", replay_of="dl-job-r-1-0a1b2c3d")
    console = Console(width=200, record=True, color_system=None)
    assert render_job(path, "job-r", console) == 2
    out = console.export_text()
    assert "replay of dead letter dl-job-r-1-0a1b2c3d" in out
    assert "2 lifecycles: the first submission and 1 replay" in out
    assert "not carried" not in out

    _two_service_job(path, "job-r")  # a third trace no replay explains
    console = Console(width=200, record=True, color_system=None)
    assert render_job(path, "job-r", console) == 3
    out = console.export_text()
    assert "3 traces for one job (2 lifecycles: the first submission and 1 replay)" in out
    assert "1 more than its lifecycles, so trace context was not carried" in out
