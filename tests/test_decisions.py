"""The services' decisions as pure functions: intake's routing, triage's retry-or-dead-letter,
the solver's implementation choice, and the one mapping from exception to error class."""

from __future__ import annotations

import pytest

from services.intake.verdict import (
    Accept,
    Cancel,
    Duplicate,
    IgnoreCancel,
    Known,
    Reject,
    judge,
    needs_claim,
    route,
)
from services.solver.choice import implementation_for, solves_inline
from services.triage.decide import DeadLetterIt, Retry, decide, poisoned
from shared.errors import (
    Cancelled,
    ErrorClass,
    InvalidRequest,
    IsolatedSolveError,
    SolverCrashed,
    SolverTimedOut,
    error_class_for,
    error_type_of,
)
from shared.jobs.events import MAX_JOB_ID, SolveEntry
from shared.jobs.messages import FailureRecord, IntakeEntry, Job, Severity
from shared.roster.generator import generate
from shared.roster.limits import Limits
from shared.roster.model import Implementation, SolveRequest
from shared.roster.parse import parse_request
from tests.conftest import request_json

PAYLOAD = request_json(implementation="greedy")


def solve(job_id: str | None, **extra: str) -> IntakeEntry:
    return IntakeEntry(type="solve", job_id=job_id, payload=PAYLOAD, **extra)


def routed(
    entry: IntakeEntry, owned: bool = True, now: float = 1000.0, known: Known | None = None
) -> object:
    verdict = judge(entry, Limits()) if needs_claim(entry) else None
    return route(
        entry, "5-0", owned=owned, verdict=verdict, now=now, known=known, cancel_ttl_ms=86_400_000
    )


# ------------------------------------------------------------------------------ intake


def test_a_valid_request_under_a_new_id_is_accepted_now() -> None:
    assert routed(solve("j1")) == Accept("j1", None)


def test_a_repeated_id_is_a_duplicate_whatever_the_request() -> None:
    assert routed(solve("j1"), owned=False) == Duplicate("j1")
    assert routed(IntakeEntry(type="solve", job_id="j1", payload="[]"), owned=False) == Duplicate(
        "j1"
    )


def test_not_before_in_the_future_schedules_and_in_the_past_runs_now() -> None:
    later = routed(solve("j1", not_before="1970-01-01T00:20:00Z"), now=1000.0)
    assert later == Accept("j1", 1200.0)
    assert routed(solve("j1", not_before="1970-01-01T00:10:00Z"), now=1000.0) == Accept("j1")


def test_invalid_requests_are_rejected_under_their_id_with_the_field_named() -> None:
    action = routed(IntakeEntry(type="solve", job_id="j1", payload='{"employees": 3}'))
    assert isinstance(action, Reject) and action.job_id == "j1"
    assert "employees" in action.reason
    assert routed(IntakeEntry(type="solve", job_id="j1")) == Reject("j1", "payload: missing")
    bad_time = routed(solve("j1", not_before="tomorrow"))
    assert isinstance(bad_time, Reject) and bad_time.reason.startswith("not_before:")


def test_an_unknown_type_is_rejected() -> None:
    action = routed(IntakeEntry(type="stop", job_id="j1"))
    assert isinstance(action, Reject) and "unknown type 'stop'" in action.reason


CANCEL = IntakeEntry(type="cancel", job_id="j1")


def test_a_cancel_of_a_job_submitted_before_it_expires_with_the_job_ids_claim() -> None:
    """The marker dies with the claim at the latest, so it cannot stop a later job of that id."""
    day = 86_400_000
    claimed = Known(now_ms=1_000, claimed_by="4-0", claim_expires_ms=61_000, state="running")
    assert routed(CANCEL, known=claimed) == Cancel("j1", 61_000)
    young = Known(now_ms=1_000, claimed_by="4-0", claim_expires_ms=1_000 + 2 * day)
    assert routed(CANCEL, known=young) == Cancel("j1", 1_000 + day)  # CANCEL_TTL_SECONDS
    # A scheduled job whose claim has expired is still known by its record.
    assert routed(CANCEL, known=Known(now_ms=1_000, state="scheduled")) == Cancel(
        "j1", 1_000 + day
    )


