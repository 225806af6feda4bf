"""The intake's decisions for one entry, as pure functions: is the request valid, and what
becomes of the entry (a job now or later, a cancel, a duplicate, or an invalid request).

services/intake/intake.py only carries them out: the claims, the writes and the spans.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from shared.errors import InvalidRequest
from shared.jobs.events import MAX_JOB_ID
from shared.jobs.messages import IntakeEntry
from shared.roster.limits import Limits
from shared.roster.parse import parse_request


@dataclass(frozen=True, slots=True)
class Verdict:
    """A solve request's validation: why it is invalid (None: valid), and its `not_before`."""

    reason: str | None = None
    due: float | None = None


@dataclass(frozen=True, slots=True)
class Reject:
    """Fail the entry as `invalid` under `job_id` (an `anon-` id when it has no usable one)."""

    job_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Cancel:
    job_id: str


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The job id is already known: the entry is dropped, the first request's events stand."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Accept:
    """A new job: queued now, or scheduled when `due` lies in the future."""

    job_id: str
    due: float | None = None


Action = Reject | Cancel | Duplicate | Accept


def parse_not_before(value: str) -> float:
    """ISO 8601 time to epoch seconds; a time without zone is taken as UTC."""
    t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def job_id_of(entry: IntakeEntry) -> str:
    """The entry's job id as the intake keys it ("" when missing)."""
    return (entry.job_id or "").strip()


def kind_of(entry: IntakeEntry) -> str:
    return (entry.type or "").strip()


def usable_job_id(job_id: str) -> bool:
    return 0 < len(job_id) <= MAX_JOB_ID


def needs_claim(entry: IntakeEntry) -> bool:
    """Whether the entry spends its job id (a solve request under a usable id)."""
    return usable_job_id(job_id_of(entry)) and kind_of(entry) == "solve"


def judge(entry: IntakeEntry, limits: Limits) -> Verdict:
    """What a solve request is worth, before knowing whether its job id is ours."""
    if entry.payload is None:
        return Verdict(reason="payload: missing")
    try:
        parse_request(entry.payload, limits)
    except InvalidRequest as err:
        return Verdict(reason=err.reason)
    if not entry.not_before:
        return Verdict()
    try:
        return Verdict(due=parse_not_before(entry.not_before))
    except ValueError:
        return Verdict(reason=f"not_before: not an ISO 8601 time ({entry.not_before!r:.60})")


def route(
    entry: IntakeEntry, entry_id: str, *, owned: bool, verdict: Verdict | None, now: float
) -> Action:
    """What becomes of one entry.

    Parameters:
        entry: the entry as parsed (every field optional).
        entry_id: its stream id, for the `anon-` id of an entry without a usable job id.
        owned: whether this entry won its job id's idempotency claim (or spent it before).
        verdict: `judge(entry)`, for solve requests.
        now: the current time, against which `not_before` is compared.
    """
    job_id = job_id_of(entry)
    if not job_id:
        return Reject(anon(entry_id), "job_id: missing")
    if len(job_id) > MAX_JOB_ID:
        return Reject(anon(entry_id), f"job_id: longer than {MAX_JOB_ID} characters")
    kind = kind_of(entry)
    if kind == "cancel":
        return Cancel(job_id)
    if kind != "solve":
        return Reject(job_id, f"type: unknown type {kind!r}, expected solve or cancel")
    if not owned:
        return Duplicate(job_id)
    if verdict is None:
        return Reject(job_id, "request: not validated")
    if verdict.reason is not None:
        return Reject(job_id, verdict.reason)
    due = verdict.due if verdict.due is not None and verdict.due > now else None
    return Accept(job_id, due)


def anon(entry_id: str) -> str:
    # Derived from the entry id, not random: a redelivery of the same garbage entry (a crash
    # between its failure record and the ack) must land on the same id, so the terminal guard
    # keeps it to one failed event instead of one per delivery.
    return f"anon-{entry_id}"
