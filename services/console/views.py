"""What the pages show, computed from what Redis and the trace file hold: pure functions, so
the unit tests check the figures without a browser (tests/test_console_views.py)."""

from __future__ import annotations

import datetime as dt
import json
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from services.console.sampler import HISTORY_MINUTES, MinutePoint
from shared.observability.otlp_file import SpanRecord, build_tree, walk
from shared.observability.queue_stats import QueueStats
from shared.roster.optimality import judge

# A consumer idle this long with entries pending is shown as stuck (its claim is due).
REQUEST_RULES = ("shift_on_requests", "shift_off_requests")
COVER_RULES = ("cover_under", "cover_over")


def age(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


def millis(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v / 1000:.2f} s" if v >= 1000 else f"{v:.0f} ms"


def when(ts: float | str | None) -> str:
    """Unix seconds as UTC time of day (the date too when not today)."""
    if ts in (None, ""):
        return "–"
    try:
        t = dt.datetime.fromtimestamp(float(ts), dt.UTC)
    except (TypeError, ValueError):
        return str(ts)
    if t.date() == dt.datetime.now(dt.UTC).date():
        return t.strftime("%H:%M:%S")
    return t.strftime("%Y-%m-%d %H:%M:%S")


# ----------------------------------------------------------------------------- overview


@dataclass
class GroupRow:
    service: str
    stream: str
    # high, normal or low for a prioritized hop's streams (docs/decisions/0016-priorities.md).
    priority: str
    length: int
    lag: str
    pending: int
    consumers: int
    oldest: str
    idle: str
    warn: list[str] = field(default_factory=list)
    # (consumer, pending, idle) per consumer, the longest idle first.
    consumer_rows: list[tuple[str, int, str]] = field(default_factory=list)


def group_rows(stats: QueueStats, reclaim_idle_ms: int, warn_lag: int = 100) -> list[GroupRow]:
    lengths = {s.stream: s.length for s in stats.streams}
    rows = []
    for g in stats.groups:
        row = GroupRow(
            service=g.service,
            stream=g.stream,
            priority=g.priority or "",
            length=lengths.get(g.stream, 0),
            lag="no group" if not g.exists else ("?" if g.lag is None else str(g.lag)),
            pending=g.pending,
            consumers=g.consumers,
            oldest=age(g.oldest_pending_age_s),
            idle=age(g.max_idle_s),
            consumer_rows=[
                (c.name, c.pending, age(c.idle_s))
                for c in sorted(g.consumer_list, key=lambda c: -c.idle_s)
            ],
        )
        if g.exists and g.consumers == 0:
            row.warn.append("no consumer")
        if g.lag is not None and g.lag >= warn_lag:
            row.warn.append("backlog")
        if g.max_idle_s is not None and g.max_idle_s * 1000 > reclaim_idle_ms:
            row.warn.append("stuck entry")
        rows.append(row)
    return rows


def summary_rows(stats: QueueStats) -> list[tuple[str, str, bool]]:
    """(label, value, alarming) for the overview's figures."""
    w = stats.window
    failures = ", ".join(f"{k} {v}" for k, v in sorted(w.failures_by_class.items())) or "0"
    return [
        *(("intake alert", alert, True) for alert in stats.alerts),
        ("dead letters", str(stats.dead_letters), stats.dead_letters > 0),
        ("scheduled (delayed, retries)", str(stats.scheduled), False),
        ("jobs / min", f"{w.jobs_per_minute:.1f}", False),
        ("completed / failed", f"{w.completed} / {w.failed}", w.failed > 0),
        ("failures by class", failures, w.failed > 0),
        ("fallback rate", "–" if w.fallback_rate is None else f"{w.fallback_rate:.1%}", False),
        ("solve time p50 / p95", f"{millis(w.solve_ms_p50)} / {millis(w.solve_ms_p95)}", False),
        (
            "queue wait p50 / p95",
            f"{millis(w.queue_wait_ms_p50)} / {millis(w.queue_wait_ms_p95)}",
            False,
        ),
    ]


def nice_ceiling(v: float) -> float:
    """The smallest of 1, 2, 5 × 10^k at or above `v` (an axis maximum)."""
    if v <= 0:
        return 1
    k = 1.0
    while k * 10 <= v:
        k *= 10
    for m in (1, 2, 5, 10):
        if m * k >= v:
            return m * k
    return 10 * k


def chart_svg(slots: list[MinutePoint | None], width: int = 720, height: int = 180) -> str:
    """Waiting jobs (filled area, left axis) and jobs ended per minute (line, right axis) over
    the last hour, one slot per minute; empty slots (no console sampling) leave gaps."""
    pad_l, pad_r, pad_t, pad_b = 56, 56, 12, 22
    w, h = width - pad_l - pad_r, height - pad_t - pad_b
    n = max(len(slots), 1)
    top_wait = nice_ceiling(max((p.waiting for p in slots if p), default=0))
    top_done = nice_ceiling(max((p.done for p in slots if p), default=0))

    def x(i: int) -> float:
        return pad_l + (i + 0.5) * w / n

    def y(v: float, top: float) -> float:
        return pad_t + h - v / top * h

    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="waiting jobs and throughput over the last hour">',
        f'<rect x="{pad_l}" y="{pad_t}" width="{w}" height="{h}" class="frame"/>',
    ]
    bar = w / n
    for i, p in enumerate(slots):
        if p is None or p.waiting <= 0:
            continue
        top = y(p.waiting, top_wait)
        parts.append(
            f'<rect class="waiting" x="{x(i) - bar / 2:.1f}" y="{top:.1f}" '
            f'width="{bar:.1f}" height="{pad_t + h - top:.1f}">'
            f"<title>{p.waiting} waiting</title></rect>"
        )
    runs: list[list[str]] = [[]]
    for i, p in enumerate(slots):
        if p is None:
            runs.append([])
            continue
        runs[-1].append(f"{x(i):.1f},{y(p.done, top_done):.1f}")
    for run in runs:
        if len(run) == 1:
            cx, cy = run[0].split(",")
            parts.append(f'<circle class="done" cx="{cx}" cy="{cy}" r="2"/>')
        elif run:
            parts.append(f'<polyline class="done" points="{" ".join(run)}"/>')
    parts += [
        f'<text class="axis wait" x="{pad_l - 4}" y="{pad_t + 10}" text-anchor="end">'
        f"{top_wait:,.0f}</text>",
        f'<text class="axis wait" x="{pad_l - 4}" y="{pad_t + h}" text-anchor="end">0</text>',
        f'<text class="axis done" x="{width - pad_r + 4}" y="{pad_t + 10}">{top_done:,.0f}/min'
        "</text>",
        f'<text class="axis" x="{pad_l}" y="{height - 6}">−{HISTORY_MINUTES} min</text>',
        f'<text class="axis" x="{pad_l + w}" y="{height - 6}" text-anchor="end">now</text>',
        "</svg>",
    ]
    return "".join(parts)


