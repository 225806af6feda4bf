"""The two public stream entries as published contracts: what a monolith writes and reads.

Both public streams carry flat string fields (docs/design.md §3), because a producer or consumer
in any language must need nothing but XADD and XREADGROUP. These models describe those fields
exactly as they are on the wire, every value a string, so that the JSON Schema generated from them
(`shared.contracts`) is what a Node or Ruby client really sees. They are not the internal
records: `shared.jobs.messages.IntakeEntry` is the tolerant parse of an intake entry (garbage must
be reported, not crash) and `shared.jobs.messages.Outcome.event_fields()` writes the events; the
contract tests hold both to these models.

Consumers must ignore fields they do not know: adding an optional field is a compatible change
within v1 (docs/versioning.md), so the models allow extra fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from shared.jobs.messages import ErrorClass
from shared.roster.model import Implementation, Priority

# Wire formats of the stringified numbers, as patterns so non-Python clients can check them.
UInt = Annotated[str, Field(pattern=r"^[0-9]+$")]
Decimal = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?$")]
IsoTime = Annotated[
    str,
    Field(
        description="UTC time, ISO 8601 with milliseconds, e.g. 2026-01-05T10:00:00.123+00:00",
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$",
    ),
]
# The longest job id the contract accepts; the intake refuses longer ones by this same number.
MAX_JOB_ID = 200
JobId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_JOB_ID,
        # No surrounding whitespace: the intake uses ids as sent and refuses those.
        pattern=r"^\S(?:[\s\S]*\S)?$",
        description="The caller's job id, used exactly as sent (UTF-8, no surrounding "
        "whitespace); also the idempotency key of the request.",
    ),
]


class _Entry(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


# ------------------------------------------------------------------------------ intake


class SolveEntry(_Entry):
    """`XADD workforce-solver * type solve job_id ID payload JSON`: ask for a roster."""

    model_config = ConfigDict(title="solve request entry")

    type: Literal["solve"]
    job_id: JobId
    payload: str = Field(
        description="The solve request (SolveRequest v1) as JSON text.",
        json_schema_extra={"contentMediaType": "application/json"},
    )
    traceparent: str | None = Field(
        default=None,
        description="W3C trace context; the job's spans join the caller's trace.",
        pattern=r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$",
    )
    tracestate: str | None = Field(default=None, description="W3C tracestate, passed along.")
    not_before: IsoTime | None = Field(
        default=None, description="Do not start solving before this time (a delayed solve)."
    )
    priority: Priority | None = Field(
        default=None,
        description="high, normal or low: solvers take every waiting high job before any "
        "normal one, normal before low (a low job that waited PRIORITY_AGING_SECONDS longer "
        "than the oldest waiting normal one goes first). Wins over the request's own "
        "`priority`; absent in both: normal. Another value is refused as invalid.",
    )


class CancelEntry(_Entry):
    """`XADD workforce-solver * type cancel job_id ID`: stop a queued or running solve."""

    model_config = ConfigDict(title="cancel request entry")

    type: Literal["cancel"]
    job_id: JobId
    traceparent: str | None = None
    tracestate: str | None = None


IntakeRequest = Annotated[SolveEntry | CancelEntry, Field(discriminator="type")]


# ------------------------------------------------------------------------------ events


class _Event(_Entry):
    job_id: JobId
    ts: IsoTime = Field(description="When the notifier wrote the event.")


class AcceptedEvent(_Event):
    """The request passed validation and is queued. Not terminal."""

    model_config = ConfigDict(title="solver.accepted")

    type: Literal["solver.accepted"]
    priority: Priority | None = Field(
        default=None,
        description="The priority the job was queued with (high, normal or low); absent "
        "only in events written before priorities existed.",
    )


class ProgressEvent(_Event):
    """Live progress of a running solve; at most one per second per job. Not terminal."""

    model_config = ConfigDict(title="solver.progress")

    type: Literal["solver.progress"]
    progress: Annotated[str, Field(pattern=r"^(100|[1-9]?[0-9])$")] = Field(
        description="Percent of the way to the end, 0-100: the larger of time used / time limit "
        "and generation / generations the solver was given; never 100 before the end."
    )
    message: str = Field(
        description="Human readable: the phase and its figures, e.g. 'Column generation: best "
        "roster: penalty 1330, LP bound 1236 (gap 7.6%)'; while a step of the phase holds the "
        "best roster still, the step's name and what it does instead, e.g. 'Weekend plan: the "
        "weekends planned on the shift types merged; best roster: penalty 7665'."
    )
    phase: Literal["", "columns", "genetic", "greedy"] | None = Field(
        default=None,
        description="What the solver is doing: 'columns' (column generation: a best roster and "
        "an LP lower bound, no generations), 'genetic' (the memetic GA: generations and a "
        "population), 'greedy' (one construction); empty while the solve is starting, before "
        "the solver says which phase runs (which comes first depends on the request's size). "
        "Optional: absent from events of services older than this field.",
    )
    generation: Annotated[str, Field(pattern=r"^([0-9]+/[0-9]+)?$")] = Field(
        description="'g/expected' in the genetic phase: generation reached / generations "
        "expected (estimated from the pace so far and the time left); empty in other phases."
    )
    population: UInt = Field(
        description="Population size in the genetic phase; 0 in other phases."
    )
    eta_seconds: Decimal = Field(description="Estimated seconds until the solve ends.")
    best_score: Annotated[str, Field(pattern=r"^([0-9]+hard/[0-9]+soft)?$")] = Field(
        description="Best roster so far as '<hard violations>hard/<soft penalty>soft', e.g. "
        "'0hard/1250soft'; empty before the first roster."
    )
    lower_bound: Annotated[str, Field(pattern=r"^([0-9]+)?$")] | None = Field(
        default=None,
        description="The least soft penalty any roster of this request can have, as the column "
        "phase's LP proves it: best_score's penalty minus this is the most left to gain. Empty "
        "when unknown. Optional: absent from events of services older than this field.",
    )


class CompletedEvent(_Event):
    """The roster is ready. Terminal: exactly one terminal event per job id."""

    model_config = ConfigDict(title="solver.completed")

    type: Literal["solver.completed"]
    result: str = Field(
        description="The roster (SolveResult v1) as JSON text.",
        json_schema_extra={"contentMediaType": "application/json"},
    )
    solve_time_ms: UInt = Field(description="Wall time of the successful attempt.")
    solver_used: Implementation = Field(
        description="'generetic' (the C solver) or 'greedy' (the fallback)."
    )
    attempts: UInt = Field(description="Attempts it took, 1 when the first one succeeded.")
    cancelled: Literal["true"] | None = Field(
        default=None,
        description="Present when a cancel stopped the solve: the result is the best roster "
        "found until then.",
    )
    changes: UInt | None = Field(
        default=None,
        description="Cells of the roster that differ from the request's `previous` roster "
        "(re-rostering; the result's `changes` rule lists them). Present only when the request "
        "has one; absent from events of services older than this field.",
    )
    lower_bound: Annotated[str, Field(pattern=r"^([0-9]+)?$")] | None = Field(
        default=None,
        description="result.stats.lower_bound: the least soft penalty any roster of this "
        "request can have, as the solver proved it. Empty when it proved none. Optional: absent "
        "from events of services older than this field.",
    )
    gap: Annotated[str, Field(pattern=r"^([0-9]+(\.[0-9]+)?)?$")] | None = Field(
        default=None,
        description="result.stats.gap: (penalty - lower_bound) / lower_bound, e.g. '0.0123' "
        "for a roster at most 1.23 % above the optimum. Empty when unknown (no bound, or hard "
        "violations). Optional like lower_bound.",
    )
    proven_optimal: Literal["true", "false"] | None = Field(
        default=None,
        description="result.stats.proven_optimal: 'true' only when the roster has no hard "
        "violations and its penalty meets lower_bound. Optional like lower_bound.",
    )


class FailedEvent(_Event):
    """No roster will come. Terminal: exactly one terminal event per job id."""

    model_config = ConfigDict(title="solver.failed")

    type: Literal["solver.failed"]
    error_class: ErrorClass = Field(
        description="invalid (bad request, not retried), infeasible, timeout, crash, "
        "exhausted (retries used up), cancelled."
    )
    reason: str = Field(
        description="Human readable; for invalid input it names the bad field and value."
    )
    attempts: UInt = Field(description="Attempts made; 0 when the request never became a job.")
    dead_letter_id: str = Field(
        description="Id of the entry in the dead-letter stream, for `shiftstream dead show`; "
        "empty when none was written."
    )


PublicEvent = Annotated[
    AcceptedEvent | ProgressEvent | CompletedEvent | FailedEvent, Field(discriminator="type")
]

EVENT_MODELS: dict[str, type[_Event]] = {
    "solver.accepted": AcceptedEvent,
    "solver.progress": ProgressEvent,
    "solver.completed": CompletedEvent,
    "solver.failed": FailedEvent,
}
# JSON text fields and the schema of their content; `shared.contracts` adds the reference
# after generation because pydantic would try to resolve a `$ref` among its own definitions.
CONTENT_SCHEMAS = {"payload": "solve-request.v1.json", "result": "solve-result.v1.json"}
TERMINAL_EVENTS = frozenset({"solver.completed", "solver.failed"})
