"""Draw one job's trace as a waterfall in the terminal, from the OTLP JSON-lines trace file.

Reading the file (and finding a job's traces in it) is `shared.observability.otlp_file`'s.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from shared.jobs.dead_letters import REPLAY_ATTRIBUTE
from shared.observability.otlp_file import (
    SpanRecord,
    build_tree,
    load_traces,
    spans_from_line,
    traces_of_job,
    walk,
)

__all__ = [
    "SpanRecord",
    "bar_width",
    "build_tree",
    "load_traces",
    "render_job",
    "spans_from_line",
    "traces_of_job",
    "walk",
    "waterfall_table",
]


def _fmt_ms(ns: int) -> str:
    ms = ns / 1e6
    if ms >= 10_000:
        return f"{ms / 1000:.1f} s"
    if ms >= 100:
        return f"{ms:.0f} ms"
    return f"{ms:.1f} ms"


SERVICE_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan")


def _bar(start: int, dur: int, t0: int, total: int, width: int, style: str) -> Text:
    total = max(total, 1)
    lead = min(width - 1, int((start - t0) / total * width))
    length = max(1, min(width - lead, round(dur / total * width)))
    bar = Text(" " * lead)
    bar.append("█" * length, style=style)
    return bar


def _label(depth: int, s: SpanRecord) -> Text:
    label = Text("  " * depth + ("└ " if depth else ""))
    label.append(s.name)
    if s.events:
        label.append(f" ({len(s.events)} ev)", style="dim")
    return label


def _status_text(s: SpanRecord) -> Text:
    status = Text(s.status, style="bold red" if s.status == "error" else "green")
    if s.status_message:
        status.append(f" {s.status_message[:40]}", style="red")
    return status


def bar_width(spans: list[SpanRecord], total_width: int) -> int:
    """What is left for the bars once the text columns are as wide as their content."""
    rows = list(walk(build_tree(spans)))
    label = max((len(_label(d, s)) for d, s in rows), default=4)
    service = max((len(s.service) for _, s in rows), default=7)
    status = max((len(_status_text(s)) for _, s in rows), default=6)
    # start and duration are at most 9 characters; 7 borders and 2 spaces of padding each.
    used = label + service + status + 9 + 9 + 7 + 2 * 6
    return max(10, min(100, total_width - used))


def waterfall_table(spans: list[SpanRecord], *, title: str = "", width: int = 40) -> Table:
    """The rich table for one trace: tree of spans with offset, duration, status and bars."""
    roots = build_tree(spans)
    t0 = min((s.start_ns for s in spans), default=0)
    t1 = max((s.end_ns for s in spans), default=0)
    total = t1 - t0
    colours: dict[str, str] = {}
    table = Table(title=title or None, title_justify="left", expand=False, pad_edge=False)
    table.add_column("span", no_wrap=True)
    table.add_column("service", no_wrap=True)
    table.add_column("start", justify="right", no_wrap=True)
    table.add_column("duration", justify="right", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column(f"0 … {_fmt_ms(total)}", no_wrap=True)
    for depth, s in walk(roots):
        colour = colours.setdefault(s.service, SERVICE_COLOURS[len(colours) % len(SERVICE_COLOURS)])
        status = _status_text(s)
        table.add_row(
            _label(depth, s),
            Text(s.service, style=colour),
            _fmt_ms(s.start_ns - t0),
            _fmt_ms(s.duration_ns),
            status,
            _bar(
                s.start_ns,
                s.duration_ns,
                t0,
                total,
                width,
                "red" if s.status == "error" else colour,
            ),
        )
    return table


def replay_of(spans: list[SpanRecord]) -> str | None:
    """The dead letter this trace's lifecycle replays (the intake marks its span), if any."""
    for s in spans:
        value = s.attributes.get(REPLAY_ATTRIBUTE)
        if isinstance(value, str) and value:
            return value
    return None


def render_job(
    path: Path, job_id: str, console: Console | None = None, width: int | None = None
) -> int:
    """Print the waterfall of every trace of `job_id`; returns the number of traces found.

    One lifecycle of a job is one trace. A dead letter replay starts a new lifecycle, and so a
    new trace, which the intake marks (`job.replay_of`); any trace beyond those means the
    context was lost at some hop, and showing each trace (rather than merging them) makes that
    visible.
    """
    console = console or Console()
    trace_ids = traces_of_job(path, job_id)
    if not trace_ids:
        return 0
    traces = load_traces(path, trace_ids)
    ordered = sorted(traces.items(), key=lambda kv: min((s.start_ns for s in kv[1]), default=0))
    replays = 0
    for trace_id, spans in ordered:
        services = sorted({s.service for s in spans})
        title = f"job {job_id} · trace {trace_id} · {len(spans)} spans · {', '.join(services)}"
        replayed = replay_of(spans)
        if replayed:
            replays += 1
            title += f" · replay of dead letter {replayed}"
        bars = width or bar_width(spans, console.width)
        console.print(waterfall_table(spans, title=title, width=bars))
    if len(ordered) > 1:
        lost = len(ordered) - replays - 1
        lifecycles = f"{replays + 1} lifecycles: the first submission and {replays} " + (
            "replay" if replays == 1 else "replays"
        )
        if lost > 0:
            console.print(
                f"[yellow]{len(ordered)} traces for one job"
                + (f" ({lifecycles})" if replays else "")
                + f": {lost} more than its lifecycles, so trace context was not carried "
                "across every hop.[/yellow]"
            )
        else:
            console.print(
                f"{lifecycles} (shiftstream dlq replay), one trace each; the trace context "
                "was carried across every hop."
            )
    return len(ordered)