# ----------------------------------------------------------------------------- jobs


@dataclass
class ResultSummary:
    """The figures of a roster a job list and a job page show."""

    penalty: int | None = None
    hard: int | None = None
    feasible: bool | None = None
    gap: float | None = None
    lower_bound: int | None = None
    proven_optimal: bool = False


def result_summary(result: dict[str, Any]) -> ResultSummary:
    """From a result as JSON; the proof's figures as the result states them, else (a result of
    an older solver with only a bound) judged here by the same rule."""
    score = result.get("score") or {}
    stats = result.get("stats") or {}
    penalty, hard = score.get("penalty"), score.get("hard_violations")
    bound = stats.get("lower_bound")
    gap, proven = stats.get("gap"), bool(stats.get("proven_optimal"))
    if gap is None and bound is not None and penalty is not None:
        found = judge(int(penalty), int(hard or 0), float(bound))
        gap, proven = found.gap, found.proven_optimal
    return ResultSummary(
        penalty=penalty,
        hard=hard,
        feasible=result.get("feasible"),
        gap=None if gap is None else float(gap),
        lower_bound=None if bound is None else int(bound),
        proven_optimal=proven,
    )


# ----------------------------------------------------------------------------- the roster


@dataclass
class Cell:
    shift: str
    marks: list[str] = field(default_factory=list)  # "violation", "request"
    notes: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return "\n".join(self.notes)


@dataclass
class Grid:
    days: int
    rows: list[tuple[str, list[Cell]]]
    # Per day: cover shortfalls and excesses.
    day_notes: list[list[str]]

    @property
    def shift_counts(self) -> dict[str, int]:
        counts: dict[str, int] = defaultdict(int)
        for _, cells in self.rows:
            for c in cells:
                if c.shift:
                    counts[c.shift] += 1
        return dict(sorted(counts.items()))


