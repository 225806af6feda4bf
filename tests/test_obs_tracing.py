"""One job = one trace, checked on the OTLP wire: the services export to a receiver in the test.

The receiver is a plain HTTP server decoding `ExportTraceServiceRequest` protobufs, so what is
checked is exactly what Jaeger or any collector would receive from the five real processes.
"""

from __future__ import annotations

import gzip
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.conftest import Stack, StackFactory, request_json
from tests.test_services import _broken_csolver

pytestmark = pytest.mark.redis


@dataclass
class WireSpan:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    service: str
    attributes: dict[str, Any]
    status_code: int


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


@dataclass
class Receiver:
    spans: list[WireSpan] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.add(request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def add(self, request: ExportTraceServiceRequest) -> None:
        got = []
        for rs in request.resource_spans:
            resource = {kv.key: _value(kv.value) for kv in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        WireSpan(
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex() or None,
                            name=s.name,
                            service=str(resource.get("service.name", "?")),
                            attributes={kv.key: _value(kv.value) for kv in s.attributes},
                            status_code=s.status.code,
                        )
                    )
        with self.lock:
            self.spans.extend(got)

    def trace(self, trace_id: str) -> list[WireSpan]:
        with self.lock:
            return [s for s in self.spans if s.trace_id == trace_id]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.stop()


def _stack(make_stack: StackFactory, receiver: Receiver, **kw: Any) -> Stack:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.start(),
        # Export within a fraction of a second instead of the default 5 s batch delay.
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        **kw.pop("env", {}),
    }
    return make_stack(env=env, **kw)


def _traceparent() -> tuple[str, str, str]:
    trace_id, parent = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, parent, f"00-{trace_id}-{parent}-01"


def _ancestors(span: WireSpan, by_id: dict[str, WireSpan]) -> list[WireSpan]:
    out = []
    cur = by_id.get(span.parent_id or "")
    while cur is not None and cur not in out:
        out.append(cur)
        cur = by_id.get(cur.parent_id or "")
    return out


def _dump(spans: list[WireSpan]) -> str:
    return "\n".join(
        f"{s.service:24} {s.name:40} {s.span_id} <- {s.parent_id} {s.attributes.get('job.id')}"
        for s in spans
    )


def _descends(spans: list[WireSpan], by_id: dict[str, WireSpan], child: str, parent: str) -> bool:
    """Some span of `child` has a span of `parent` among its ancestors."""
    return any(
        s.service == f"shiftstream-{child}"
        and any(a.service == f"shiftstream-{parent}" for a in _ancestors(s, by_id))
        for s in spans
    )


def _solver_attempts(spans: list[WireSpan]) -> list[WireSpan]:
    return [
        s
        for s in spans
        if s.service == "shiftstream-solver" and s.name.endswith("solver.jobs process")
    ]


def _wait_trace(
    receiver: Receiver,
    trace_id: str,
    foreign_parent: str,
    stack: Stack,
    hops: list[tuple[str, str]],
    attempts: int = 1,
    root: str = "intake",
) -> list[WireSpan]:
    """Wait for the whole trace: every hop (child service under parent service), no span whose
    parent is missing, and `attempts` solver attempts. Spans arrive in batches from five
    processes, so the trace is only judged once it is complete or the deadline has passed."""
    deadline = time.monotonic() + 20
    while True:
        spans = receiver.trace(trace_id)
        by_id = {s.span_id: s for s in spans}
        roots = [s for s in spans if s.parent_id == foreign_parent]
        complete = (
            all(s.parent_id in by_id for s in spans if s not in roots)
            and all(_descends(spans, by_id, child, parent) for child, parent in hops)
            and len(_solver_attempts(spans)) >= attempts
        )
        if complete:
            # The monolith's span is the parent of the whole job: intake hangs off it, nothing
            # else does, and there is no second root.
            assert roots and {s.service for s in roots} == {f"shiftstream-{root}"}, _dump(spans)
            assert len(_solver_attempts(spans)) == attempts, _dump(spans)
            return spans
        if time.monotonic() > deadline:
            others = [s for s in receiver.spans if s.trace_id != trace_id]
            pytest.fail(
                f"trace {trace_id} incomplete, want hops {hops}, {attempts} attempt(s)\n"
                f"{_dump(spans)}\n-- other traces --\n{_dump(others[:40])}\n{stack.logs()}"
            )
        time.sleep(0.2)


