"""Retry or dead letter: triage's decision for one failure record, as a pure function.

A permanent failure (an invalid request, a poison entry, a cancel) is dead-lettered at once; a
transient one (both solvers failed, an infrastructure error) is retried with backoff until
`RETRY_MAX_ATTEMPTS` attempts were made, then dead-lettered as `exhausted` with its last error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from shared.errors import ErrorClass
from shared.jobs.messages import FailureRecord, Job, Severity


@dataclass(frozen=True, slots=True)
class Retry:
    """Run `job` (the next attempt, its `attempt` counted up) `delay` seconds from now."""

    job: Job
    delay: float


@dataclass(frozen=True, slots=True)
class DeadLetterIt:
    """Dead-letter the job and tell the client, with this class and reason."""

    error_class: ErrorClass
    reason: str


def decide(
    failure: FailureRecord, *, max_attempts: int, delay_after: Callable[[int], float]
) -> Retry | DeadLetterIt:
    """What triage does with `failure`.

    Parameters:
        failure: the record a solver, the fallback or the intake wrote.
        max_attempts: attempts a job may make in all (`RETRY_MAX_ATTEMPTS`).
        delay_after: the backoff before the next attempt, given the failed attempt's number
            (backoff.py; jittered, hence passed in).
    """
    job = failure.job
    if failure.severity is not Severity.TRANSIENT or job is None:
        return DeadLetterIt(failure.error_class, failure.reason)
    if job.attempt < max_attempts:
        return Retry(job.model_copy(update={"attempt": job.attempt + 1}), delay_after(job.attempt))
    return DeadLetterIt(
        ErrorClass.EXHAUSTED, f"gave up after {job.attempt} attempts; last error: {failure.reason}"
    )


def poisoned(failure: FailureRecord) -> DeadLetterIt:
    """A failure record whose own handling keeps failing: dead-lettered as it is, no retry."""
    return DeadLetterIt(
        ErrorClass.EXHAUSTED, f"triage could not handle the failure: {failure.reason}"
    )
