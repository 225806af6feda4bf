"""The services' metrics on a real stack, read from the OTLP JSON-lines metrics file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import StackFactory, request_json

pytestmark = pytest.mark.redis


def _metric_names(path: Path, service: str) -> set[str]:
    names: set[str] = set()
    if not path.exists():
        return names
    for line in path.read_text().splitlines():
        try:
            doc = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line still being written
        for rm in doc.get("resourceMetrics", []):
            attrs = {a["key"]: a["value"].get("stringValue") for a in rm["resource"]["attributes"]}
            if attrs.get("service.name") != f"shiftstream-{service}":
                continue
            for sm in rm.get("scopeMetrics", []):
                names |= {m["name"] for m in sm.get("metrics", [])}
    return names


def test_solver_exports_its_metrics(make_stack: StackFactory, tmp_path: Path) -> None:
    stack = make_stack(
        env={
            "SHIFTSTREAM_TRACE_FILE": str(tmp_path / "traces.jsonl"),
            "OTEL_METRIC_EXPORT_INTERVAL": "300",
        }
    )
    job = stack.submit(request_json(time_limit=0.5))
    stack.wait_terminal(job)
    want = {
        "shiftstream.jobs.in",
        "shiftstream.jobs.out",
        "shiftstream.solve.duration",
        "shiftstream.queue.wait",
        "shiftstream.fallback.rate",
    }
    stack.wait_for(
        lambda: want <= _metric_names(tmp_path / "metrics.jsonl", "solver"), what="solver metrics"
    )
    assert stack.job(job).get("started_at"), stack.job(job)
