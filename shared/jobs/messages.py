"""Pydantic models of the internal stream records, and the mapping to public event fields.

Internal streams carry FastStream envelopes of these models. The two public streams carry flat
string fields instead (docs/design.md §3): `IntakeEntry` is what the custom intake parser lifts them
into, and `Outcome.event_fields()` is what the notifier writes.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from shared.errors import ErrorClass
from shared.roster.model import Priority

__all__ = ["ErrorClass"]  # re-exported: the records carry it


def now() -> float:
    return time.time()


def iso(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).isoformat(timespec="milliseconds")


def parse_time(value: str) -> dt.datetime:
    """An ISO 8601 time as the intake reads `not_before`: `Z` or an offset, and a time without
    zone taken as UTC; ValueError otherwise. The CLI parses `--not-before` with this very
    function, so whatever one accepts the other does too."""
    t = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    return t if t.tzinfo is not None else t.replace(tzinfo=dt.UTC)


class Severity(StrEnum):
    PERMANENT = "permanent"  # dead letter at once, never retried
    TRANSIENT = "transient"  # retried with backoff until attempts run out


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore")


class IntakeEntry(_Record):
    """One public intake entry. Everything is optional: garbage must be reported, not crash."""

    type: str | None = None
    job_id: str | None = None
    payload: str | None = None
    not_before: str | None = None
    priority: str | None = None
    other: dict[str, str] | None = Field(
        default=None, description="Fields outside the contract, kept for the dead letter."
    )
    payload_bytes: int | None = Field(
        default=None,
        description="The payload's size when it was over the size limit and not read, set by "
        "the intake's parser; the request is `invalid`.",
    )
    defect: str | None = Field(
        default=None,
        description="Why the entry's job id cannot be used as sent (not UTF-8, or huge), set "
        "by the intake's parser; the entry is refused under an `anon-` id.",
    )
    unreadable: str | None = Field(
        default=None,
        description="Another field the intake's parser could not read as sent (not UTF-8, or "
        "over the size limit); the request is `invalid` under its job id.",
    )

    @field_validator("payload", mode="before")
    @classmethod
    def _payload_as_text(cls, v: Any) -> Any:
        # Python producers using FastStream's envelope may send the request as an object.
        if isinstance(v, dict | list):
            return json.dumps(v)
        return v

    @field_validator("type", "job_id", "not_before", "priority", mode="before")
    @classmethod
    def _scalars_as_text(cls, v: Any) -> Any:
        if v is None or isinstance(v, str):
            return v
        return json.dumps(v)


class AttemptError(_Record):
    """One failed attempt, kept for the dead letter's history."""

    attempt: int
    stage: str
    error_class: ErrorClass
    error_type: str
    message: str
    at: float = Field(default_factory=now)


class Job(_Record):
    job_id: str
    payload: str = Field(description="The validated solve request, JSON as submitted.")
    attempt: int = Field(default=1, ge=1)
    submitted_at: float = Field(default_factory=now)
    trace_id: str | None = None
    history: list[AttemptError] = Field(default_factory=list)
    # Which of the hop's streams it waits in (shared/names.py `jobs_for`, `fallback_for`).
    priority: Priority = Priority.NORMAL


class FallbackJob(_Record):
    job: Job
    error: AttemptError


class FailureRecord(_Record):
    job_id: str
    severity: Severity
    error_class: ErrorClass
    reason: str
    stage: str
    job: Job | None = None
    raw: dict[str, str] | None = Field(
        default=None, description="The intake entry as received, when it never became a job."
    )
    trace_id: str | None = None
    at: float = Field(default_factory=now)


class DeadLetter(_Record):
    dead_letter_id: str
    job_id: str
    error_class: ErrorClass
    reason: str
    attempts: int
    payload: str | None
    raw: dict[str, str] | None
    history: list[AttemptError]
    trace_id: str | None
    first_seen: float | None
    dead_at: float = Field(default_factory=now)
    # The job's priority, so that a replay queues it as it was (None: never became a job).
    priority: Priority | None = None


