"""Operator commands: `shiftstream stats` (queue health) and `shiftstream trace` (a waterfall).

Both read only: stats from Redis, trace from the OTLP JSON-lines file the services write in dev
mode. Neither needs the services to be up, which is when an operator tends to run them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from shared.cli.exits import ExitCode
from shared.cli.redis_target import fail, resolve
from shared.cli.waterfall import render_job
from shared.connection.factory import SyncRedis, describe, sync_client
from shared.names import Names
from shared.observability.queue_stats import QueueStats, collect
from shared.observability.telemetry import DEFAULT_TRACE_FILE
from shared.settings import Settings

# Ages and lags past these are shown in colour: a consumer idle longer than the reclaim time is
# dead or stuck, and a lag that does not drain is a service that is down or under-scaled.
WARN_LAG = 100


def _age(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 3600:
        return f"{s / 3600:.1f} h"
    if s >= 60:
        return f"{s / 60:.1f} min"
    return f"{s:.1f} s"


def _ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1000:.2f} s" if v >= 1000 else f"{v:.0f} ms"


def stats_renderable(stats: QueueStats, reclaim_idle_ms: int | None = None) -> Group:
    """The tables of one snapshot; pure, so tests and `--watch` share it."""
    groups = Table(title="consumer groups", title_justify="left")
    for col, just in (
        ("service", "left"),
        ("stream", "left"),
        ("priority", "left"),
        ("length", "right"),
        ("lag", "right"),
        ("pending", "right"),
        ("consumers", "right"),
        ("oldest pending", "right"),
        ("max idle", "right"),
    ):
        groups.add_column(col, justify=just)  # type: ignore[arg-type]
    lengths = {s.stream: s.length for s in stats.streams}
    idle_limit = (reclaim_idle_ms or 0) / 1000
    for g in stats.groups:
        if not g.exists:
            groups.add_row(
                g.service, g.stream, g.priority or "", str(lengths.get(g.stream, 0)), "no group"
            )
            continue
        lag = Text("?" if g.lag is None else str(g.lag))
        if g.lag is not None and g.lag >= WARN_LAG:
            lag.stylize("yellow")
        idle = Text(_age(g.max_idle_s))
        if idle_limit and g.max_idle_s is not None and g.max_idle_s > idle_limit:
            idle.stylize("red")
        consumers = Text(str(g.consumers), style="red" if g.consumers == 0 else "")
        groups.add_row(
            g.service,
            g.stream,
            g.priority or "",
            str(lengths.get(g.stream, 0)),
            lag,
            str(g.pending),
            consumers,
            _age(g.oldest_pending_age_s),
            idle,
        )

    title = "streams" + (f" on {stats.redis}" if stats.redis else "")
    streams = Table(title=title, title_justify="left")
    streams.add_column("role")
    streams.add_column("stream")
    streams.add_column("length", justify="right")
    on_nodes = any(s.node for s in stats.streams)
    if on_nodes:  # a Cluster: which node holds each stream
        streams.add_column("node")
    for s in stats.streams:
        row = [s.role, s.stream, str(s.length) if s.exists else "-"]
        streams.add_row(*row, *([s.node or "-"] if on_nodes else []))

    w = stats.window
    summary = Table(title=f"last {w.window_s / 60:g} min", title_justify="left", show_header=False)
    summary.add_column("what")
    summary.add_column("value", justify="right")
    dead = Text(str(stats.dead_letters), style="red" if stats.dead_letters else "")
    rate = "-" if w.fallback_rate is None else f"{w.fallback_rate:.1%}"
    failures = ", ".join(f"{k} {v}" for k, v in sorted(w.failures_by_class.items())) or "0"
    rows: list[tuple[str, str | Text]] = [
        ("intake alert", Text(alert, style="red")) for alert in stats.alerts
    ]
    for what, value in (
        *rows,
        ("dead letters", dead),
        ("scheduled (delayed/retry)", str(stats.scheduled)),
        ("jobs per minute", f"{w.jobs_per_minute:.1f}"),
        ("completed / failed", f"{w.completed} / {w.failed}"),
        ("failures by class", failures),
        ("fallback rate", rate),
        ("solve time p50 / p95", f"{_ms(w.solve_ms_p50)} / {_ms(w.solve_ms_p95)}"),
        (
            "queue wait p50 / p95",
            f"{_ms(w.queue_wait_ms_p50)} / {_ms(w.queue_wait_ms_p95)}"
            + ("" if w.queue_wait_samples else " (no data)"),
        ),
    ):
        summary.add_row(what, value)
    footer = Text(
        time.strftime("at %H:%M:%S (Redis time)", time.localtime(stats.at))
        + (" · window truncated" if w.truncated else ""),
        style="dim",
    )
    return Group(groups, streams, summary, footer)


def _frames(
    client: SyncRedis, names: Names, settings: Settings, window: float, interval: float,
    console: Console,
) -> None:
    """`stats --watch` into a pipe or file: one frame after another, each flushed at once (a
    live display redraws in place only on a terminal, and would write nothing until the end)."""
    while True:
        snapshot = collect(client, names, window=window, deployment=describe(settings))
        console.print(stats_renderable(snapshot, settings.reclaim_idle_ms))
        console.print()
        console.file.flush()
        time.sleep(interval)


def register(app: typer.Typer) -> None:
    @app.command()
    def stats(
        watch: Annotated[bool, typer.Option("--watch", "-w", help="Refresh in place")] = False,
        as_json: Annotated[bool, typer.Option("--json", help="One JSON document")] = False,
        redis_url: Annotated[
            str | None,
            typer.Option(
                "--redis-url", help="Redis URL (default: REDIS_URL, then localhost:6379)."
            ),
        ] = None,
        window: Annotated[float, typer.Option(help="Seconds for rates and percentiles")] = 300.0,
        interval: Annotated[float, typer.Option(help="Seconds between refreshes")] = 2.0,
    ) -> None:
        """Queue health: lengths, lag, pending, dead letters, rates and solve times. With
        --watch into a pipe or file, one frame (or JSON line) per refresh."""
        settings = Settings(redis_url=resolve(redis_url).url)
        names = Names.from_settings(settings)
        client = sync_client(settings)
        where = describe(settings)
        console = Console()
        try:
            if as_json:
                while True:
                    snap = collect(client, names, window=window, deployment=where)
                    typer.echo(json.dumps(snap.model_dump()))
                    sys.stdout.flush()
                    if not watch:
                        return
                    time.sleep(interval)
            if not watch:
                console.print(
                    stats_renderable(
                        collect(client, names, window=window, deployment=where),
                        settings.reclaim_idle_ms,
                    )
                )
                return
            if not console.is_terminal:
                _frames(client, names, settings, window, interval, console)
                return
            snapshot = collect(client, names, window=window, deployment=where)
            with Live(
                stats_renderable(snapshot, settings.reclaim_idle_ms),
                console=console,
                auto_refresh=False,
            ) as live:
                while True:
                    time.sleep(interval)
                    snapshot = collect(client, names, window=window, deployment=where)
                    live.update(stats_renderable(snapshot, settings.reclaim_idle_ms), refresh=True)
        except KeyboardInterrupt:
            pass
        finally:
            client.close()

    @app.command()
    def trace(
        job_id: Annotated[str, typer.Argument(help="Job id (or a trace id)")],
        file: Annotated[
            Path | None,
            typer.Option(
                "--file", "-f", help=f"Default: SHIFTSTREAM_TRACE_FILE or {DEFAULT_TRACE_FILE}"
            ),
        ] = None,
        width: Annotated[
            int | None, typer.Option(help="Width of the bars (default: fit the terminal)")
        ] = None,
    ) -> None:
        """Draw a job's trace as a waterfall from the OTLP JSON-lines trace file."""
        settings = Settings()
        path = file or Path(settings.shiftstream_trace_file or DEFAULT_TRACE_FILE)
        # Piped output has no terminal width; a waterfall squeezed into 80 columns is unreadable,
        # so it gets 160 unless the user asked for a width (Rich reads COLUMNS itself).
        piped = not Console().is_terminal and not os.environ.get("COLUMNS")
        console = Console(width=160) if piped else Console()
        if not path.exists():
            fail(
                f"no trace file at {path} (shiftstream dev writes one; other runs need "
                "SHIFTSTREAM_DEV=1 or SHIFTSTREAM_TRACE_FILE set)",
                ExitCode.NOT_FOUND,
            )
        if render_job(path, job_id, console, width=width) == 0:
            fail(
                f"no spans for {job_id} in {path} (spans are written in batches: a running "
                "job may appear a few seconds later)",
                ExitCode.NOT_FOUND,
            )
