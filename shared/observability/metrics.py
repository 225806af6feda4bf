"""Per-service OpenTelemetry metrics: what a service did, as counters and histograms.

`Metrics(service)` is the small API handlers call (`job_in()`, `solve_time(ms, solver)` ...).
`meter_provider(service)` decides where the numbers go, like `shared.observability.telemetry`
does for spans:

- OTLP/HTTP when `OTEL_EXPORTER_OTLP_ENDPOINT` is set (the same collector as the traces),
- else an OTLP JSON-lines file beside the trace file in dev mode (`metrics.jsonl`),
- neither of those when `OTEL_METRICS_EXPORTER=none`,
- and, independently, a Prometheus scrape endpoint when `METRICS_PORT` is set.

With none of them there is no provider and every call is a no-op on the API's default meter.
Metric names are the OpenTelemetry ones; Prometheus sees them with `_` for `.` and a unit suffix
(`shiftstream_solve_duration_milliseconds_bucket`, ...).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

METER_NAME = "shiftstream"
log = logging.getLogger("shiftstream.metrics")

# Solve times run from a few ms (tiny rosters, greedy) to minutes (time-limited GA runs);
# the SDK's default buckets stop at 10 s, which would lump every real solve together.
SOLVE_BUCKETS_MS: Sequence[float] = (
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    30_000,
    60_000,
    120_000,
    300_000,
)
WAIT_BUCKETS_MS: Sequence[float] = (
    1,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1_000,
    2_500,
    5_000,
    10_000,
    30_000,
    60_000,
    300_000,
)


class Metrics:
    """The instruments of one service. Cheap to call; safe to call from several threads."""

    def __init__(self, service: str, provider: metrics.MeterProvider | None = None) -> None:
        self.service = service
        meter = (provider or metrics.get_meter_provider()).get_meter(METER_NAME)
        self._base = {"service": service}
        # Counters are tallied here and read by the SDK at each export (observable counters):
        # an SDK `Counter.add` with attributes cost ~10 µs, a tenth of a tiny job's solver hop
        # (bench/README.md); a tally is a dict update. Exporters see the same cumulative sums.
        self._tally: dict[str, dict[tuple[tuple[str, str], ...], int]] = {}
        for name, unit, description in (
            ("shiftstream.jobs.in", "{job}", "Jobs taken from the input stream"),
            (
                "shiftstream.jobs.out",
                "{job}",
                "Jobs passed on, by outcome (completed, failed, forwarded, retried ...)",
            ),
            ("shiftstream.failures", "{failure}", "Failures by error class"),
            ("shiftstream.retries", "{retry}", "Retries scheduled"),
            (
                "shiftstream.fallbacks",
                "{job}",
                "Jobs handed to the greedy fallback after a primary failure",
            ),
            (
                "shiftstream.progress.dropped",
                "{event}",
                "Progress updates not sent because of the one-per-second throttle",
            ),
        ):
            self._tally[name] = {}
            meter.create_observable_counter(
                name, callbacks=[self._observer(name)], unit=unit, description=description
            )
        self._solve = meter.create_histogram(
            "shiftstream.solve.duration",
            unit="ms",
            description="Wall time of one solve, by solver and outcome",
            explicit_bucket_boundaries_advisory=SOLVE_BUCKETS_MS,
        )
        self._wait = meter.create_histogram(
            "shiftstream.queue.wait",
            unit="ms",
            description="Time from enqueue to the start of work on the job",
            explicit_bucket_boundaries_advisory=WAIT_BUCKETS_MS,
        )
        # The fallback rate as a ready number for dashboards without a query language. Within
        # one process it is fallbacks / jobs in, which is meaningful where both happen: the
        # solver service. Fleet-wide: sum(rate(fallbacks)) / sum(rate(jobs_in{service=solver})).
        self._lock = threading.Lock()
        self._n_in = 0
        self._n_fallback = 0
        meter.create_observable_gauge(
            "shiftstream.fallback.rate",
            callbacks=[self._observe_fallback_rate],
            unit="1",
            description="Share of this process's jobs that went to the fallback solver",
        )

    def _attrs(self, **extra: Any) -> dict[str, Any]:
        return self._base | {k: str(v) for k, v in extra.items() if v is not None}

    def _add(self, name: str, n: int, **labels: Any) -> None:
        key = tuple((k, str(v)) for k, v in labels.items() if v is not None)
        with self._lock:
            tally = self._tally[name]
            tally[key] = tally.get(key, 0) + n

    def _observer(self, name: str) -> Any:
        def observe(_options: CallbackOptions) -> Iterable[Observation]:
            with self._lock:
                items = list(self._tally[name].items())
            return [Observation(total, self._base | dict(key)) for key, total in items]

        return observe

    def job_in(self, n: int = 1) -> None:
        with self._lock:
            self._n_in += n
        self._add("shiftstream.jobs.in", n)

    def job_out(self, outcome: str, solver: str | None = None) -> None:
        self._add("shiftstream.jobs.out", 1, outcome=outcome, solver=solver)

    def failure(self, error_class: str, stage: str | None = None) -> None:
        self._add("shiftstream.failures", 1, error_class=error_class, stage=stage)

    def retry(self, attempt: int | None = None) -> None:
        # The attempt number is bounded by max attempts, so it is safe as a label.
        self._add("shiftstream.retries", 1, attempt=attempt)

    def fallback(self, error_class: str | None = None) -> None:
        with self._lock:
            self._n_fallback += 1
        self._add("shiftstream.fallbacks", 1, error_class=error_class)

    def solve_time(self, ms: float, solver: str, outcome: str = "completed") -> None:
        self._solve.record(ms, self._attrs(solver=solver, outcome=outcome))

    def queue_wait(self, ms: float) -> None:
        self._wait.record(max(0.0, ms), self._base)

    def progress_dropped(self, n: int = 1) -> None:
        self._add("shiftstream.progress.dropped", n)

    def fallback_rate(self) -> float | None:
        with self._lock:
            return self._n_fallback / self._n_in if self._n_in else None

    def _observe_fallback_rate(self, _options: CallbackOptions) -> Iterable[Observation]:
        rate = self.fallback_rate()
        return [] if rate is None else [Observation(rate, self._base)]


def _metric_readers(settings_trace_file: str | None, dev: bool) -> list[MetricReader]:
    readers: list[MetricReader] = []
    # The standard switch: Jaeger (the compose stack's collector) accepts traces only, so a
    # deployment exporting to it sets OTEL_METRICS_EXPORTER=none and scrapes METRICS_PORT.
    if os.environ.get("OTEL_METRICS_EXPORTER", "").strip().lower() == "none":
        return readers
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"
    ):
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        # Interval from OTEL_METRIC_EXPORT_INTERVAL (default 60 s), like any OTel SDK.
        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    elif settings_trace_file or dev:
        from opentelemetry.exporter.otlp.json.file import FileMetricExporter

        from shared.observability.telemetry import DEFAULT_TRACE_FILE

        path = Path(settings_trace_file or DEFAULT_TRACE_FILE).with_name("metrics.jsonl")
        path.parent.mkdir(parents=True, exist_ok=True)
        readers.append(PeriodicExportingMetricReader(FileMetricExporter(path)))
    return readers


def metrics_port() -> int | None:
    raw = os.environ.get("METRICS_PORT", "").strip()
    return int(raw) if raw else None


def meter_provider(
    service: str,
    *,
    trace_file: str | None = None,
    dev: bool = False,
    port: int | None = None,
    readers: Iterable[MetricReader] = (),
    set_global: bool = True,
) -> MeterProvider | None:
    """Build the service's meter provider, or None when metrics go nowhere.

    `trace_file`/`dev` are the service settings' `shiftstream_trace_file`/`shiftstream_dev`;
    `port` defaults to `METRICS_PORT`. The provider is made global (unless told not to) so that
    FastStream's own messaging metrics and `Metrics()` without a provider land in it too.
    Call `provider.shutdown()` on exit to flush the last export.
    """
    all_readers = [*readers, *_metric_readers(trace_file, dev)]
    port = metrics_port() if port is None else port
    if port is not None:
        try:
            all_readers.append(prometheus_reader(port))
        except OSError as err:
            # Several processes on one host (the dev runner, a scaled solver) cannot share a
            # port; losing the scrape endpoint must not take the service down with it.
            log.warning("metrics: cannot serve Prometheus on port %s: %s", port, err)
    if not all_readers:
        return None
    provider = MeterProvider(
        metric_readers=all_readers,
        resource=Resource.create({"service.name": f"shiftstream-{service}"}),
    )
    if set_global:
        metrics.set_meter_provider(provider)
    return provider


def prometheus_reader(port: int, addr: str = "0.0.0.0") -> MetricReader:
    """A Prometheus reader with its own registry, served on `port` (0 picks a free one).

    A private registry keeps two providers in one process (tests, the dev runner) from
    colliding on the default one. The port actually bound is `reader.http_port`; the server
    stops with the provider.
    """
    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from prometheus_client import CollectorRegistry, start_http_server

    class _ServedReader(PrometheusMetricReader):
        def __init__(self) -> None:
            registry = CollectorRegistry(auto_describe=True)
            super().__init__(
                registry=registry,
                scope_info_enabled=False,
                # service.name becomes a label, so one Prometheus tells the services apart.
                resource_attribute_filter=lambda key: key == "service.name",
            )
            self.http_server, _thread = start_http_server(port, addr=addr, registry=registry)
            self.http_port: int = self.http_server.server_port

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            self.http_server.shutdown()
            self.http_server.server_close()
            super().shutdown(timeout_millis=timeout_millis, **kwargs)

    return _ServedReader()
