"""The intake's decisions for one entry, as pure functions: is the request valid, and what
becomes of the entry (a job now or later, a cancel, an ignored cancel, a duplicate, or an
invalid request).

services/intake/intake.py only carries them out: the claims, the writes and the spans.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.errors import InvalidRequest
from shared.jobs.events import MAX_JOB_ID
from shared.jobs.messages import IntakeEntry, iso, parse_time
from shared.roster.limits import Limits
from shared.roster.model import Priority
from shared.roster.parse import parse_request


@dataclass(frozen=True, slots=True)
class Verdict:
    """A solve request's validation: why it is invalid (None: valid), its `not_before`, and
    its priority."""

    reason: str | None = None
    due: float | None = None
    priority: Priority = Priority.NORMAL


@dataclass(frozen=True, slots=True)
class Reject:
    """Fail the entry as `invalid` under `job_id` (an `anon-` id when it has no usable one)."""

    job_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Cancel:
    """Set the job's cancel marker to expire at `expire_at_ms` (Redis time): never after the
    job id's claim, so the marker cannot outlive its job and stop a later one of that id."""

    job_id: str
    expire_at_ms: int


@dataclass(frozen=True, slots=True)
class IgnoreCancel:
    """A cancel that has nothing to stop: the job is unknown, or already ended. No marker is
    set, so a job submitted later under this id is not touched; the intake only logs it."""

    job_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Known:
    """What Redis holds about a cancel's job id when the cancel is read, in Redis's clock.

    now_ms: the server's time; claimed_by: the intake entry id that claimed the job id (None:
    not claimed); claim_expires_ms: when that claim expires (None: no expiry); state: the job
    record's state (None: no record).
    """

    now_ms: int
    claimed_by: str | None = None
    claim_expires_ms: int | None = None
    state: str | None = None


@dataclass(frozen=True, slots=True)
class Duplicate:
    """The job id is already known: the entry is dropped, the first request's events stand."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Accept:
    """A new job: queued now, or scheduled when `due` lies in the future."""

    job_id: str
    due: float | None = None
    priority: Priority = Priority.NORMAL


Action = Reject | Cancel | IgnoreCancel | Duplicate | Accept

# States after which a cancel has nothing left to stop (shared/jobs/records.py).
ENDED_STATES = frozenset({"completed", "failed"})


def parse_not_before(value: str) -> float:
    """ISO 8601 time to epoch seconds; a time without zone is taken as UTC."""
    return parse_time(value).timestamp()


def job_id_of(entry: IntakeEntry) -> str:
    """The entry's job id exactly as sent ("" when missing): never rewritten, so that the
    answer goes out under the id its producer waits for."""
    return entry.job_id or ""


def kind_of(entry: IntakeEntry) -> str:
    return (entry.type or "").strip()


def job_id_problem(entry: IntakeEntry) -> str | None:
    """Why the entry's job id cannot be used as sent (None: it can)."""
    job_id = job_id_of(entry)
    if entry.defect is not None:
        return entry.defect
    if not job_id:
        return "job_id: missing"
    if len(job_id) > MAX_JOB_ID:
        return f"job_id: longer than {MAX_JOB_ID} characters"
    if job_id != job_id.strip():
        # Stripped, it would collide with the id without the spaces; kept, most clients would
        # not match it. Refused either way, never rewritten.
        return f"job_id: {job_id[:60]!r} has surrounding whitespace"
    return None


def needs_claim(entry: IntakeEntry) -> bool:
    """Whether the entry spends its job id (a solve request under a usable id)."""
    return job_id_problem(entry) is None and kind_of(entry) == "solve"


def entry_priority(entry: IntakeEntry) -> Priority | None:
    """The entry's own `priority` field (None: absent or empty); ValueError naming a bad one."""
    raw = (entry.priority or "").strip()
    if not raw:
        return None
    try:
        return Priority(raw.lower())
    except ValueError:
        raise ValueError(f"priority: {raw!r:.40} is not high, normal or low") from None