def test_a_cancel_of_an_unknown_or_ended_job_sets_no_marker() -> None:
    assert isinstance(routed(CANCEL), IgnoreCancel)
    assert isinstance(routed(CANCEL, known=Known(now_ms=1)), IgnoreCancel)
    done = Known(now_ms=1, claimed_by="4-0", claim_expires_ms=60_000, state="completed")
    assert routed(CANCEL, known=done) == IgnoreCancel("j1", "job already completed")
    # Claimed by an entry after the cancel (later in the same batch): submitted after it.
    later = routed(CANCEL, known=Known(now_ms=1, claimed_by="5-1", claim_expires_ms=60_000))
    assert isinstance(later, IgnoreCancel) and "unknown" in later.reason
    # Stream ids compare as numbers: 12-0 comes after 5-0.
    assert isinstance(routed(CANCEL, known=Known(now_ms=1, claimed_by="12-0")), IgnoreCancel)


def test_the_job_id_limit_is_the_published_contracts() -> None:
    """Every id the schema accepts is kept; one character more is refused, not truncated."""
    longest = "x" * MAX_JOB_ID
    SolveEntry(type="solve", job_id=longest, payload="{}")  # the contract accepts it
    assert routed(solve(longest)) == Accept(longest)
    assert routed(solve("x" * 129)) == Accept("x" * 129)
    too_long = routed(solve(longest + "x"))
    assert too_long == Reject("anon-5-0", f"job_id: longer than {MAX_JOB_ID} characters")
    assert routed(solve(None)) == Reject("anon-5-0", "job_id: missing")


def test_ids_that_cannot_round_trip_are_refused_not_rewritten() -> None:
    """A padded id would be stripped into another job's id; bytes that are not UTF-8 would
    decode to the same text as other bytes: both are refused under the entry's own id."""
    padded = routed(solve(" v1 "))
    assert isinstance(padded, Reject) and padded.job_id == "anon-5-0"
    assert "surrounding whitespace" in padded.reason
    assert not needs_claim(solve(" v1 ")) and not needs_claim(solve("v1\n"))
    broken = solve("\\xffbin", defect="job_id: not valid UTF-8")
    assert routed(broken) == Reject("anon-5-0", "job_id: not valid UTF-8")
    assert not needs_claim(broken)
    assert routed(solve("v 1")) == Accept("v 1")  # inner spaces are part of the id


def test_not_before_beyond_the_horizon_is_invalid() -> None:
    entry = solve("late", not_before="9999-12-31T00:00:00Z")
    late = routed(entry)
    assert isinstance(late, Reject) and late.job_id == "late"
    assert late.reason.startswith("not_before: 9999-12-31") and "90 days" in late.reason
    soon = solve("soon", not_before="1970-01-02T00:00:00Z")  # now=1000 s: a day ahead
    assert routed(soon) == Accept("soon", 86_400.0)


# ------------------------------------------------------------------------------ triage


def failure(severity: Severity, attempt: int | None, error: ErrorClass) -> FailureRecord:
    job = None if attempt is None else Job(job_id="j1", payload="{}", attempt=attempt)
    return FailureRecord(
        job_id="j1", severity=severity, error_class=error, reason="boom", stage="solver", job=job
    )


def test_transient_failures_are_retried_with_the_backoff_until_the_last_attempt() -> None:
    verdict = decide(
        failure(Severity.TRANSIENT, 2, ErrorClass.CRASH),
        max_attempts=3,
        delay_after=lambda attempt: attempt * 10.0,
    )
    assert isinstance(verdict, Retry)
    assert verdict.job.attempt == 3 and verdict.delay == 20.0
    last = decide(
        failure(Severity.TRANSIENT, 3, ErrorClass.CRASH), max_attempts=3, delay_after=float
    )
    assert last == DeadLetterIt(
        ErrorClass.EXHAUSTED, "gave up after 3 attempts; last error: boom"
    )