def test_one_trace_per_job_from_the_monoliths_traceparent(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    stack = _stack(make_stack, receiver)
    trace_id, parent, header = _traceparent()
    job = stack.submit(request_json(time_limit=0.5), traceparent=header)
    stack.wait_terminal(job)
    _wait_trace(receiver, trace_id, parent, stack, [("solver", "intake"), ("notifier", "solver")])


def test_fallback_adds_its_span_to_the_trace(
    make_stack: StackFactory, receiver: Receiver, tmp_path: Path
) -> None:
    stack = _stack(make_stack, receiver, cwd=_broken_csolver(tmp_path))
    trace_id, parent, header = _traceparent()
    job = stack.submit(request_json(), traceparent=header)
    assert stack.wait_terminal(job)[job]["solver_used"] == "greedy"
    hops = [("solver", "intake"), ("fallback", "solver"), ("notifier", "fallback")]
    _wait_trace(receiver, trace_id, parent, stack, hops)


def test_retried_job_keeps_both_attempts_in_one_trace(
    make_stack: StackFactory, receiver: Receiver, tmp_path: Path
) -> None:
    stack = _stack(
        make_stack,
        receiver,
        env={"SOLVER_ALLOW_FALLBACK": "false", "RETRY_MAX_ATTEMPTS": "2"},
        cwd=_broken_csolver(tmp_path),
    )
    trace_id, parent, header = _traceparent()
    job = stack.submit(request_json(), traceparent=header)
    assert stack.wait_terminal(job)[job]["error_class"] == "exhausted"
    # Attempt 1 comes from intake; attempt 2 was scheduled by triage and still joins the trace.
    hops = [
        ("solver", "intake"),
        ("triage", "solver"),
        ("solver", "triage"),
        ("notifier", "triage"),
    ]
    spans = _wait_trace(receiver, trace_id, parent, stack, hops, attempts=2)
    by_id = {s.span_id: s for s in spans}
    retried = [
        s
        for s in _solver_attempts(spans)
        if any(a.service == "shiftstream-triage" for a in _ancestors(s, by_id))
    ]
    assert len(retried) == 1, _dump(spans)


def test_a_bullmq_job_is_one_trace_from_the_producer_through_the_bridge(
    make_stack: StackFactory, receiver: Receiver
) -> None:
    """A producer tracing BullMQ (bullmq-otel keeps the W3C carrier in the job's `tm` option):
    the bridge's span hangs off the producer's, and the whole job off the bridge's."""
    import asyncio
    import json

    from bullmq import Queue

    from tests.test_bridge import QUEUE, bridge_env

    env = bridge_env()
    stack = _stack(make_stack, receiver, env=env)
    trace_id, parent, header = _traceparent()
    job = f"traced-{secrets.token_hex(3)}"

    async def add() -> None:
        queue = Queue(QUEUE, {"connection": stack.settings.redis_url,
                              "prefix": env["BULLMQ_PREFIX"]})  # fmt: skip
        await queue.add("solve", json.loads(request_json(time_limit=0.5)),
                        {"jobId": job, "tm": json.dumps({"traceparent": header})})  # fmt: skip
        await queue.close()

    asyncio.run(add())
    stack.wait_terminal(job)
    hops = [("intake", "bridge"), ("solver", "intake"), ("notifier", "solver")]
    spans = _wait_trace(receiver, trace_id, parent, stack, hops, root="bridge")
    (bridge,) = [s for s in spans if s.service == "shiftstream-bridge"]
    assert bridge.attributes["job.id"] == job and bridge.attributes["messaging.system"] == "bullmq"
