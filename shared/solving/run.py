"""The watched solve that the solver and the fallback share: one job's solve in a thread,
with its progress published, its cancel and its shutdown honoured, and its claim kept fresh.

- Progress: every `POLL_SECONDS` the solve's control struct is read and, at most once per
  `PROGRESS_INTERVAL_SECONDS`, a progress outcome is published (shared/solving/progress.py).
- Cancel: a cancel marker for the job sets the solve's cancel flag; the solve returns its best
  roster so far, or raises `Cancelled` when it has none.
- Shutdown: once SIGTERM arrived, a solve that would outlive the grace period is stopped and
  handed back (`HandBack`): its entry stays pending for another worker.
- A solve thread that does not return `STUCK_MARGIN` seconds after its limit and the watchdog's
  grace is abandoned as a timeout, so a wedged solve cannot hold the job hostage.
- Leases: `holding()` renews the claim on the hop's entries while the solve runs (and while it
  waits for one of the `WORKER_CONCURRENCY` slots), so no reclaimer takes them from a live
  worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable

from shared.errors import Cancelled, HandBack, SolverTimedOut
from shared.jobs.lease import lease
from shared.jobs.messages import Job, now
from shared.jobs.records import JobRecords, JobState, is_cancelled
from shared.observability.tracing import SolveSpan, solve_span
from shared.roster.evaluator import Rendered
from shared.roster.model import Implementation, SolveRequest
from shared.roster.solving import SolveControl
from shared.solving.dispatch import cells_of
from shared.solving.drop import ResultDrop
from shared.solving.isolation import (
    solve_direct_rendered,
    solve_isolated_rendered,
    switches_for,
    warm_up,
)
from shared.solving.progress import ProgressReporter
from shared.solving.report import Reports
from shared.streaming.broker import Service

log = logging.getLogger("shiftstream.solver")
# The cancel marker's EXISTS is the tick's one round trip: at 10 ms a cancel waits 5 ms on
# average for it, where 100 ms took half of a 12 MB roster's 200 ms cancel budget and 25 ms
# still a tenth (decisions 0031, 0036; `task bench:limits`); 100 EXISTS a second per running
# solve cost Redis nothing it notices.
POLL_SECONDS = 0.01
# The solver service runs a greedy solve this large in a child process too, like every C solve:
# there it does not share the service's GIL with the event loop, stores its result itself
# (shared/solving/drop.py) and leaves its memory to the exit; a process start costs ~20 ms,
# nothing next to such a solve. The fallback keeps its greedy in-process: it is the last
# resort, which nothing about child processes may fail.
ISOLATED_GREEDY_MIN_CELLS = 100_000
# A failing progress/cancel check is logged again only after this long without a failure.
TICK_WARNING_QUIET_SECONDS = 5.0
# Leave this much of the grace period for writing the outcome and acking.
SHUTDOWN_MARGIN_SECONDS = 2.0
# Beyond time limit + watchdog grace, this much more before a silent solve thread is abandoned.
STUCK_MARGIN = 15.0


def runs_isolated(implementation: Implementation, cells: int, stage: str, mode: str) -> bool:
    """Whether a guarded solve runs in a child process: every C solve (C can segfault), and the
    solver's greedy ones from `ISOLATED_GREEDY_MIN_CELLS` employee-days, unless the deployment
    runs solves in threads (`SOLVER_ISOLATION`, `mode`)."""
    if mode != "process":
        return False
    if implementation is Implementation.GENERETIC:
        return True
    return stage == "solver" and cells >= ISOLATED_GREEDY_MIN_CELLS


class SolveRunner:
    """Runs watched solves for one service.

    Parameters:
        svc: the service (its client, settings, metrics and app).
        stage: the service's name, for errors and spans (`solver` or `fallback`).
        stream, group: the hop's input, whose entries `holding()` keeps leased.
    """

    def __init__(self, svc: Service, stage: str, stream: str, group: str) -> None:
        self.svc = svc
        self.s = svc.settings
        self.stage = stage
        self.stream = stream
        self.group = group
        self.records = JobRecords(svc.redis, svc.names, svc.settings)
        # Readers and the reclaimer share it, so at most WORKER_CONCURRENCY solves run at once.
        self.slots = asyncio.Semaphore(svc.settings.worker_concurrency)
        self.stop_deadline: float | None = None
        svc.app.on_shutdown(self._stopping)

    async def warm_up(self) -> None:
        """Start the solver's fork server before the first job (process isolation only).

        Wired on startup, before any subscriber reads: the fork server must not be started by
        the warm-up and a first solve at once (a chaos run hung two solves that way), and
        without it the first job would pay for importing numpy and the C solver.
        """
        try:
            await asyncio.to_thread(warm_up)
        except Exception:  # the first solve starts it again, or reports why it cannot
            log.warning("starting the solver fork server failed", exc_info=True)

    def _stopping(self) -> None:
        self.stop_deadline = time.monotonic() + self.s.graceful_timeout - SHUTDOWN_MARGIN_SECONDS

    def time_limit(self, request: SolveRequest) -> float:
        return min(request.solver.time_limit_seconds, self.s.solver_max_time_limit)

    @contextlib.asynccontextmanager
    async def holding(
        self, entry_ids: list[str | bytes], consumer: str | None = None, stream: str = ""
    ) -> AsyncIterator[None]:
        """`stream`: the entries' own (one of a prioritized hop's), else the hop's."""
        # The lease starts before waiting for a slot: waiting is a legitimate hold too.
        async with (
            lease(
                self.svc.redis,
                stream or self.stream,
                self.group,
                entry_ids,
                self.s.lease_interval,
                consumer,
            ),
            self.slots,
        ):
            yield

    async def run_to_outcome(
        self,
        job: Job,
        request: SolveRequest,
        used: Implementation,
        reports: Reports,
        failed: Callable[[Exception], Awaitable[None]],
    ) -> None:
        """Solve and write how it ended: completed (a cancelled solve with a roster, too),
        cancelled, or `failed(err)`. A hand-back at shutdown propagates: the entry stays
        pending for another worker and nothing is reported.

        A large result goes under one key whoever stores it (`ResultDrop`: the solve's child,
        else `Reports.completed`); when no outcome names that key in the end (a failure, a
        hand-back, a child killed after its SET), it is unlinked, not left for a day.
        """
        if await is_cancelled(self.svc.redis, self.svc.names, job.job_id):
            await reports.cancelled(job, f"cancelled before the {self.stage} solve started")
            return
        drop = ResultDrop.for_solve(self.s, self.svc.names, job.job_id, cells_of(request))
        key = drop.key if drop is not None else None
        named = False
        try:
            try:
                result, elapsed = await self.run(job, request, used, drop)
            except Cancelled as err:
                await reports.cancelled(job, f"cancelled: {err}")
                return
            except HandBack:
                raise
            except Exception as err:
                await failed(err)
                return
            await reports.completed(job, result, elapsed, used, None, key=key)
            named = True
        finally:
            if key is not None and not named:
                with contextlib.suppress(Exception):
                    await self.svc.redis.unlink(key)

    async def run(
        self,
        job: Job,
        request: SolveRequest,
        implementation: Implementation,
        drop: ResultDrop | None = None,
    ) -> tuple[Rendered, float]:
        """Solve `request` for `job`: the result (rendered: its JSON and its summary) and the
        solve's wall time in ms. With `drop`, a solve in a child process may store a large
        result itself (`Rendered.key`)."""
        with solve_span(job.job_id, job.attempt, implementation.value) as span:
            result, elapsed_ms = await self._watch(job, request, implementation, span, drop)
            span.finished(result.summary)
        return result, elapsed_ms

    async def _watch(
        self,
        job: Job,
        request: SolveRequest,
        implementation: Implementation,
        span: SolveSpan,
        drop: ResultDrop | None,
    ) -> tuple[Rendered, float]:
        time_limit = self.time_limit(request)
        control = SolveControl()
        reporter = ProgressReporter(
            job.job_id, time_limit, self.s.progress_interval_seconds, implementation.value
        )
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
            asyncio.to_thread(self._solve, request, implementation, time_limit, control, drop)
        )
        # Last line of defence: whatever wedges the solve thread (the process watchdog lives in
        # it), the job is not held hostage; it goes to the fallback as a timeout.
        abandon_at = started + time_limit + self.s.solver_watchdog_grace_seconds + STUCK_MARGIN
        stuck = False
        quiet_until = 0.0
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
                    # Said once per outage, not at every 10 ms tick while Redis is away.
                    if time.monotonic() >= quiet_until:
                        log.warning(
                            "progress/cancel check of %s failed", job.job_id, exc_info=True
                        )
                    quiet_until = time.monotonic() + TICK_WARNING_QUIET_SECONDS
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
        drop: ResultDrop | None,
    ) -> Rendered:
        switches = switches_for(request, self.s.shiftstream_test_crash)
        if runs_isolated(implementation, cells_of(request), self.stage, self.s.solver_isolation):
            return solve_isolated_rendered(
                request,
                implementation=implementation,
                time_limit=time_limit,
                control=control,
                grace=self.s.solver_watchdog_grace_seconds,
                switches=switches,
                drop=drop,
            )
        return solve_direct_rendered(
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
            self.svc.redis, self.svc.names, job.job_id
        ):
            control.cancel.set()
        update = reporter.outcome(control.progress, time.monotonic())
        if update is None:
            self.svc.metrics.progress_dropped()
        else:
            span.progress(control.progress, update.progress)
            await self.svc.publish(update, self.svc.names.outcomes)