class OutcomeKind(StrEnum):
    ACCEPTED = "accepted"
    PROGRESS = "progress"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (OutcomeKind.COMPLETED, OutcomeKind.FAILED)


class Outcome(_Record):
    kind: OutcomeKind
    job_id: str
    ts: float = Field(default_factory=now)
    # accepted
    priority: Priority | None = None
    # progress
    progress: float | None = None
    message: str | None = None
    phase: str | None = None
    generation: str | None = None
    population: int | None = None
    eta_seconds: float | None = None
    best_score: str | None = None
    lower_bound: float | None = None  # progress and completed
    # completed
    result: str | None = Field(default=None, description="SolveResult JSON")
    result_key: str | None = Field(
        default=None,
        description="Instead of `result`, for a large one (RESULT_KEY_MIN_BYTES): the key it "
        "waits under; the notifier's script moves it into the event and deletes the key",
    )
    solve_time_ms: float | None = None
    solver_used: str | None = None
    cancelled: bool | None = None
    changes: int | None = None  # re-rostering: cells that differ from the previous roster
    # the result's proof of quality (shared/roster/optimality.py), flat for consumers that do
    # not parse the result; `lower_bound` (above) is the result's bound then
    gap: float | None = None
    proven_optimal: bool | None = None
    # the roster's score, for the job record only (the event has it in `result`)
    penalty: int | None = None
    hard_violations: int | None = None
    # completed and failed
    attempts: int | None = None
    # failed
    error_class: ErrorClass | None = None
    reason: str | None = None
    dead_letter_id: str | None = None

    # The completed event's and the job record's spelling of the proof (None: not known).
    def lower_bound_text(self) -> str | None:
        return None if self.lower_bound is None else f"{self.lower_bound:.0f}"

    def gap_text(self) -> str | None:
        # A bound above the penalty would be a solver bug; the wire format has no sign for it.
        return None if self.gap is None else f"{max(0.0, self.gap):.4f}"

    def proven_text(self) -> str | None:
        if self.proven_optimal is None:
            return None
        return "true" if self.proven_optimal else "false"

    def event_fields(self) -> dict[str, str]:
        """Flat string fields of the public `solver-events` entry (docs/design.md §3)."""
        f: dict[str, str] = {
            "type": f"solver.{self.kind.value}",
            "job_id": self.job_id,
            "ts": iso(self.ts),
        }
        if self.kind is OutcomeKind.ACCEPTED:
            f["priority"] = (self.priority or Priority.NORMAL).value
        if self.kind is OutcomeKind.PROGRESS:
            f |= {
                "progress": f"{self.progress or 0:.0f}",
                "message": self.message or "",
                "phase": self.phase or "",
                "generation": self.generation or "",
                "population": str(self.population or 0),
                "eta_seconds": f"{self.eta_seconds or 0:.1f}",
                "best_score": self.best_score or "",
                "lower_bound": self.lower_bound_text() or "",
            }
        elif self.kind is OutcomeKind.COMPLETED:
            f |= {
                "result": self.result or "",
                "solve_time_ms": f"{self.solve_time_ms or 0:.0f}",
                "solver_used": self.solver_used or "",
                "attempts": str(self.attempts or 1),
            }
            if self.cancelled:
                f["cancelled"] = "true"
            if self.changes is not None:
                f["changes"] = str(self.changes)
            if self.proven_optimal is not None:
                f |= {
                    "lower_bound": self.lower_bound_text() or "",
                    "gap": self.gap_text() or "",
                    "proven_optimal": self.proven_text() or "",
                }
        elif self.kind is OutcomeKind.FAILED:
            f |= {
                "error_class": (self.error_class or ErrorClass.CRASH).value,
                "reason": self.reason or "",
                "attempts": str(self.attempts or 0),
                "dead_letter_id": self.dead_letter_id or "",
            }
        return f
