from __future__ import annotations

import urllib.request
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from shared.observability.metrics import Metrics, meter_provider, prometheus_reader


def _points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    data = reader.get_metrics_data()
    assert data is not None
    return {
        m.name: list(m.data.data_points)
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    }


def test_instruments_are_recorded() -> None:
    reader = InMemoryMetricReader()
    m = Metrics("solver", MeterProvider(metric_readers=[reader]))
    for _ in range(4):
        m.job_in()
    m.job_out("completed", solver="generetic")
    m.failure("crash", stage="solver")
    m.fallback("crash")
    m.retry(attempt=2)
    m.solve_time(1500.0, "generetic")
    m.queue_wait(42.0)
    m.progress_dropped(9)

    points = _points(reader)
    assert points["shiftstream.jobs.in"][0].value == 4
    assert points["shiftstream.jobs.out"][0].attributes["outcome"] == "completed"
    assert points["shiftstream.failures"][0].attributes["error_class"] == "crash"
    assert points["shiftstream.retries"][0].value == 1
    assert points["shiftstream.fallbacks"][0].value == 1
    assert points["shiftstream.fallback.rate"][0].value == 0.25
    solve = points["shiftstream.solve.duration"][0]
    assert solve.count == 1 and solve.sum == 1500.0
    assert solve.attributes == {"service": "solver", "solver": "generetic", "outcome": "completed"}
    assert points["shiftstream.queue.wait"][0].sum == 42.0
    assert points["shiftstream.progress.dropped"][0].value == 9


def test_no_destination_means_no_provider(monkeypatch: Any) -> None:
    for var in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "METRICS_PORT",
    ):
        monkeypatch.delenv(var, raising=False)
    assert meter_provider("intake", set_global=False) is None


def test_prometheus_endpoint_serves_the_instruments() -> None:
    reader = prometheus_reader(0, addr="127.0.0.1")
    provider = meter_provider("fallback", readers=[reader], set_global=False)
    assert provider is not None
    try:
        m = Metrics("fallback", provider)
        m.job_in()
        m.solve_time(12.0, "greedy")
        port = reader.http_port  # type: ignore[attr-defined]
        body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
        text = body.decode()
        assert (
            'shiftstream_jobs_in_total{service="fallback",service_name="shiftstream-fallback"} 1.0'
            in text
        )
        assert "shiftstream_solve_duration_milliseconds_count" in text
    finally:
        provider.shutdown()


def test_otel_metrics_exporter_none_turns_otlp_off(monkeypatch: Any) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    monkeypatch.delenv("METRICS_PORT", raising=False)
    assert meter_provider("solver", set_global=False) is None


def test_dev_mode_writes_metrics_beside_the_traces(monkeypatch: Any, tmp_path: Any) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_METRICS_EXPORTER", "METRICS_PORT"):
        monkeypatch.delenv(var, raising=False)
    provider = meter_provider("triage", trace_file=str(tmp_path / "traces.jsonl"), set_global=False)
    assert provider is not None
    Metrics("triage", provider).retry(attempt=2)
    provider.shutdown()  # flushes the periodic reader
    text = (tmp_path / "metrics.jsonl").read_text()
    assert "shiftstream.retries" in text and "shiftstream-triage" in text


def test_a_busy_metrics_port_does_not_stop_the_service(monkeypatch: Any) -> None:
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_METRICS_EXPORTER"):
        monkeypatch.delenv(var, raising=False)
    first = prometheus_reader(0, addr="127.0.0.1")
    try:
        busy = first.http_port  # type: ignore[attr-defined]
        monkeypatch.setenv("METRICS_PORT", str(busy))
        # Bound on all interfaces: the port is taken on 127.0.0.1 already.
        assert meter_provider("solver", set_global=False) is None
    finally:
        first.shutdown()
