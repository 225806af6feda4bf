"""The fallback's handler: solve a job whose primary solve failed with the greedy solver,
which needs no C; if that fails too, triage retries the job."""

from __future__ import annotations

import logging

from shared.errors import InvalidRequest
from shared.jobs.messages import FallbackJob
from shared.observability.tracing import job_scope
from shared.roster.model import Implementation
from shared.roster.parse import parse_request
from shared.solving.report import Reports, attempt_error
from shared.solving.run import SolveRunner
from shared.streaming.broker import Service
from shared.streaming.hop import Delivery

log = logging.getLogger("shiftstream.fallback")


class FallbackHandler:
    """Handles one fallback entry at a time.

    Parameters:
        svc: the service.
        runner: the watched solve.
        reports: the outcome writer.
    """

    def __init__(self, svc: Service, runner: SolveRunner, reports: Reports) -> None:
        self.svc = svc
        self.s = svc.settings
        self.runner = runner
        self.reports = reports

    async def handle(self, delivery: Delivery[FallbackJob]) -> None:
        item = delivery.body
        with job_scope(item.job.job_id, attempt=item.job.attempt):
            # The primary's error joins the history, whatever happens next.
            job = item.job.model_copy(update={"history": [*item.job.history, item.error]})
            if await self.runner.records.is_terminal(job.job_id):
                return  # a redelivered or duplicated job whose end was already reported
            async with self.runner.holding([delivery.entry_id], stream=delivery.stream):
                try:
                    request = parse_request(job.payload, self.s.limits)
                except InvalidRequest as err:
                    await self.reports.invalid(job, err)
                    return

                async def failed(err: Exception) -> None:
                    log.warning("fallback solve of %s failed: %r", job.job_id, err)
                    error = attempt_error("fallback", job, err)
                    self.svc.metrics.failure(error.error_class.value, "fallback")
                    await self.reports.transient(job, error)

                await self.runner.run_to_outcome(
                    job, request, Implementation.GREEDY, self.reports, failed
                )
