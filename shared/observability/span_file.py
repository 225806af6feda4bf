"""The dev trace file: OTLP JSON lines, written fast and kept to a bounded size.

Why not `opentelemetry-exporter-otlp-json-file`: it builds the OTLP message objects of every
span and turns them into dicts before `json.dumps`, about 60 µs a span under load; at five spans
a job in three processes that alone took a third of the pipeline's CPU (bench/README.md,
"Tracing at production cost"). This writes the same documents (one `{"resourceSpans": [...]}`
per line, hex ids, `service.name` on the resource, int64 values as strings, as the OTLP/JSON
spec and `shared.observability.otlp_file` expect) from plain dicts in one `json.dumps`.

Bounded: when the file passes `max_bytes` it is renamed to `<file>.1` (replacing the previous
one) and a new file is started, so the trace data on disk never passes about twice `max_bytes`.
Several service processes append to one file: the rename happens under an `flock` on
`<file>.lock`, and every writer notices that its file was rotated (another inode at the path)
and reopens. A line is written with one `write` on an `O_APPEND` descriptor, so lines of
different processes do not interleave.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("shiftstream.tracing")

DEFAULT_MAX_BYTES = 32 * 1024 * 1024


def rotated(path: Path) -> Path:
    """Where the previous generation of `path` lives after a rotation."""
    return path.with_name(path.name + ".1")


_encode = json.JSONEncoder(separators=(",", ":")).encode
# Attribute keys repeat on every span: their JSON form is made once.
_keys: dict[str, str] = {}


def _value(v: Any) -> str:
    t = type(v)
    if t is str:
        return '{"stringValue":' + _encode(v) + "}"
    # bool before int: True is an int too.
    if t is bool:
        return '{"boolValue":true}' if v else '{"boolValue":false}'
    if t is int:
        return f'{{"intValue":"{v}"}}'
    if t is float:
        return '{"doubleValue":' + _encode(v) + "}"
    if isinstance(v, bytes):
        return '{"bytesValue":"' + v.hex() + '"}'
    if isinstance(v, Sequence) and not isinstance(v, str):
        return '{"arrayValue":{"values":[' + ",".join(_value(x) for x in v) + "]}}"
    return '{"stringValue":' + _encode(str(v)) + "}"


def _attributes(attrs: Mapping[str, Any] | None) -> str:
    if not attrs:
        return "[]"
    parts = []
    for k, v in attrs.items():
        key = _keys.get(k)
        if key is None:
            key = _keys[k] = '{"key":' + _encode(k) + ',"value":'
        parts.append(key + _value(v) + "}")
    return "[" + ",".join(parts) + "]"


def span_json(span: ReadableSpan) -> str:
    """One span as OTLP/JSON (`Span` message, proto field names in lowerCamelCase)."""
    ctx = span.context
    assert ctx is not None
    parent = span.parent
    flags = int(ctx.trace_flags) | (0x300 if parent is not None and parent.is_remote else 0x100)
    out = (
        f'{{"traceId":"{ctx.trace_id:032x}","spanId":"{ctx.span_id:016x}"'
        + (f',"parentSpanId":"{parent.span_id:016x}"' if parent is not None else "")
        + f',"flags":{flags},"name":{_encode(span.name)}'
        # The Python enum starts at INTERNAL = 0, the OTLP one at UNSPECIFIED = 0.
        + f',"kind":{span.kind.value + 1}'
        + f',"startTimeUnixNano":"{span.start_time or 0}","endTimeUnixNano":"{span.end_time or 0}"'
    )
    if ctx.trace_state:
        out += ',"traceState":' + _encode(ctx.trace_state.to_header())
    if span.attributes:
        out += ',"attributes":' + _attributes(span.attributes)
    if span.events:
        out += ',"events":[' + ",".join(
            f'{{"timeUnixNano":"{e.timestamp}","name":{_encode(e.name)},'
            f'"attributes":{_attributes(e.attributes)}}}'
            for e in span.events
        ) + "]"
    if span.links:
        out += ',"links":[' + ",".join(
            f'{{"traceId":"{link.context.trace_id:032x}","spanId":"{link.context.span_id:016x}",'
            f'"attributes":{_attributes(link.attributes)}}}'
            for link in span.links
        ) + "]"
    status = span.status
    if status.status_code.value:
        out += (
            f',"status":{{"code":{status.status_code.value},'
            f'"message":{_encode(status.description or "")}}}}}'
        )
    else:
        out += ',"status":{}}'
    return out


def encode_line(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP/JSON `ExportTraceServiceRequest` for `spans`, as one line."""
    by_resource: dict[int, tuple[Any, dict[tuple[str, str | None], list[str]]]] = {}
    for span in spans:
        res = span.resource
        entry = by_resource.get(id(res))
        if entry is None:
            entry = by_resource[id(res)] = (res, {})
        lib = span.instrumentation_scope
        key = (lib.name, lib.version) if lib is not None else ("", None)
        entry[1].setdefault(key, []).append(span_json(span))
    resources = []
    for res, scopes in by_resource.values():
        scope_parts = []
        for (name, version), items in scopes.items():
            scope = '{"name":' + _encode(name)
            if version:
                scope += ',"version":' + _encode(version)
            scope_parts.append('{"scope":' + scope + '},"spans":[' + ",".join(items) + "]}")
        resources.append(
            '{"resource":{"attributes":' + _attributes(res.attributes) + '},"scopeSpans":['
            + ",".join(scope_parts) + "]}"
        )
    return '{"resourceSpans":[' + ",".join(resources) + "]}\n"


class JsonLinesSpanExporter(SpanExporter):
    """Append spans to an OTLP JSON-lines file, rotating it at `max_bytes` (one old generation)."""

    def __init__(self, path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._ino: int | None = None

    def _open(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._fd, self._ino = fd, os.fstat(fd).st_ino
        return fd

    def _current_fd(self) -> int:
        """Our descriptor, reopened when another writer rotated the file away under us."""
        if self._fd is None:
            return self._open()
        try:
            same = os.stat(self.path).st_ino == self._ino
        except FileNotFoundError:
            same = False
        if not same:
            os.close(self._fd)
            return self._open()
        return self._fd

    def _rotate(self) -> None:
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                # Another writer may have rotated between our write and the lock.
                if os.stat(self.path).st_size >= self.max_bytes:
                    os.replace(self.path, rotated(self.path))
            except FileNotFoundError:
                pass
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            data = encode_line(spans).encode()
            with self._lock:
                fd = self._current_fd()
                os.write(fd, data)
                if os.fstat(fd).st_size >= self.max_bytes:
                    self._rotate()
        except (OSError, ValueError, TypeError) as err:
            log.warning("could not write %d spans to %s: %s", len(spans), self.path, err)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True
