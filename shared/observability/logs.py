"""Log lines that can be joined to traces and jobs: `trace_id`, `job_id` and `service` on each.

A handler binds the job it works on with `job_context(job_id)` (a contextvar, so concurrent
handlers in one event loop never see each other's id); the trace id comes from the active
OpenTelemetry span, so a line found in the logs leads straight to the waterfall in Jaeger or
`shiftstream trace`. Output is one JSON object per line for log shippers, or a readable
single-line format when stderr is a terminal (a developer running `shiftstream dev`).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from opentelemetry import trace

_job_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "shiftstream_job_id", default=None
)

# Attributes every LogRecord has; anything else was passed with `extra=` and is worth keeping.
_STANDARD_ATTRS = frozenset(
    set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__)
    | {"message", "asctime", "service", "trace_id", "span_id", "job_id", "taskName"}
)


def current_job_id() -> str | None:
    return _job_id.get()


def bind_job(job_id: str | None) -> contextvars.Token[str | None]:
    """Set the job id for the rest of this task; prefer `job_context` where a block fits."""
    return _job_id.set(job_id)


@contextmanager
def job_context(job_id: str | None) -> Iterator[None]:
    token = _job_id.set(job_id)
    try:
        yield
    finally:
        _job_id.reset(token)


def _job_from_span(span: trace.Span) -> str | None:
    # SDK spans expose their attributes; a handler that tagged its span with `job.id` but forgot
    # to bind the contextvar still gets the id on its lines.
    attrs = getattr(span, "attributes", None)
    if attrs:
        value = attrs.get("job.id")
        if value is not None:
            return str(value)
    return None


class ContextFilter(logging.Filter):
    """Stamps service, trace and job ids on every record that passes the handler."""

    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service

    def filter(self, record: logging.LogRecord) -> bool:
        record.service = self.service
        span = trace.get_current_span()
        ctx = span.get_span_context()
        if ctx.is_valid:
            record.trace_id = format(ctx.trace_id, "032x")
            record.span_id = format(ctx.span_id, "016x")
        else:
            record.trace_id = None
            record.span_id = None
        job = getattr(record, "job_id", None) or _job_id.get()
        if job is None and ctx.is_valid:
            job = _job_from_span(span)
        record.job_id = job
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "service": getattr(record, "service", None),
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", None),
            "span_id": getattr(record, "span_id", None),
            "job_id": getattr(record, "job_id", None),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD_ATTRS and not key.startswith("_"):
                doc[key] = value
        if record.exc_info:
            doc["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(doc, default=str)


class ConsoleFormatter(logging.Formatter):
    """One readable line; the ids are shortened, as a human only needs them to tell jobs apart."""

    def format(self, record: logging.LogRecord) -> str:
        when = dt.datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        trace_id = getattr(record, "trace_id", None)
        job_id = getattr(record, "job_id", None)
        ids = []
        if job_id:
            ids.append(f"job={job_id}")
        if trace_id:
            ids.append(f"trace={trace_id[:8]}")
        tail = f" [{' '.join(ids)}]" if ids else ""
        line = (
            f"{when} {getattr(record, 'service', '-'):<9} {record.levelname:<7} "
            f"{record.name}: {record.getMessage()}{tail}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def configure_logging(
    service: str,
    *,
    level: int | str | None = None,
    stream: TextIO | None = None,
    json_format: bool | None = None,
) -> logging.Handler:
    """Route the root logger (FastStream's and ours) through one handler with the context filter.

    `json_format=None` picks JSON unless the stream is a terminal; `LOG_FORMAT=json|console`
    overrides that (a developer piping to `jq`, or CI wanting readable output). `LOG_LEVEL`
    sets the level when `level` is not given.
    """
    stream = stream or sys.stderr
    if json_format is None:
        forced = os.environ.get("LOG_FORMAT", "").lower()
        json_format = forced == "json" or (forced != "console" and not stream.isatty())
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter(service))
    handler.setFormatter(JsonFormatter() if json_format else ConsoleFormatter())
    root = logging.getLogger()
    # Replace, not add: basicConfig or a previous call must not print every line twice.
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level or os.environ.get("LOG_LEVEL", "INFO").upper())
    _reroute_faststream()
    return handler


def _reroute_faststream() -> None:
    """FastStream's loggers print to stdout/stderr themselves and do not propagate.

    Left alone, their lines (message received, handler errors with tracebacks) would bypass the
    JSON format and carry no trace or job id. Loggers the broker creates later are not covered:
    pass `logger=logging.getLogger("shiftstream.<service>")` to the broker and the app.
    """
    manager = logging.Logger.manager
    for name, logger in list(manager.loggerDict.items()):
        if (name == "faststream" or name.startswith("faststream.")) and isinstance(
            logger, logging.Logger
        ):
            for old in list(logger.handlers):
                logger.removeHandler(old)
            logger.propagate = True
