"""Solver and fallback logic: run one job's solve in a thread, watch it, report the outcome."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Status, StatusCode

from shared.jobs.lease import lease
from shared.jobs.messages import (
    AttemptError,
    ErrorClass,
    FailureRecord,
    FallbackJob,
    Job,
    Outcome,
    OutcomeKind,
    Severity,
    now,
)
from shared.jobs.records import TERMINAL_STATES, JobRecords, JobState, is_cancelled
from shared.observability.tracing import SolveSpan, job_scope, record_failure, solve_span
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.parse import InvalidRequest, parse_request
from shared.roster.solving import SolveControl
from shared.solving.isolation import (
    SolverTimedOut,
    solve_direct,
    solve_isolated,
    switches_for,
    warm_up,
)
from shared.solving.progress import ProgressReporter
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery, entry_span, requeue, tracing_on

log = logging.getLogger("shiftstream.solver")
POLL_SECONDS = 0.1
# Leave this much of the grace period for writing the outcome and acking.
SHUTDOWN_MARGIN_SECONDS = 2.0
# Beyond time limit + watchdog grace, this much more before a silent solve thread is abandoned.
STUCK_MARGIN = 15.0


@dataclass(slots=True)
class Ahead:
    """An inline solve's outcome, kept until the batch knows the job is still due."""

    result: SolveResult | None
    error: Exception | None
    elapsed_ms: float


class HandBack(RuntimeError):
    """The solve was stopped for shutdown; the entry stays pending for another worker."""


class Cancelled(RuntimeError):
    pass


def _parse_or_none(job: Job, settings: Any) -> SolveRequest | None:
    try:
        return parse_request(job.payload, settings.limits)
    except InvalidRequest:
        return None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _entry_id(msg: Any) -> bytes:
    ids = msg.raw_message.get("message_ids") or [b""]
    return ids[0]  # type: ignore[no-any-return]


