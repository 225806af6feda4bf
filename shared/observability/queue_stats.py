"""Queue health read straight from Redis: what `shiftstream stats` shows and metrics can export.

Everything comes from Redis itself (XLEN, XINFO GROUPS, XPENDING, the public events stream and
the job records), so the numbers are right however many service replicas run and even when
every service is down: that is when an operator needs them most.

Times are measured against the Redis server clock (TIME), because stream ids are stamped by
that clock; the CLI's own clock may be off by seconds on an operator's laptop.

Window figures (jobs per minute, solve time, queue wait) come from the terminal events in
`solver-events` over the last `window` seconds; the fallback rate counts the entries written to
`solver.fallback` (each priority's stream) in that window. The prioritized hops' streams (one per
priority, docs/decisions/0016-priorities.md) are listed each with its priority. Queue wait is
enqueue -> start of the successful solve. Enqueue is the job record's `submitted_at`, else its
`created_at` (intake's first write). Start is the record's `started_at` where the solver writes
it, else it is estimated as the completed event's time minus its `solve_time_ms`; the estimate
also counts the notifier hop and, for a retried job, the earlier attempts and their backoff.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from pydantic import BaseModel, Field

from shared.connection.factory import SyncRedis, is_cluster
from shared.names import READ_ORDER, Names
from shared.text import text

# Enough pending entries to find the longest idle one in practice, without XPENDING over a
# backlog of millions.
PENDING_SAMPLE = 100
# Bound on the events read for the window: at 1 progress event per second per job, 5 minutes of
# 50 concurrent solves is 15k entries; past the bound the window is marked truncated.
MAX_WINDOW_ENTRIES = 50_000
PAGE = 1_000
# Job-record fields for queue wait, first present wins. `created_at` is set by the first write
# of the record (intake); `started_at` is not written yet (see the module docstring).
ENQUEUE_FIELDS = ("submitted_at", "created_at")
START_FIELDS = ("started_at",)


class StreamStats(BaseModel):
    role: str = Field(description="intake, jobs, fallback, failures, outcomes, events or dead")
    stream: str
    priority: str | None = Field(
        default=None,
        description="high, normal or low for the streams of a prioritized hop (jobs, fallback)",
    )
    length: int
    exists: bool
    node: str | None = Field(
        default=None,
        description="The Redis Cluster node (host:port) that holds the stream; None when one "
        "primary holds everything",
    )


class ConsumerStats(BaseModel):
    name: str
    pending: int = Field(description="Entries delivered to this consumer and not yet acked")
    idle_s: float = Field(description="Seconds since this consumer last read or claimed")


class GroupStats(BaseModel):
    service: str
    stream: str
    group: str
    priority: str | None = Field(
        default=None, description="The stream's priority, for a prioritized hop's streams"
    )
    exists: bool
    consumers: int = 0
    pending: int = 0
    lag: int | None = Field(
        default=None,
        description="Entries not yet delivered to the group; None when Redis cannot tell "
        "(entries deleted or trimmed past the group's position)",
    )
    oldest_pending_id: str | None = None
    oldest_pending_age_s: float | None = Field(
        default=None, description="Seconds since the oldest pending entry was written"
    )
    max_idle_s: float | None = Field(
        default=None, description="Longest time since delivery among the oldest pending entries"
    )
    max_deliveries: int | None = None
    consumer_list: list[ConsumerStats] = Field(
        default_factory=list, description="Each consumer with its pending count and idle time"
    )


class WindowStats(BaseModel):
    window_s: float
    completed: int = 0
    failed: int = 0
    fallbacks: int = 0
    jobs_per_minute: float = 0.0
    fallback_rate: float | None = Field(
        default=None,
        description="Jobs handed to the fallback (failed primary solves) / all completed; "
        "jobs that asked for greedy themselves do not count",
    )
    failures_by_class: dict[str, int] = Field(default_factory=dict)
    solve_ms_p50: float | None = None
    solve_ms_p95: float | None = None
    queue_wait_ms_p50: float | None = None
    queue_wait_ms_p95: float | None = None
    queue_wait_samples: int = 0
    scanned: int = 0
    truncated: bool = False


class QueueStats(BaseModel):
    at: float = Field(description="Redis server time, Unix seconds")
    prefix: str
    redis: str | None = Field(
        default=None, description="Where Redis is: one server, a Sentinel primary or a Cluster"
    )
    streams: list[StreamStats]
    groups: list[GroupStats]
    dead_letters: int
    scheduled: int = Field(description="Jobs waiting in the delay schedule (retries, not_before)")
    window: WindowStats
    alerts: list[str] = Field(
        default_factory=list,
        description="What the intake saw go wrong on its stream: requests that vanished before "
        "it read them, ids ahead of the clock (services/intake/watch.py)",
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear interpolation between closest ranks (numpy's default), None for no data."""
    if not values:
        return None
    data = sorted(values)
    pos = (len(data) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def _id_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


def _server_time(r: SyncRedis) -> float:
    sec, usec = r.time()
    return float(sec) + float(usec) / 1e6


def priority_of(names: Names, stream: str) -> str | None:
    """high, normal or low for a stream of a prioritized hop, else None."""
    for p in READ_ORDER:
        if stream in (names.jobs_for(p), names.fallback_for(p)):
            return p.value
    return None


def _stream_stats(r: SyncRedis, names: Names) -> list[StreamStats]:
    roles = [
        ("intake", names.intake),
        *(("jobs", s) for s in names.prioritized(names.jobs)),
        *(("fallback", s) for s in names.prioritized(names.fallback)),
        ("failures", names.failures),
        ("outcomes", names.outcomes),
        ("events", names.events),
        ("dead", names.dead),
    ]
    pipe = r.pipeline(transaction=False)
    for _, stream in roles:
        pipe.exists(stream)
        pipe.xlen(stream)
    res = pipe.execute()
    return [
        StreamStats(
            role=role,
            stream=stream,
            priority=priority_of(names, stream),
            exists=bool(res[2 * i]),
            length=int(res[2 * i + 1]),
            node=_node_of(r, stream),
        )
        for i, (role, stream) in enumerate(roles)
    ]


def _node_of(r: SyncRedis, key: str) -> str | None:
    if not is_cluster(r):
        return None
    node = r.get_node_from_key(key)  # type: ignore[union-attr]
    return f"{node.host}:{node.port}"


def _group_stats(
    r: SyncRedis,
    service: str,
    stream: str,
    group: str,
    now: float,
    priority: str | None = None,
) -> GroupStats:
    try:
        infos = r.xinfo_groups(stream)
    except redis.ResponseError:  # no such stream yet
        infos = []
    info = next((g for g in infos if text(g["name"]) == group), None)
    if info is None:
        return GroupStats(
            service=service, stream=stream, group=group, priority=priority, exists=False
        )
    lag = info.get("lag")
    stats = GroupStats(
        service=service,
        stream=stream,
        group=group,
        priority=priority,
        exists=True,
        consumers=int(info.get("consumers", 0)),
        pending=int(info.get("pending", 0)),
        lag=None if lag is None else int(lag),
    )
    if stats.consumers:
        with contextlib.suppress(redis.ResponseError):
            stats.consumer_list = [
                ConsumerStats(
                    name=text(c["name"]),
                    pending=int(c.get("pending", 0)),
                    idle_s=int(c.get("idle", 0)) / 1000,
                )
                for c in r.xinfo_consumers(stream, group)
            ]
    if stats.pending:
        summary = r.xpending(stream, group)
        oldest = summary.get("min")
        if oldest is not None:
            oldest_id = text(oldest)
            stats.oldest_pending_id = oldest_id
            stats.oldest_pending_age_s = max(0.0, now - _id_ms(oldest_id) / 1000)
        # The oldest entries are the likeliest to be stuck; their idle time (since the last
        # delivery or claim) tells a stuck consumer from a long solve that renews its claim.
        sample = r.xpending_range(stream, group, min="-", max="+", count=PENDING_SAMPLE)
        if sample:
            stats.max_idle_s = max(int(e["time_since_delivered"]) for e in sample) / 1000
            stats.max_deliveries = max(int(e["times_delivered"]) for e in sample)
    return stats


@dataclass(frozen=True, slots=True)
class Terminal:
    """One terminal event of `solver-events`, what the window figures are made of."""

    at_ms: int
    kind: str  # "completed" or "failed"
    job_id: str | None
    solve_ms: float | None = None
    error_class: str | None = None


def terminal_of(entry_id: Any, raw_fields: Any) -> Terminal | None:
    """The terminal event in an events-stream entry, None for accepted and progress."""
    # Keys are bytes or str depending on the client's decode_responses.
    fields = {text(k): v for k, v in (raw_fields or {}).items()}
    kind = text(fields.get("type", ""))
    if kind not in ("solver.completed", "solver.failed"):
        return None
    job = fields.get("job_id")
    at = _id_ms(text(entry_id))
    if kind == "solver.failed":
        cls = text(fields.get("error_class", "")) or "unknown"
        return Terminal(at, "failed", text(job) if job else None, error_class=cls)
    took: float | None = None
    raw = fields.get("solve_time_ms")
    if raw:
        with contextlib.suppress(ValueError):
            took = float(text(raw))
    return Terminal(at, "completed", text(job) if job else None, solve_ms=took)


def summarise_window(
    terminals: Iterable[Terminal],
    waits: Sequence[float],
    fallbacks: int,
    window: float,
    *,
    scanned: int = 0,
    truncated: bool = False,
) -> WindowStats:
    """The window's figures from its terminal events, queue waits and fallback count (pure)."""
    w = WindowStats(window_s=window, scanned=scanned, truncated=truncated, fallbacks=fallbacks)
    solve_ms: list[float] = []
    for t in terminals:
        if t.kind == "completed":
            w.completed += 1
            if t.solve_ms is not None:
                solve_ms.append(t.solve_ms)
        else:
            w.failed += 1
            cls = t.error_class or "unknown"
            w.failures_by_class[cls] = w.failures_by_class.get(cls, 0) + 1
    w.jobs_per_minute = (w.completed + w.failed) / (window / 60) if window > 0 else 0.0
    if w.completed:
        w.fallback_rate = fallbacks / w.completed
    w.solve_ms_p50 = percentile(solve_ms, 0.5)
    w.solve_ms_p95 = percentile(solve_ms, 0.95)
    w.queue_wait_samples = len(waits)
    w.queue_wait_ms_p50 = percentile(waits, 0.5)
    w.queue_wait_ms_p95 = percentile(waits, 0.95)
    return w


def fallbacks_since(r: SyncRedis, names: Names, start_ms: int) -> int:
    """Entries written to `solver.fallback` since `start_ms`: the failed primary solves.

    The fallback stream holds exactly the primary solves that failed; `solver_used=greedy`
    would also count jobs that asked for greedy themselves.
    """
    handed = 0
    for stream in names.prioritized(names.fallback):
        entries = r.xrange(stream, min=f"{start_ms}-0", max="+", count=MAX_WINDOW_ENTRIES)
        handed += len(entries or [])
    return handed


def _window_stats(r: SyncRedis, names: Names, now: float, window: float) -> WindowStats:
    start_ms = int((now - window) * 1000)
    terminals: list[Terminal] = []
    scanned = 0
    truncated = False
    upper = "+"
    while True:
        if scanned >= MAX_WINDOW_ENTRIES:
            truncated = True
            break
        page = r.xrevrange(names.events, max=upper, min=f"{start_ms}-0", count=PAGE)
        if not page:
            break
        for entry_id, raw_fields in page:
            scanned += 1
            t = terminal_of(entry_id, raw_fields)
            if t is not None:
                terminals.append(t)
        if len(page) < PAGE:
            break
        # Exclusive upper bound for the next page (XREVRANGE with "(" needs Redis 6.2+).
        upper = f"({text(page[-1][0])}"
    waits = queue_waits(r, names, terminals)
    return summarise_window(
        terminals,
        list(waits.values()),
        fallbacks_since(r, names, start_ms),
        window,
        scanned=scanned,
        truncated=truncated,
    )


def queue_waits(r: SyncRedis, names: Names, terminals: Iterable[Terminal]) -> dict[str, float]:
    """Queue wait in ms of each completed job among `terminals` whose record tells it."""
    # job id -> estimated start (seconds): completed event time minus its solve time
    completed: dict[str, float | None] = {
        t.job_id: None if t.solve_ms is None else (t.at_ms - t.solve_ms) / 1000
        for t in terminals
        if t.kind == "completed" and t.job_id
    }
    fields = [*ENQUEUE_FIELDS, *START_FIELDS]
    job_ids = list(completed)
    waits: dict[str, float] = {}
    for i in range(0, len(job_ids), PAGE):
        chunk = job_ids[i : i + PAGE]
        pipe = r.pipeline(transaction=False)
        for job_id in chunk:
            pipe.hmget(names.job(job_id), fields)
        for job_id, values in zip(chunk, pipe.execute(), strict=True):
            got = dict(zip(fields, values, strict=True))
            enq = next((got[f] for f in ENQUEUE_FIELDS if got[f]), None)
            recorded = next((got[f] for f in START_FIELDS if got[f]), None)
            try:
                start = float(text(recorded)) if recorded else completed[job_id]
                if enq is None or start is None:
                    continue
                waits[job_id] = max(0.0, (start - float(text(enq))) * 1000)
            except ValueError:
                continue
    return waits


def collect(
    r: SyncRedis,
    names: Names,
    *,
    window: float = 300.0,
    window_stats: WindowStats | None = None,
    deployment: str | None = None,
) -> QueueStats:
    """One snapshot of the queue's health. Read-only; a few dozen commands plus the window.

    `window_stats`, when given, replaces the scan of the events stream: a long-running reader
    (the console) keeps its window up to date incrementally instead. `deployment` is shown as
    where Redis is (shared/connection/factory.py: `describe`).
    """
    now = _server_time(r)
    streams = _stream_stats(r, names)
    groups = [
        _group_stats(r, service, stream, group, now, priority_of(names, stream))
        for service in names.groups
        for stream, group in names.inputs(service)
    ]
    dead = next(s.length for s in streams if s.role == "dead")
    return QueueStats(
        at=now,
        prefix=names.prefix,
        redis=deployment,
        streams=streams,
        groups=groups,
        dead_letters=dead,
        scheduled=sum(int(r.zcard(names.schedule_for(p))) for p in READ_ORDER),
        window=window_stats or _window_stats(r, names, now, window),
        alerts=intake_alerts(r, names),
    )


def intake_alerts(r: SyncRedis, names: Names) -> list[str]:
    """The intake's alerts (services/intake/watch.py) in words; [] when all is well."""
    raw = {text(k): text(v) for k, v in (r.hgetall(names.alerts) or {}).items()}
    out = []
    if raw.get("intake_vanished"):
        at = float(raw.get("intake_vanished_at") or 0)
        out.append(
            f"{raw['intake_vanished']} requests left {names.intake} before the intake read "
            f"them (last at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(at))}): a "
            "producer wrote XADD with MAXLEN or MINID; no event was sent for them"
        )
    if raw.get("intake_id_ahead"):
        out.append(
            f"{names.intake}'s last id is {raw['intake_id_ahead']}, far ahead of the clock: "
            "new ids follow it until they run out (docs/publishing.md, Trust)"
        )
    return out
