"""Read the OTLP JSON-lines trace file: the spans of a job's traces, as a tree.

The file is what the services write in dev mode (`shared.observability.span_file`, the same
layout as `opentelemetry-exporter-otlp-json-file`): one `{"resourceSpans": [...]}` object per
line, ids in hex, `service.name` on the resource. Several services append to the same file, so
the spans of one trace arrive interleaved and out of order; the tree is rebuilt from the parent
ids. The file is rotated at a size limit: the previous generation (`<file>.1`) is read first.

A job's spans are found in two passes so a large file is never held in memory: first the traces
that mention the job (a span with `job.id` = the job, or any attribute equal to it, since
FastStream's spans carry message ids rather than our job id), then every span of those traces.
The CLI's waterfall (`shared.cli.waterfall`) and the console both read through here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shared.observability.span_file import rotated

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


def generations(path: Path) -> list[Path]:
    """The files that hold `path`'s spans, oldest first: the rotated one, then the current."""
    return [p for p in (rotated(path), path) if p.exists()]


def _lines(path: Path) -> Iterator[str]:
    for p in generations(path):
        try:
            with p.open(encoding="utf-8", errors="replace") as fh:
                yield from fh
        except FileNotFoundError:  # rotated away between the listing and the open
            continue


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
