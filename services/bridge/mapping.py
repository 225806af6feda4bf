"""The bridge's decisions, as pure functions: which intake entry a BullMQ job becomes, and what a
ShiftStream terminal event does to that BullMQ job.

services/bridge/bridge.py carries them out (the hand-over script, the events it follows, the
BullMQ calls); docs/coming-from-bullmq.md describes them for users.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from shared.jobs.events import MAX_JOB_ID

Priority = Literal["high", "normal", "low"]
PRIORITIES: tuple[Priority, ...] = ("high", "normal", "low")
# The W3C header, as the intake's published contract checks it (shared/jobs/events.py).
TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")


class ConfigError(ValueError):
    """A BULLMQ_* setting the bridge cannot run with; the message is one line naming it."""


@dataclass(frozen=True, slots=True)
class Rules:
    """The bridge's settings, checked: the queues and how BullMQ priorities map onto ours."""

    queues: tuple[str, ...]
    high_max: int = 1
    low_min: int = 10
    unset: Priority = "normal"

    @classmethod
    def parse(
        cls, queues: str, *, high_max: int = 1, low_min: int = 10, unset: str = "normal"
    ) -> Rules:
        if low_min <= high_max:
            raise ConfigError(
                f"BULLMQ_PRIORITY_LOW_MIN ({low_min}) must be above BULLMQ_PRIORITY_HIGH_MAX "
                f"({high_max})"
            )
        if unset not in PRIORITIES:
            raise ConfigError(f"BULLMQ_PRIORITY_UNSET: {unset!r} is not high, normal or low")
        return cls(parse_queues(queues), high_max, low_min, unset)


def parse_queues(raw: str) -> tuple[str, ...]:
    """`BULLMQ_QUEUES` (comma separated) as queue names; empty: the bridge is off."""
    if not raw.strip():
        return ()
    names = [q.strip() for q in raw.split(",")]
    for q in names:
        if not q:
            raise ConfigError(f"BULLMQ_QUEUES: an empty queue name in {raw!r}")
        # BullMQ's keys are `<prefix>:<queue>:<id>`; it refuses such names itself.
        if ":" in q:
            raise ConfigError(f"BULLMQ_QUEUES: queue name {q!r} contains ':', which BullMQ forbids")
    if len(set(names)) != len(names):
        raise ConfigError(f"BULLMQ_QUEUES: a queue is named twice in {raw!r}")
    return tuple(names)


def priority_name(priority: int | None, rules: Rules) -> Priority:
    """BullMQ's numeric priority as one of ShiftStream's three names.

    BullMQ: 1 is the most urgent, larger numbers less so, and 0 (or none) means "no priority",
    which BullMQ itself runs *before* every prioritized job. ShiftStream shares its solvers
    with other producers, whose entries without a priority are `normal`: a BullMQ job without
    one is `normal` too (BULLMQ_PRIORITY_UNSET), so a bridged queue cannot jump ahead of
    everyone by leaving priorities out.
    """
    if not priority or priority <= 0:
        return rules.unset
    if priority <= rules.high_max:
        return "high"
    if priority >= rules.low_min:
        return "low"
    return "normal"


def not_before(timestamp_ms: int, delay_ms: int) -> str | None:
    """When the producer asked the job to start (`timestamp + delay`), as the intake's ISO time.

    BullMQ keeps a delayed job in its own delayed set until then, so the bridge normally sees
    it when it is due already; the time still travels, so a retried or early-taken job does
    not start sooner than asked.
    """
    if delay_ms <= 0:
        return None
    at = dt.datetime.fromtimestamp((timestamp_ms + delay_ms) / 1000, dt.UTC)
    return at.isoformat(timespec="milliseconds")


def trace_fields(opts: Mapping[str, Any]) -> dict[str, str]:
    """The producer's W3C trace context, when it traces BullMQ (`bullmq-otel` keeps the
    propagation carrier as JSON text in the job's `tm` option); otherwise nothing."""
    raw = opts.get("tm")
    if not isinstance(raw, str):
        return {}
    try:
        carrier = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(carrier, dict):
        return {}
    parent = carrier.get("traceparent")
    if not isinstance(parent, str) or not TRACEPARENT.match(parent):
        return {}
    out = {"traceparent": parent}
    state = carrier.get("tracestate")
    if isinstance(state, str) and state:
        out["tracestate"] = state
    return out


def identity(queue: str, timestamp_ms: int) -> str:
    """Which BullMQ job this is, beyond its id: a job removed and added again under the same
    id is a new job, and so is one of another queue (queue names have no ':')."""
    return f"{queue}:{timestamp_ms}"


