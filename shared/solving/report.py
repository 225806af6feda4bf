"""The outcome records a solve ends with, written the same way by the solver and the fallback:
completed, cancelled, invalid (permanent, to triage), or a transient failure (to triage, which
retries it). Each write goes into the caller's pipeline when one is given, so a batch sends its
writes in one round trip before it is acked.
"""

from __future__ import annotations

from typing import Any

from shared.errors import ErrorClass, InvalidRequest, error_class_for, error_type_of
from shared.jobs.messages import (
    AttemptError,
    FailureRecord,
    Job,
    Outcome,
    OutcomeKind,
    Severity,
)
from shared.observability.tracing import record_failure
from shared.roster.evaluator import Rendered
from shared.roster.model import Implementation, SolveResult
from shared.solving.drop import new_result_key
from shared.streaming.broker import Service


def attempt_error(stage: str, job: Job, err: BaseException) -> AttemptError:
    """One failed attempt as the dead letter's history keeps it."""
    return AttemptError(
        attempt=job.attempt,
        stage=stage,
        error_class=error_class_for(err),
        error_type=error_type_of(err),
        message=str(err)[:2000] or type(err).__name__,
    )


class Reports:
    """Writes a solve's outcome for one service.

    Parameters:
        svc: the service (its publisher, names and metrics).
        stage: the service's name, written into failure records (`solver` or `fallback`).
    """

    def __init__(self, svc: Service, stage: str) -> None:
        self.svc = svc
        self.stage = stage
        self.names = svc.names

    async def completed(
        self,
        job: Job,
        solved: SolveResult | Rendered,
        elapsed_ms: float,
        used: Implementation,
        pipe: Any,
        key: str | None = None,
    ) -> None:
        """`solved` rendered already (a guarded solve's) is published as rendered.

        A large result (`RESULT_KEY_MIN_BYTES`) unbatched (`pipe` None) is written under a key
        of its own first, and the outcome names the key: the SET has been answered before the
        outcome's XADD is sent, so the notifier never reads an outcome whose result is not
        there yet, on a Redis Cluster too (where the two live in different slots). Batched
        results are an inline solve's, small by `SOLVER_INLINE_MAX_CELLS`. A result that the
        solve process stored itself (`Rendered.key`, shared/solving/drop.py) is only named;
        one it could not store goes under the same `key` (the solve's `ResultDrop.key`), so that
        a SET of the child's that Redis made after all is overwritten, not left behind.
        """
        if isinstance(solved, Rendered):
            result, data = solved.summary, solved.data
        else:
            result, data = solved, solved.__pydantic_serializer__.to_json(solved)
        text_out: str | None = None
        stored = solved.key if isinstance(solved, Rendered) else None
        if stored is not None:
            key = stored
        elif pipe is None and len(data) >= self.svc.settings.result_key_min_bytes:
            key = key or new_result_key(self.names, job.job_id)
            # The notifier deletes it as it writes the event; the TTL only bounds one that a
            # crash between the two writes left without an outcome. Sent as the bytes it was
            # rendered to: decoding 12 MB to text and encoding it back cost ~5 ms.
            await self.svc.redis.set(key, data, ex=self.svc.settings.idempotency_ttl_seconds)
        else:
            key, text_out = None, data.decode()
        self.svc.metrics.solve_time(elapsed_ms, used.value)
        self.svc.metrics.job_out("completed", solver=used.value)
        await self.svc.publish(
            Outcome(
                kind=OutcomeKind.COMPLETED,
                job_id=job.job_id,
                result=text_out,
                result_key=key,
                solve_time_ms=round(elapsed_ms, 1),
                solver_used=used.value,
                attempts=job.attempt,
                cancelled=bool(result.stats and result.stats.cancelled),
                changes=result.changes,
                lower_bound=result.stats.lower_bound if result.stats else None,
                gap=result.stats.gap if result.stats else None,
                proven_optimal=result.stats.proven_optimal if result.stats else None,
                penalty=result.score.penalty,
                hard_violations=result.score.hard_violations,
            ),
            self.names.outcomes,
            pipeline=pipe,
        )

    async def cancelled(self, job: Job, reason: str, pipe: Any = None) -> None:
        await self.svc.publish(
            Outcome(
                kind=OutcomeKind.FAILED,
                job_id=job.job_id,
                error_class=ErrorClass.CANCELLED,
                reason=reason,
                attempts=job.attempt,
            ),
            self.names.outcomes,
            pipeline=pipe,
        )

    async def invalid(self, job: Job, err: InvalidRequest, pipe: Any = None) -> None:
        # Only reachable if limits shrank between intake and solve; still never retried.
        await self.svc.publish(
            FailureRecord(
                job_id=job.job_id,
                severity=Severity.PERMANENT,
                error_class=ErrorClass.INVALID,
                reason=err.reason,
                stage=self.stage,
                job=job,
                trace_id=job.trace_id,
            ),
            self.names.failures,
            pipeline=pipe,
        )

    async def transient(self, job: Job, error: AttemptError, pipe: Any = None) -> None:
        """Send a failed attempt to triage, which retries it with backoff."""
        record_failure(error.error_class.value)
        failed = job.model_copy(update={"history": [*job.history, error]})
        await self.svc.publish(
            FailureRecord(
                job_id=job.job_id,
                severity=Severity.TRANSIENT,
                error_class=error.error_class,
                reason=f"{error.stage}: {error.error_type}: {error.message}",
                stage=self.stage,
                job=failed,
                trace_id=job.trace_id,
            ),
            self.names.failures,
            pipeline=pipe,
        )
