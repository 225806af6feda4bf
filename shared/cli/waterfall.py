"""Read OTLP JSON-lines trace files and draw one job's trace as a waterfall in the terminal.

The file is what `opentelemetry-exporter-otlp-json-file` writes in dev mode: one
`{"resourceSpans": [...]}` object per line, ids in hex, `service.name` on the resource. Several
services append to the same file, so the spans of one trace arrive interleaved and out of order;
the tree is rebuilt from the parent ids.

A job's spans are found in two passes so a large file is never held in memory: first the traces
that mention the job (a span with `job.id` = the job, or any attribute equal to it, since
FastStream's spans carry message ids rather than our job id), then every span of those traces.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from shared.jobs.dead_letters import REPLAY_ATTRIBUTE

JOB_ATTRIBUTE = "job.id"
STATUS_NAMES = {0: "unset", 1: "ok", 2: "error"}


@dataclass
class SpanRecord:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: str
    start_ns: int
    end_ns: int
    status: str = "unset"
    status_message: str = ""
    kind: int = 0
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[tuple[int, str]] = field(default_factory=list)
    children: list[SpanRecord] = field(default_factory=list)

    @property
    def duration_ns(self) -> int:
        return max(0, self.end_ns - self.start_ns)


def _any_value(v: dict[str, Any]) -> Any:
    """Decode an OTLP AnyValue from its JSON mapping."""
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [_any_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return _attributes(v["kvlistValue"].get("values", []))
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _attributes(kvs: Iterable[dict[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _any_value(kv.get("value", {})) for kv in kvs}


def _status(raw: dict[str, Any] | None) -> tuple[str, str]:
    raw = raw or {}
    code = raw.get("code", 0)
    if isinstance(code, str):  # the OTLP JSON spec also allows enum names
        name = code.removeprefix("STATUS_CODE_").lower()
    else:
        name = STATUS_NAMES.get(int(code), "unset")
    return name, str(raw.get("message", ""))


def spans_from_line(line: str) -> Iterator[SpanRecord]:
    """Every span in one line of an OTLP JSON-lines file; a torn or foreign line yields none."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return
    if not isinstance(doc, dict):
        return
    for rs in doc.get("resourceSpans", []):
        resource = _attributes(rs.get("resource", {}).get("attributes", []))
        service = str(resource.get("service.name", "?"))
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                status, message = _status(s.get("status"))
                yield SpanRecord(
                    trace_id=str(s.get("traceId", "")).lower(),
                    span_id=str(s.get("spanId", "")).lower(),
                    parent_id=str(s["parentSpanId"]).lower() if s.get("parentSpanId") else None,
                    name=str(s.get("name", "")),
                    service=service,
                    start_ns=int(s.get("startTimeUnixNano", 0)),
                    end_ns=int(s.get("endTimeUnixNano", 0)),
                    status=status,
                    status_message=message,
                    kind=int(s.get("kind", 0)) if str(s.get("kind", 0)).isdigit() else 0,
                    attributes=_attributes(s.get("attributes", [])),
                    events=[
                        (int(e.get("timeUnixNano", 0)), str(e.get("name", "")))
                        for e in s.get("events", [])
                    ],
                )


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace") as fh:
        yield from fh


def _mentions(span: SpanRecord, job_id: str) -> bool:
    if span.attributes.get(JOB_ATTRIBUTE) == job_id:
        return True
    return any(isinstance(v, str) and v == job_id for v in span.attributes.values())


def traces_of_job(path: Path, job_id: str) -> set[str]:
    """Trace ids of the spans that mention `job_id`; a trace id itself is accepted too."""
    found: set[str] = set()
    needle = job_id.lower()
    for line in _lines(path):
        if job_id not in line and needle not in line:
            continue  # cheap pre-filter: most lines belong to other jobs
        for span in spans_from_line(line):
            if _mentions(span, job_id) or span.trace_id == needle:
                found.add(span.trace_id)
    return found


def load_traces(path: Path, trace_ids: set[str]) -> dict[str, list[SpanRecord]]:
    by_trace: dict[str, list[SpanRecord]] = {t: [] for t in trace_ids}
    seen: set[tuple[str, str]] = set()
    for line in _lines(path):
        if not any(t in line for t in trace_ids):
            continue
        for span in spans_from_line(line):
            key = (span.trace_id, span.span_id)
            if span.trace_id in by_trace and key not in seen:
                seen.add(key)
                by_trace[span.trace_id].append(span)
    return by_trace


def build_tree(spans: list[SpanRecord]) -> list[SpanRecord]:
    """Link children to parents; spans whose parent is absent (remote or lost) become roots."""
    by_id = {s.span_id: s for s in spans}
    roots: list[SpanRecord] = []
    for s in spans:
        s.children = []
    for s in sorted(spans, key=lambda x: x.start_ns):
        parent = by_id.get(s.parent_id) if s.parent_id else None
        if parent is not None and parent is not s:
            parent.children.append(s)
        else:
            roots.append(s)
    return roots


def walk(roots: list[SpanRecord], depth: int = 0) -> Iterator[tuple[int, SpanRecord]]:
    for s in roots:
        yield depth, s
        yield from walk(s.children, depth + 1)


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