@dataclass(frozen=True, slots=True)
class HandOver:
    """A BullMQ job as ShiftStream's intake entry (flat fields, docs/design.md §3)."""

    job_id: str
    identity: str
    priority: Priority
    fields: dict[str, str]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A BullMQ job the bridge cannot hand over; it fails at once, without BullMQ retries."""

    reason: str


def hand_over(
    queue: str,
    job_id: str,
    timestamp_ms: int,
    data: Any,
    opts: Mapping[str, Any],
    priority: int | None,
    rules: Rules,
) -> HandOver | Refusal:
    """The intake entry of one BullMQ job (`data` is the job's data as BullMQ decoded it)."""
    if not job_id:
        return Refusal("job id: empty")
    if len(job_id) > MAX_JOB_ID:
        return Refusal(
            f"job id: {len(job_id)} characters, ShiftStream's job ids have at most {MAX_JOB_ID}"
        )
    if job_id != job_id.strip():
        # The intake refuses it (it would not round-trip): said here, on the BullMQ job.
        return Refusal(f"job id: {job_id[:60]!r} has surrounding whitespace")
    # A producer may add the request as JSON text or as an object: the intake validates either.
    payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    name = priority_name(priority, rules)
    fields = {"type": "solve", "job_id": job_id, "payload": payload, "priority": name}
    delay = opts.get("delay")
    start = not_before(timestamp_ms, int(delay)) if isinstance(delay, int | float) else None
    if start is not None:
        fields["not_before"] = start
    return HandOver(job_id, identity(queue, timestamp_ms), name, fields)


def conflict_reason(job_id: str, owner: str, idempotency_ttl: int) -> str:
    """Why a BullMQ job is refused whose id ShiftStream already took for another BullMQ job."""
    queue, _, stamp = owner.rpartition(":")
    when = ""
    if stamp.isdigit():
        added = dt.datetime.fromtimestamp(int(stamp) / 1000, dt.UTC)
        when = f", added {added.isoformat(timespec='seconds')}"
    return (
        f"job id: {job_id!r} was already handed to ShiftStream for another job (queue "
        f"{queue!r}{when}); ShiftStream solves a job id once within IDEMPOTENCY_TTL_SECONDS "
        f"({idempotency_ttl} s): give the new job its own jobId"
    )


# ------------------------------------------------------------------------------ the ending


@dataclass(frozen=True, slots=True)
class Complete:
    """Complete the BullMQ job with `value` as its return value."""

    value: Any
    summary: str


@dataclass(frozen=True, slots=True)
class Fail:
    """Fail the BullMQ job at once (UnrecoverableError: ShiftStream already retried)."""

    message: str
    summary: str


Ending = Complete | Fail


def ending(event: Mapping[str, str]) -> Ending:
    """What a terminal `solver-events` entry does to the BullMQ job."""
    attempts = event.get("attempts", "")
    if event.get("type") == "solver.completed":
        try:
            value: Any = json.loads(event.get("result") or "null")
        except ValueError:
            value = event.get("result")
        summary = (
            f"ShiftStream: completed by {event.get('solver_used') or '?'} in "
            f"{event.get('solve_time_ms') or '?'} ms, attempts {attempts or '?'}"
        )
        if event.get("cancelled") == "true":
            summary += "; cancelled, the roster is the best found until then"
        return Complete(value, summary)
    message = f"{event.get('error_class') or 'crash'}: {event.get('reason') or ''}".rstrip(": ")
    if event.get("dead_letter_id"):
        message += f" (dead letter {event['dead_letter_id']})"
    return Fail(message, f"ShiftStream: failed after {attempts or '?'} attempts: {message}")


def ending_from_record(job_id: str, record: Mapping[str, str]) -> Ending:
    """The ending of a job that ended (its terminal guard is set) when the terminal event itself
    is gone (trimmed from `solver-events` while no bridge followed the job): the job record
    keeps the class and reason of a failure, never the roster."""
    if record.get("state") == "failed":
        return ending(
            {
                "type": "solver.failed",
                "error_class": record.get("error_class", ""),
                "reason": record.get("last_error", ""),
                "attempts": record.get("attempts", ""),
                "dead_letter_id": record.get("dead_letter_id", ""),
            }
        )
    done = "completed" if record.get("state") == "completed" else "ended"
    message = (
        f"result lost: ShiftStream {done} job {job_id!r}, but its terminal event left "
        "solver-events (EVENTS_MAXLEN) before a bridge could read it"
    )
    return Fail(message, f"ShiftStream: {message}")
