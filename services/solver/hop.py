"""The solver's hop: a batch of jobs, its tiny greedy solves and quick verdicts in one
pipeline, and at most one guarded (long) solve; a failed solve goes to the fallback."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

from services.solver.choice import implementation_for, solves_inline
from shared.errors import InvalidRequest
from shared.jobs.messages import FallbackJob, Job, now
from shared.jobs.records import TERMINAL_STATES
from shared.observability.tracing import (
    entry_scope,
    record_failure,
    solved_inline,
    tracing_on,
)
from shared.roster.model import Implementation, SolveRequest, SolveResult
from shared.roster.parse import parse_request
from shared.roster.solving import SolveControl
from shared.solving.isolation import solve_direct
from shared.solving.report import Reports, attempt_error
from shared.solving.run import SolveRunner
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery, requeue
from shared.text import text

log = logging.getLogger("shiftstream.solver")


@dataclass(slots=True)
class Ahead:
    """An inline solve's outcome, kept until the batch knows the job is still due."""

    result: SolveResult | None
    error: Exception | None
    elapsed_ms: float


class SolverHop:
    """Handles the solver's batches.

    Parameters:
        svc: the service.
        runner: the watched solve (shared with nothing else in this process).
        reports: the outcome writer.
    """

    def __init__(self, svc: Service, runner: SolveRunner, reports: Reports) -> None:
        self.svc = svc
        self.s = svc.settings
        self.names = svc.names
        self.runner = runner
        self.reports = reports
        self.stream = runner.stream

    def implementation(self, request: SolveRequest) -> Implementation:
        return implementation_for(
            request, self.s.solver_implementation, self.s.solver_max_time_limit
        )

    def inline(self, request: SolveRequest) -> bool:
        used = self.implementation(request)
        return solves_inline(request, used, self.s.solver_inline_max_cells)

    def _parse(self, job: Job) -> SolveRequest | None:
        try:
            return parse_request(job.payload, self.s.limits)
        except InvalidRequest:
            return None

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
        requests = [self._parse(d.body) for d in batch]
        ahead = self._solve_ahead(requests)
        checks = await checking
        guarded: tuple[Delivery[Job], SolveRequest] | None = None
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            for i, (d, request, (terminal, cancelled)) in enumerate(
                zip(batch, requests, checks, strict=True)
            ):
                if terminal:
                    continue  # a redelivered or duplicated job whose end was already reported
                job = d.body
                if request is not None and not cancelled and not self.inline(request):
                    if guarded is None:
                        guarded = (d, request)
                    else:
                        # Back to its own priority's stream, keeping its wait for the aging.
                        since = int(job.submitted_at * 1000)
                        await requeue(pipe, d.stream or self.stream, d, since)
                    continue
                with entry_scope(self.stream, d, job.job_id, job.attempt):
                    await self._quick(job, request, cancelled, pipe, ahead.get(i))
            await pipe.execute()
        if guarded is not None:
            d, request = guarded
            job = d.body
            with entry_scope(self.stream, d, job.job_id, job.attempt):
                # The whole batch stays unacked until this returns: keep all of it leased.
                async with self.runner.holding(
                    [x.entry_id for x in batch], d.consumer, stream=d.stream
                ):
                    await self._guarded(job, request)

    async def _check_all(self, job_ids: list[str]) -> list[tuple[bool, bool]]:
        """(already ended, cancel requested) for each job, in one round trip."""
        async with self.svc.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hget(self.names.job(job_id), "state")
                pipe.exists(self.names.cancel(job_id))
            replies = await pipe.execute()
        return [
            (state is not None and text(state) in TERMINAL_STATES, bool(cancel))
            for state, cancel in zip(replies[::2], replies[1::2], strict=True)
        ]

    def _solve_ahead(self, requests: list[SolveRequest | None]) -> dict[int, Ahead]:
        """The batch's tiny greedy solves, made before knowing whether each job is still due.

        A job found cancelled or already ended just throws its roster away. A tiny solve has
        no span of its own: its figures go on its entry's span (`_solve_inline`).
        """
        return {
            i: self._solve_now(request)
            for i, request in enumerate(requests)
            if request is not None and self.inline(request)
        }

    def _solve_now(self, request: SolveRequest) -> Ahead:
        started = time.perf_counter()
        try:
            result = solve_direct(
                request,
                implementation=Implementation.GREEDY,
                time_limit=self.runner.time_limit(request),
                control=SolveControl(),
            )
        except Exception as err:
            return Ahead(None, err, (time.perf_counter() - started) * 1000)
        return Ahead(result, None, (time.perf_counter() - started) * 1000)

    async def _quick(
        self,
        job: Job,
        request: SolveRequest | None,
        cancelled: bool,
        pipe: Any,
        ahead: Ahead | None = None,
    ) -> None:
        if cancelled:
            await self.reports.cancelled(job, "cancelled before the solve started", pipe)
        elif request is None:
            try:
                parse_request(job.payload, self.s.limits)
            except InvalidRequest as err:
                await self.reports.invalid(job, err, pipe)
        else:
            await self._solve_inline(job, request, pipe, ahead)

    async def _solve_inline(
        self, job: Job, request: SolveRequest, pipe: Any, ahead: Ahead | None
    ) -> None:
        used = Implementation.GREEDY
        self.svc.metrics.job_in()
        self.svc.metrics.queue_wait((now() - job.submitted_at) * 1000)
        if ahead is None:
            ahead = self._solve_now(request)
        if tracing_on():
            # A span of its own would cost as much as the solve (a fifth of the pipeline's
            # tracing cost): the entry's `solver.jobs process` span carries the figures.
            solved_inline(used.value, ahead.result, ahead.error)
        if ahead.result is None:
            await self._solve_failed(job, ahead.error or RuntimeError("no roster"), pipe)
            return
        await self.reports.completed(job, ahead.result, ahead.elapsed_ms, used, pipe)

    async def _guarded(self, job: Job, request: SolveRequest) -> None:
        used = self.implementation(request)

        async def failed(err: Exception) -> None:
            await self._solve_failed(job, err)

        await self.runner.run_to_outcome(job, request, used, self.reports, failed)

    async def _solve_failed(self, job: Job, err: Exception, pipe: Any = None) -> None:
        """The primary solve failed: the fallback takes the job (`SOLVER_ALLOW_FALLBACK`),
        else triage retries it."""
        log.warning("solve of %s failed: %r", job.job_id, err)
        error = attempt_error("solver", job, err)
        record_failure(error.error_class.value, err)
        self.svc.metrics.failure(error.error_class.value, stage="solver")
        if self.s.solver_allow_fallback:
            self.svc.metrics.fallback(error.error_class.value)
            await self.svc.publish(
                FallbackJob(job=job, error=error),
                self.names.fallback_for(job.priority),
                pipeline=pipe,
            )
        else:
            await self.reports.transient(job, error, pipe)