def roster_grid(result: dict[str, Any]) -> Grid:
    """Employees × days with the shift per cell; broken hard rules and unmet requests marked
    on the cells they name, cover problems on the day."""
    assignments = result.get("assignments") or []
    days = max((len(a.get("shifts") or []) for a in assignments), default=0)
    rows: list[tuple[str, list[Cell]]] = []
    index: dict[str, list[Cell]] = {}
    for a in assignments:
        cells = [Cell(shift=s or "") for s in (a.get("shifts") or [])]
        cells += [Cell(shift="") for _ in range(days - len(cells))]
        rows.append((str(a.get("employee")), cells))
        index[str(a.get("employee"))] = cells
    day_notes: list[list[str]] = [[] for _ in range(days)]
    for rule in result.get("breakdown") or []:
        name = str(rule.get("rule"))
        for m in rule.get("matches") or []:
            message = str(m.get("message", name))
            employee = m.get("employee")
            found = index.get(str(employee)) if employee is not None else None
            marked_days = [d for d in (m.get("days") or []) if 0 <= d < days]
            if found is None:
                if name in COVER_RULES or m.get("employee") is None:
                    for d in marked_days:
                        day_notes[d].append(message)
                continue
            kind = "request" if name in REQUEST_RULES else ("violation" if rule.get("hard") else "")
            for d in marked_days:
                if kind and kind not in found[d].marks:
                    found[d].marks.append(kind)
                found[d].notes.append(f"{name}: {message}")
    return Grid(days=days, rows=rows, day_notes=day_notes)


def score_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The score breakdown by rule, rules that cost something first."""
    rows = [
        {
            "rule": r.get("rule"),
            "hard": bool(r.get("hard")),
            "hard_violations": int(r.get("hard_violations") or 0),
            "penalty": int(r.get("penalty") or 0),
            "matches": len(r.get("matches") or []),
        }
        for r in result.get("breakdown") or []
    ]
    return sorted(rows, key=lambda r: (-r["hard_violations"], -r["penalty"], str(r["rule"])))


def roster_tsv(result: dict[str, Any]) -> str:
    """The benchmark's roster layout (shared.roster.curtois.roster_to_tsv): one tab-separated
    row per employee in the request's order, a shift id per day, empty for a day off."""
    return "".join(
        "\t".join(s or "" for s in (a.get("shifts") or [])) + "\n"
        for a in result.get("assignments") or []
    )


# ----------------------------------------------------------------------------- progress


def progress_view(event: dict[str, str]) -> dict[str, Any]:
    """A `solver.progress` event as the page's progress bar shows it."""
    try:
        percent = max(0.0, min(100.0, float(event.get("progress") or 0)))
    except ValueError:
        percent = 0.0
    return {
        "percent": percent,
        "message": event.get("message") or "solving",
        "generation": event.get("generation") or "",
        "best": event.get("best_score") or "",
        "eta": event.get("eta_seconds") or "",
    }


# ----------------------------------------------------------------------------- traces


@dataclass
class SpanRow:
    depth: int
    name: str
    service: str
    start_ms: float
    duration_ms: float
    left: float  # % of the trace's width
    width: float
    status: str
    message: str
    events: int
    attributes: dict[str, Any]


def waterfall_rows(spans: list[SpanRecord]) -> tuple[float, list[SpanRow]]:
    """(total ms, rows in tree order) of one trace, bars placed in % of its duration."""
    if not spans:
        return 0.0, []
    t0 = min(s.start_ns for s in spans)
    total = max(max(s.end_ns for s in spans) - t0, 1)
    rows = []
    for depth, s in walk(build_tree(spans)):
        left = (s.start_ns - t0) / total * 100
        rows.append(
            SpanRow(
                depth=depth,
                name=s.name,
                service=s.service.removeprefix("shiftstream-"),
                start_ms=(s.start_ns - t0) / 1e6,
                duration_ms=s.duration_ns / 1e6,
                left=round(left, 2),
                width=round(max(0.3, min(100 - left, s.duration_ns / total * 100)), 2),
                status=s.status,
                message=s.status_message,
                events=len(s.events),
                attributes=s.attributes,
            )
        )
    return total / 1e6, rows


def jaeger_links(base: str, job_id: str, trace_ids: list[str]) -> list[tuple[str, str]]:
    """(label, url) into Jaeger's UI: each known trace, and a search by the job's tag."""
    base = base.rstrip("/")
    links = [(f"trace {t[:12]}…", f"{base}/trace/{t}") for t in trace_ids if t]
    tags = urllib.parse.quote(json.dumps({"job.id": job_id}))
    links.append(("search by job.id", f"{base}/search?service=shiftstream-intake&tags={tags}"))
    return links