@pytest.mark.parametrize("error", [ErrorClass.INVALID, ErrorClass.EXHAUSTED, ErrorClass.CANCELLED])
def test_permanent_failures_are_dead_lettered_at_once(error: ErrorClass) -> None:
    verdict = decide(failure(Severity.PERMANENT, 1, error), max_attempts=5, delay_after=float)
    assert verdict == DeadLetterIt(error, "boom")


def test_a_transient_failure_without_a_job_cannot_be_retried() -> None:
    verdict = decide(
        failure(Severity.TRANSIENT, None, ErrorClass.CRASH), max_attempts=5, delay_after=float
    )
    assert verdict == DeadLetterIt(ErrorClass.CRASH, "boom")


def test_a_poisoned_failure_is_exhausted_and_keeps_its_reason() -> None:
    verdict = poisoned(failure(Severity.TRANSIENT, 1, ErrorClass.CRASH))
    assert verdict.error_class is ErrorClass.EXHAUSTED and verdict.reason.endswith("boom")


# ------------------------------------------------------------------------------ solver


def test_a_request_that_names_its_solver_gets_it_else_the_deployment_decides() -> None:
    named = parse_request(request_json(implementation="greedy"))
    unnamed = parse_request(request_json())
    assert implementation_for(named, Implementation.GENERETIC) is Implementation.GREEDY
    assert implementation_for(unnamed, Implementation.GENERETIC) is Implementation.GENERETIC
    assert implementation_for(unnamed, Implementation.GREEDY) is Implementation.GREEDY


def test_a_request_too_large_for_the_c_start_goes_to_the_greedy_unless_it_names_c() -> None:
    large = generate(employees=2000, shifts=2000 * 366 // 2, seed=1, days=366)
    data = large.model_dump(mode="json")
    data["solver"] = {"time_limit_seconds": 60}
    unnamed = SolveRequest.model_validate(data)
    assert implementation_for(unnamed, Implementation.GENERETIC) is Implementation.GREEDY
    data["solver"]["implementation"] = "generetic"
    named = SolveRequest.model_validate(data)
    assert implementation_for(named, Implementation.GENERETIC) is Implementation.GENERETIC
    # Curtois-sized requests keep the C solver, even with a short limit.
    small = parse_request(request_json(employees=150, shifts=2000, time_limit=1))
    assert implementation_for(small, Implementation.GENERETIC) is Implementation.GENERETIC


def test_only_tiny_greedy_solves_run_inline() -> None:
    request = parse_request(request_json(employees=4, shifts=10))
    cells = len(request.employees) * request.horizon.days * len(request.shift_types)
    assert solves_inline(request, Implementation.GREEDY, max_cells=cells)
    assert not solves_inline(request, Implementation.GREEDY, max_cells=cells - 1)
    assert not solves_inline(request, Implementation.GENERETIC, max_cells=10**9)


# ------------------------------------------------------------------------------ errors


def test_each_exception_maps_to_its_error_class() -> None:
    assert error_class_for(InvalidRequest("x")) is ErrorClass.INVALID
    assert error_class_for(Cancelled("x")) is ErrorClass.CANCELLED
    assert error_class_for(SolverTimedOut("x")) is ErrorClass.TIMEOUT
    assert error_class_for(TimeoutError()) is ErrorClass.TIMEOUT
    assert error_class_for(SolverCrashed("x")) is ErrorClass.CRASH
    assert error_class_for(ValueError("x")) is ErrorClass.CRASH
    assert error_type_of(IsolatedSolveError("GeneticError", "x")) == "GeneticError"
    assert error_type_of(SolverCrashed("x")) == "SolverCrashed"