class SolveWorker:
    def __init__(self, svc: Service, stage: str, stream: str, group: str) -> None:
        self.svc = svc
        self.s = svc.settings
        self.names = svc.names
        self.stage = stage
        self.stream = stream
        self.group = group
        self.records = JobRecords(svc.redis, svc.names, svc.settings)
        # Readers and the reclaimer share it, so at most WORKER_CONCURRENCY solves run at once.
        self.slots = asyncio.Semaphore(svc.settings.worker_concurrency)
        self.stop_deadline: float | None = None
        svc.app.on_shutdown(self._stopping)
        if stage == "solver" and self.s.solver_isolation == "process":
            # on_startup runs before any subscriber reads: the fork server must not be started
            # by the warm-up and a first solve at once (a chaos run hung two solves that way).
            svc.app.on_startup(self._warm_up)

    async def _warm_up(self) -> None:
        # The fork server imports numpy and the C solver once; without this the first job
        # pays for it inside its time limit.
        try:
            await asyncio.to_thread(warm_up)
        except Exception:  # the first solve starts it again, or reports why it cannot
            log.warning("starting the solver fork server failed", exc_info=True)

    def _stopping(self) -> None:
        self.stop_deadline = time.monotonic() + self.s.graceful_timeout - SHUTDOWN_MARGIN_SECONDS

    # ------------------------------------------------------------------ shared steps

    async def poisoned(self, job: Job, msg: Any) -> bool:
        """An entry delivered more than MAX_DELIVERIES times goes to triage, never round again."""
        count = await msg.get_delivery_count()
        if count <= self.s.max_deliveries:
            return False
        await self.poison(job, count)
        return True

    async def poison(self, job: Job, count: int, pipe: Any = None) -> None:
        log.warning("%s: entry of job %s delivered %d times: poison", self.stage, job.job_id, count)
        await self.svc.publish(
            FailureRecord(
                job_id=job.job_id,
                severity=Severity.PERMANENT,
                error_class=ErrorClass.EXHAUSTED,
                reason=f"{self.stage}: delivered {count} times without finishing (poison message)",
                stage=self.stage,
                job=job,
                trace_id=job.trace_id,
            ),
            self.names.failures,
            pipeline=pipe,
        )

    @contextlib.asynccontextmanager
    async def holding(
        self, entry_ids: list[str | bytes], consumer: str | None = None
    ) -> AsyncIterator[None]:
        # The lease starts before waiting for a slot: waiting is a legitimate hold too.
        async with (
            lease(
                self.svc.redis,
                self.stream,
                self.group,
                entry_ids,
                self.s.lease_interval,
                consumer,
            ),
            self.slots,
        ):
            yield

    async def run_solve(
        self, job: Job, request: SolveRequest, implementation: Implementation
    ) -> tuple[SolveResult, float]:
        with solve_span(job.job_id, job.attempt, implementation.value) as span:
            result, elapsed_ms = await self._watch_solve(job, request, implementation, span)
            span.finished(result)
        return result, elapsed_ms

    async def _watch_solve(
        self, job: Job, request: SolveRequest, implementation: Implementation, span: SolveSpan
    ) -> tuple[SolveResult, float]:
        time_limit = min(request.solver.time_limit_seconds, self.s.solver_max_time_limit)
        control = SolveControl()
        reporter = ProgressReporter(job.job_id, time_limit, self.s.progress_interval_seconds)
        handed_back = False
        await self.records.update(
            job.job_id,
            JobState.RUNNING,
            attempts=job.attempt,
            solver=implementation.value,
            worker=self.s.consumer_name,
            started_at=f"{now():.3f}",
        )
        self.svc.metrics.job_in()
        self.svc.metrics.queue_wait((now() - job.submitted_at) * 1000)
        started = time.perf_counter()
        task = asyncio.create_task(
            asyncio.to_thread(self._solve, request, implementation, time_limit, control)
        )
        # Last line of defence: whatever wedges the solve thread (the process watchdog lives in
        # it), the job is not held hostage; it goes to the fallback as a timeout.
        abandon_at = started + time_limit + self.s.solver_watchdog_grace_seconds + STUCK_MARGIN
        stuck = False
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=POLL_SECONDS)
                if task.done():
                    break
                if time.perf_counter() > abandon_at:
                    stuck = True
                    break
                remaining = time_limit - (time.perf_counter() - started)
                if (
                    self.stop_deadline is not None
                    and not control.cancel.is_set()
                    and time.monotonic() + remaining > self.stop_deadline
                ):
                    handed_back = True
                    control.cancel.set()
                control.refresh()
                try:
                    await self._tick(job, control, reporter, span)
                except Exception:  # progress and cancel checks are best effort
                    log.warning("progress/cancel check of %s failed", job.job_id, exc_info=True)
        except BaseException:
            # Never leave a solve thread running behind an abandoned handler: it would hold a
            # CPU outside the concurrency limit. Stop it and wait (cancel acts within 200 ms).
            control.cancel.set()
            await asyncio.shield(asyncio.wait({task}))
            raise
        if stuck:
            control.cancel.set()
            log.error("solve thread of %s did not return; abandoning it", job.job_id)
            raise SolverTimedOut(
                f"{self.stage}: solve of {job.job_id} did not return "
                f"{STUCK_MARGIN:g} s after its limit and grace; abandoned"
            )
        try:
            result = task.result()
        except Exception as err:
            if control.cancel.is_set() and not handed_back:
                raise Cancelled(str(err) or "cancelled before a roster was found") from err
            raise
        if handed_back:
            raise HandBack(f"{self.stage}: solve of {job.job_id} handed back at shutdown")
        return result, (time.perf_counter() - started) * 1000

    def _solve(
        self,
        request: SolveRequest,
        implementation: Implementation,
        time_limit: float,
        control: SolveControl,
    ) -> SolveResult:
        switches = switches_for(request, self.s.shiftstream_test_crash)
        # Only C can segfault: greedy stays in-process, where a tiny job costs microseconds
        # instead of a process start.
        if implementation is Implementation.GENERETIC and self.s.solver_isolation == "process":
            return solve_isolated(
                request,
                implementation=implementation,
                time_limit=time_limit,
                control=control,
                grace=self.s.solver_watchdog_grace_seconds,
                switches=switches,
            )
        return solve_direct(
            request,
            implementation=implementation,
            time_limit=time_limit,
            control=control,
            switches=switches,
        )

    async def _tick(
        self, job: Job, control: SolveControl, reporter: ProgressReporter, span: SolveSpan
    ) -> None:
        if not control.cancel.is_set() and await is_cancelled(
            self.svc.redis, self.names, job.job_id
        ):
            control.cancel.set()
        update = reporter.outcome(control.progress, time.monotonic())
        if update is None:
            self.svc.metrics.progress_dropped()
        else:
            span.progress(control.progress, update.progress)
            await self.svc.publish(update, self.names.outcomes)

    async def completed(
        self,
        job: Job,
        result: SolveResult,
        elapsed_ms: float,
        used: Implementation,
        pipe: Any = None,
    ) -> None:
        self.svc.metrics.solve_time(elapsed_ms, used.value)
        self.svc.metrics.job_out("completed", solver=used.value)
        await self.svc.publish(
            Outcome(
                kind=OutcomeKind.COMPLETED,
                job_id=job.job_id,
                result=result.model_dump_json(),
                solve_time_ms=round(elapsed_ms, 1),
                solver_used=used.value,
                attempts=job.attempt,
                cancelled=bool(result.stats and result.stats.cancelled),
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

    def attempt_error(self, job: Job, err: BaseException) -> AttemptError:
        error_class = ErrorClass.TIMEOUT if isinstance(err, TimeoutError) else ErrorClass.CRASH
        return AttemptError(
            attempt=job.attempt,
            stage=self.stage,
            error_class=error_class,
            # An error raised in the solver's child process keeps its own class name.
            error_type=getattr(err, "error_type", type(err).__name__),
            message=str(err)[:2000] or type(err).__name__,
        )

    async def transient(self, job: Job, error: AttemptError, pipe: Any = None) -> None:
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

    async def skip(self, job: Job) -> bool:
        """A redelivered or duplicated job whose end was already reported needs no work."""
        return await self.records.is_terminal(job.job_id)

    # ------------------------------------------------------------------ the two services

    def implementation_for(self, request: SolveRequest) -> Implementation:
        # A request that names its solver gets it; otherwise the deployment decides.
        return request.solver.implementation or self.s.solver_implementation

    def inline(self, request: SolveRequest, used: Implementation) -> bool:
        """A greedy solve of a tiny roster runs on the event loop, its outcome batched.

        For such a roster the solve takes less time than the thread hop, the progress polling
        and the job record writes that guard a long solve; anything bigger, and every C solve
        (it may crash, so it runs isolated), takes the guarded path.
        """
        cells = len(request.employees) * request.horizon.days * len(request.shift_types)
        return used is Implementation.GREEDY and cells <= self.s.solver_inline_max_cells

    async def handle_jobs(self, batch: list[Delivery[Job]]) -> None:
        """Tiny greedy jobs and quick verdicts in one pipeline; at most one guarded solve.

        A batch holds its entries until it returns, so a second long solve in it would wait
        for the first while another replica might be idle: it is put back at the tail of the
        stream instead (written before the batch is acked, so it cannot be lost).
        """
        checking = asyncio.ensure_future(self._check_all([d.body.job_id for d in batch]))
        # Let the check go out first: the parsing and tiny solves below then run while it is
        # on the wire, and an idle job pays one round trip less (bench/README.md).
        await asyncio.sleep(0)
        requests = [_parse_or_none(d.body, self.s) for d in batch]
        ahead = self._solve_ahead(batch, requests)
        checks = await checking
        guarded: tuple[Delivery[Job], SolveRequest] | None = None
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            for i, (d, request, (terminal, cancelled)) in enumerate(
                zip(batch, requests, checks, strict=True)
            ):
                if terminal:
                    continue  # a redelivered or duplicated job whose end was already reported
                job = d.body
                quick = (
                    request is None
                    or cancelled
                    or d.delivery_count > self.s.max_deliveries
                    or self.inline(request, self.implementation_for(request))
                )
                if not quick and request is not None:
                    if guarded is None:
                        guarded = (d, request)
                    else:
                        await requeue(pipe, self.stream, d, self.s.stream_maxlen)
                    continue
                with entry_span(self.stream, d), job_scope(job.job_id, attempt=job.attempt):
                    await self._quick(d, request, cancelled, pipe, ahead.get(i))
            await pipe.execute()
        if guarded is not None:
            d, request = guarded
            job = d.body
            with entry_span(self.stream, d), job_scope(job.job_id, attempt=job.attempt):
                # The whole batch stays unacked until this returns: keep all of it leased.
                async with self.holding([x.entry_id for x in batch], d.consumer):
                    await self._guarded(job, request)

    async def _check_all(self, job_ids: list[str]) -> list[tuple[bool, bool]]:
        """(already ended, cancel requested) for each job, in one round trip."""
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hget(self.names.job(job_id), "state")
                pipe.exists(self.names.cancel(job_id))
            replies = await pipe.execute()
        return [
            (state is not None and _text(state) in TERMINAL_STATES, bool(cancel))
            for state, cancel in zip(replies[::2], replies[1::2], strict=True)
        ]

    def _solve_ahead(
        self, batch: list[Delivery[Job]], requests: list[SolveRequest | None]
    ) -> dict[int, Ahead]:
        """The batch's tiny greedy solves, made before knowing whether each job is still due.

        A job found cancelled or already ended just throws its roster away. With tracing on
        the solves wait for the check instead, so each runs inside its entry's `solve` span.
        """
        if tracing_on():
            return {}
        ahead: dict[int, Ahead] = {}
        for i, (d, request) in enumerate(zip(batch, requests, strict=True)):
            if (
                request is not None
                and d.delivery_count <= self.s.max_deliveries
                and self.inline(request, self.implementation_for(request))
            ):
                ahead[i] = self._solve_now(request)
        return ahead

    def _solve_now(self, request: SolveRequest) -> Ahead:
        time_limit = min(request.solver.time_limit_seconds, self.s.solver_max_time_limit)
        started = time.perf_counter()
        try:
            result = solve_direct(
                request,
                implementation=Implementation.GREEDY,
                time_limit=time_limit,
                control=SolveControl(),
            )
        except Exception as err:
            return Ahead(None, err, (time.perf_counter() - started) * 1000)
        return Ahead(result, None, (time.perf_counter() - started) * 1000)

    async def _quick(
        self,
        d: Delivery[Job],
        request: SolveRequest | None,
        cancelled: bool,
        pipe: Any,
        ahead: Ahead | None = None,
    ) -> None:
        job = d.body
        if d.delivery_count > self.s.max_deliveries:
            await self.poison(job, d.delivery_count, pipe)
        elif cancelled:
            await self.cancelled(job, "cancelled before the solve started", pipe)
        elif request is None:
            try:
                parse_request(job.payload, self.s.limits)
            except InvalidRequest as err:
                await self.invalid(job, err, pipe)
        else:
            await self._solve_inline(job, request, pipe, ahead)

    async def _solve_inline(
        self, job: Job, request: SolveRequest, pipe: Any, ahead: Ahead | None
    ) -> None:
        used = Implementation.GREEDY
        self.svc.metrics.job_in()
        self.svc.metrics.queue_wait((now() - job.submitted_at) * 1000)
        if ahead is None:
            with solve_span(job.job_id, job.attempt, used.value) as span:
                ahead = self._solve_now(request)
                if ahead.result is not None:
                    span.finished(ahead.result)
                elif ahead.error is not None:
                    span.span.record_exception(ahead.error)
                    span.span.set_status(Status(StatusCode.ERROR, type(ahead.error).__name__))
        if ahead.result is None:
            await self._solve_failed(job, ahead.error or RuntimeError("no roster"), pipe)
            return
        await self.completed(job, ahead.result, ahead.elapsed_ms, used, pipe)

    async def _guarded(self, job: Job, request: SolveRequest) -> None:
        used = self.implementation_for(request)
        if await is_cancelled(self.svc.redis, self.names, job.job_id):
            await self.cancelled(job, "cancelled before the solve started")
            return
        try:
            result, elapsed = await self.run_solve(job, request, used)
        except Cancelled as err:
            await self.cancelled(job, f"cancelled: {err}")
            return
        except HandBack:
            raise
        except Exception as err:
            await self._solve_failed(job, err)
            return
        await self.completed(job, result, elapsed, used)

    async def _solve_failed(self, job: Job, err: Exception, pipe: Any = None) -> None:
        log.warning("solve of %s failed: %r", job.job_id, err)
        error = self.attempt_error(job, err)
        record_failure(error.error_class.value, err)
        self.svc.metrics.failure(error.error_class.value, stage=self.stage)
        if self.s.solver_allow_fallback:
            self.svc.metrics.fallback(error.error_class.value)
            await self.svc.publish(
                FallbackJob(job=job, error=error), self.names.fallback, pipeline=pipe
            )
        else:
            await self.transient(job, error, pipe)

    async def handle_fallback(self, item: FallbackJob, msg: Any) -> None:
        with job_scope(item.job.job_id, attempt=item.job.attempt):
            await self._handle_fallback(item, msg)

    async def _handle_fallback(self, item: FallbackJob, msg: Any) -> None:
        job = item.job.model_copy(update={"history": [*item.job.history, item.error]})
        if await self.poisoned(job, msg) or await self.skip(job):
            return
        async with self.holding([_entry_id(msg)]):
            if await is_cancelled(self.svc.redis, self.names, job.job_id):
                await self.cancelled(job, "cancelled before the fallback solve started")
                return
            try:
                request = parse_request(job.payload, self.s.limits)
                result, elapsed = await self.run_solve(job, request, Implementation.GREEDY)
            except InvalidRequest as err:
                await self.invalid(job, err)
                return
            except Cancelled as err:
                await self.cancelled(job, f"cancelled: {err}")
                return
            except HandBack:
                raise
            except Exception as err:
                log.warning("fallback solve of %s failed: %r", job.job_id, err)
                self.svc.metrics.failure(self.attempt_error(job, err).error_class.value, self.stage)
                await self.transient(
                    item.job.model_copy(update={"history": [*item.job.history, item.error]}),
                    self.attempt_error(job, err),
                )
                return
            await self.completed(job, result, elapsed, Implementation.GREEDY)