def judge(entry: IntakeEntry, limits: Limits) -> Verdict:
    """What a solve request is worth, before knowing whether its job id is ours.

    Its priority: the entry's `priority` field when set (the transport's word, e.g. the BullMQ
    bridge's mapping), else the request's, else normal.
    """
    if entry.payload_bytes is not None and entry.payload_bytes > limits.max_json_bytes:
        return Verdict(
            reason=f"payload: {entry.payload_bytes} bytes is over the limit of "
            f"{limits.max_json_bytes} bytes"
        )
    if entry.payload is None:
        return Verdict(reason="payload: missing")
    try:
        request = parse_request(entry.payload, limits)
    except InvalidRequest as err:
        return Verdict(reason=err.reason)
    try:
        priority = entry_priority(entry) or request.priority or Priority.NORMAL
    except ValueError as err:
        return Verdict(reason=str(err))
    if not entry.not_before:
        return Verdict(priority=priority)
    try:
        return Verdict(due=parse_not_before(entry.not_before), priority=priority)
    except ValueError:
        return Verdict(reason=f"not_before: not an ISO 8601 time ({entry.not_before!r:.60})")


def stream_id(entry_id: str) -> tuple[int, int]:
    """A stream entry id as a sortable pair (milliseconds, sequence)."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def cancel_action(job_id: str, entry_id: str, known: Known | None, cancel_ttl_ms: int) -> Action:
    """A cancel stops only a job submitted before it.

    The claim tells: a job id claimed by an earlier intake entry is a job we know (a claim by a
    later entry of the same batch is a submission after the cancel). Without a claim, a job
    record in a state that can still run (a scheduled job whose claim has expired) is known
    too. The marker expires with the claim at the latest, so once the id is free again no
    marker is left to stop the next job under that id.
    """
    if known is None:
        return IgnoreCancel(job_id, "unknown job id (never submitted, or forgotten)")
    if known.state in ENDED_STATES:
        return IgnoreCancel(job_id, f"job already {known.state}")
    latest = known.now_ms + cancel_ttl_ms
    if known.claimed_by is not None and stream_id(known.claimed_by) < stream_id(entry_id):
        claim_end = known.claim_expires_ms
        return Cancel(job_id, min(latest, claim_end) if claim_end is not None else latest)
    if known.state is not None:
        return Cancel(job_id, latest)
    return IgnoreCancel(job_id, "unknown job id (never submitted, or forgotten)")


def route(
    entry: IntakeEntry,
    entry_id: str,
    *,
    owned: bool,
    verdict: Verdict | None,
    now: float,
    known: Known | None = None,
    cancel_ttl_ms: int = 24 * 3600 * 1000,
    horizon_seconds: float = 90 * 24 * 3600,
) -> Action:
    """What becomes of one entry.

    Parameters:
        entry: the entry as parsed (every field optional).
        entry_id: its stream id, for the `anon-` id of an entry without a usable job id.
        owned: whether this entry won its job id's idempotency claim (or spent it before).
        verdict: `judge(entry)`, for solve requests.
        now: the current time, against which `not_before` is compared.
        known: for a cancel, what Redis holds about its job id (`Known`; None: not looked up).
        cancel_ttl_ms: the longest a cancel marker lives (`CANCEL_TTL_SECONDS`).
        horizon_seconds: how far ahead `not_before` may lie (`NOT_BEFORE_HORIZON_SECONDS`).
    """
    job_id = job_id_of(entry)
    if (problem := job_id_problem(entry)) is not None:
        return Reject(anon(entry_id), problem)
    kind = kind_of(entry)
    if kind == "cancel":
        return cancel_action(job_id, entry_id, known, cancel_ttl_ms)
    if kind != "solve":
        return Reject(job_id, f"type: unknown type {kind!r}, expected solve or cancel")
    if not owned:
        return Duplicate(job_id)
    if verdict is None:
        return Reject(job_id, "request: not validated")
    if verdict.reason is not None:
        return Reject(job_id, verdict.reason)
    due = verdict.due if verdict.due is not None and verdict.due > now else None
    if due is not None and due > now + horizon_seconds:
        return Reject(
            job_id,
            f"not_before: {iso(due)} is more than {horizon_seconds / 86400:g} days ahead "
            "(the most a deployment allows: NOT_BEFORE_HORIZON_SECONDS)",
        )
    return Accept(job_id, due, verdict.priority)


def anon(entry_id: str) -> str:
    # Derived from the entry id, not random: a redelivery of the same garbage entry (a crash
    # between its failure record and the ack) must land on the same id, so the terminal guard
    # keeps it to one failed event instead of one per delivery.
    return f"anon-{entry_id}"
