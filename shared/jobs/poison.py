"""What a hop does with a poison entry: one delivered more than `MAX_DELIVERIES` times.

The rule is applied in one place, the hop layer (shared/streaming/hop.py: `Poison`), before any
handler sees the entry, so no handler can forget it or loop on such an entry. What becomes of
the entry depends only on where its hop stands in the pipeline:

- `ToTriage`: hops before triage (intake, solver, fallback) send a permanent `exhausted`
  failure record to triage, which dead-letters it and tells the client (`solver.failed`);
- triage dead-letters its own poisoned failure records at once (services/triage: it cannot
  send them to itself);
- `DeadLetterOnly`: the notifier, after which nothing could tell the client, writes the entry
  to the dead letters as it came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared.errors import ErrorClass
from shared.jobs.messages import DeadLetter, FailureRecord, FallbackJob, Job, Outcome, Severity
from shared.streaming.hop import Delivery, send


def poison_reason(stage: str, count: int) -> str:
    return f"{stage}: delivered {count} times without finishing (poison message)"


def job_failure(stage: str, delivery: Delivery[Any]) -> FailureRecord:
    """The failure record of a poisoned job entry (`Job`, or the fallback's `FallbackJob`)."""
    body = delivery.body
    job: Job = body.job if isinstance(body, FallbackJob) else body
    if isinstance(body, FallbackJob):
        job = job.model_copy(update={"history": [*job.history, body.error]})
    return FailureRecord(
        job_id=job.job_id,
        severity=Severity.PERMANENT,
        error_class=ErrorClass.EXHAUSTED,
        reason=poison_reason(stage, delivery.delivery_count),
        stage=stage,
        job=job,
        trace_id=job.trace_id,
    )


class ToTriage:
    """Send a poisoned entry to triage as a permanent `exhausted` failure.

    Parameters:
        stage: the hop's name, written into the failure's reason and stage.
        failures: the failures stream triage reads (no MAXLEN: triage trims what it consumed).
        describe: builds the failure record from the entry; by default `job_failure`, for hops
            whose entries are jobs (the intake passes its own: its entries are raw requests).
    """

    def __init__(
        self,
        stage: str,
        failures: str,
        describe: Callable[[str, Delivery[Any]], FailureRecord] = job_failure,
    ) -> None:
        self.stage = stage
        self.failures = failures
        self.describe = describe

    async def __call__(self, delivery: Delivery[Any], pipe: Any) -> None:
        await send(pipe, self.failures, self.describe(self.stage, delivery))


class DeadLetterOnly:
    """Write a poisoned outcome to the dead letters, for operators (`shiftstream dlq`).

    Parameters:
        stage: the hop's name.
        dead: the dead-letter stream.
        maxlen: its MAXLEN ~ bound.
    """

    def __init__(self, stage: str, dead: str, maxlen: int) -> None:
        self.stage = stage
        self.dead = dead
        self.maxlen = maxlen

    async def __call__(self, delivery: Delivery[Any], pipe: Any) -> None:
        outcome: Outcome = delivery.body
        letter = DeadLetter(
            dead_letter_id=f"dl-{outcome.job_id}-{self.stage}-{delivery.entry_id}",
            job_id=outcome.job_id,
            error_class=ErrorClass.EXHAUSTED,
            reason=poison_reason(self.stage, delivery.delivery_count),
            attempts=outcome.attempts or 0,
            payload=None,
            raw={"outcome": outcome.model_dump_json()[:10_000]},
            history=[],
            trace_id=None,
            first_seen=outcome.ts,
        )
        await send(pipe, self.dead, letter, self.maxlen)
