"""The bridge: official BullMQ Workers whose processor hands each job to ShiftStream's intake
and then keeps the BullMQ job in step with the ShiftStream job until it ends.

Per BullMQ job (`Bridge.process`):
1. `mapping.hand_over` turns it into the intake entry (job id = BullMQ job id, priority,
   not_before, trace context); a job that cannot be one fails at once (UnrecoverableError).
2. Its `Watch` is registered with the process's one events reader (follower.py), then
   `hand_over.lua` claims the job id for this BullMQ job and appends the intake entry in one
   step; the same round trip reads the job's terminal guard, so an ending written while no
   bridge held the job (a bridge that died, BullMQ's stalled check giving the job back) is
   found at once.
3. Progress events become `job.updateProgress`; `solver.completed` returns the roster (Node's
   `waitUntilFinished` gets it); `solver.failed` raises UnrecoverableError("<error_class>:
   <reason>"): ShiftStream's triage already retried what was transient, and the job id is
   spent, so a BullMQ retry would only read the same ending again.
4. The BullMQ job removed while held (only `obliterate({force: true})` removes an active job):
   the ShiftStream job is cancelled. Its lock taken by another worker: this one lets go. The
   process stopping: the job goes back to BullMQ's queue (moveToDelayed to now) for the next
   bridge, which re-attaches by step 2.

Nothing is solved twice: the intake's idempotency claim and this job-id claim see to that,
whatever BullMQ redelivers. Transient Redis errors are retried here, never turned into BullMQ
failures: a job's BullMQ `attempts` are not spent on a Redis restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any

import bullmq.redis_connection
from bullmq import UnrecoverableError, Worker
from bullmq.custom_errors import DelayedError
from opentelemetry import propagate, trace
from opentelemetry.trace import SpanKind
from redis.exceptions import BusyLoadingError, NoScriptError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from services.bridge.follower import Follower, Watch
from services.bridge.mapping import (
    Complete,
    Ending,
    HandOver,
    Refusal,
    Rules,
    conflict_reason,
    ending,
    ending_from_record,
    hand_over,
    trace_fields,
)
from shared.connection.factory import async_client, bullmq_connection, bullmq_settings
from shared.jobs.records import JobRecords
from shared.observability.health import process_name
from shared.observability.tracing import TRACER_NAME, job_scope, tracing_on
from shared.streaming.broker import Service
from shared.streaming.lua import script
from shared.text import text

log = logging.getLogger("shiftstream.bridge")

# The official Worker's loop waits on all of its in-flight jobs at every turn, so its CPU per
# job grows with its concurrency (docs/decisions/0010): held jobs are spread over Workers of
# at most this many (two Redis connections each).
PER_WORKER = 50
# Jobs taken from BullMQ and not yet handed over, per process: the backpressure between the
# Workers' fetches and the hand-overs (each a pooled connection, each holding its request).
UNHANDED_AT_MOST = 32
HEARTBEAT_SECONDS = 1.0
HEARTBEAT_TTL = 10
TRANSIENT = (RedisConnectionError, RedisTimeoutError, BusyLoadingError, ConnectionError, OSError)


class SerialFetchWorker(Worker):  # type: ignore[misc]
    """The official Worker, fetching one job at a time, and no faster than the bridge hands
    jobs over.

    Its loop starts a fetch for every free slot whenever the queue was not found drained, so a
    job that arrives alone sets off about `concurrency` moveToActive calls at once (84-130
    Redis calls and 9-14 ms of CPU per job at 100 per Worker; docs/decisions/0010). One fetch
    at a time: 4 calls and 1.2 ms. Across the process's Workers, at most `unhanded` jobs are
    between BullMQ and the intake: a backlog taken at once would otherwise hold thousands of
    requests in memory waiting for their hand-over (281 MB against 188 MB at 5,000 held).
    """

    def __init__(self, *args: Any, unhanded: asyncio.Semaphore, **kwargs: Any) -> None:
        # Before the Worker starts its loop (its constructor does).
        self._fetching = asyncio.Semaphore(1)
        self._unhanded = unhanded
        super().__init__(*args, **kwargs)

    async def getNextJob(self, token: str) -> Any:
        async with self._fetching:
            if self.closing:  # the fetches queued here must not each block on BZPOPMIN
                return None
            return await super().getNextJob(token)

    async def moveToActive(self, token: str) -> Any:
        # Here, not in getNextJob: a fetch idling on BZPOPMIN must not hold a slot.
        await self._unhanded.acquire()
        job = None
        try:
            job = await super().moveToActive(token)
        finally:
            if job is None:
                self._unhanded.release()
        if job is not None:
            job.shiftstream_unhanded = self._unhanded  # released by `handed` once handed over
        return job

    async def processJob(self, job: Any, token: str) -> Any:
        try:
            return await super().processJob(job, token)
        finally:
            handed(job)  # a job the processor never saw (a deferred failure) frees its slot too


# Each of the Workers' Redis connections (two per Worker) registers BullMQ's ~35 Lua scripts,
# reading each file again: 0.7 MB of script text per Worker, 140 MB of RSS at 10,000 held
# jobs. One copy of each text for the whole process (the Script objects keep a reference).
bullmq.redis_connection.loadScript = functools.cache(bullmq.redis_connection.loadScript)


def handed(job: Any) -> None:
    """The job is in the intake (or will not be): its fetch slot is free again."""
    slot = getattr(job, "shiftstream_unhanded", None)
    if slot is not None:
        job.shiftstream_unhanded = None
        slot.release()


def split(total: int, per: int = PER_WORKER) -> list[int]:
    """`total` held jobs as the concurrencies of ceil(total / per) Workers, as even as can be."""
    n = max(1, math.ceil(total / per))
    base, extra = divmod(total, n)
    return [base + (1 if i < extra else 0) for i in range(n)]


@dataclass(eq=False)
class Held:
    """One BullMQ job this process holds (its lock, its watch) while ShiftStream works on it."""

    queue: str
    job: Any
    token: str
    watch: Watch
    removed: bool = False
    lost: bool = False
    reported: int | None = None
    record_ending: Ending | None = None

    @property
    def job_id(self) -> str:
        return self.watch.job_id


class Bridge:
    def __init__(self, svc: Service, rules: Rules) -> None:
        self.svc = svc
        self.s = s = svc.settings
        self.names = svc.names
        self.rules = rules
        self.redis = svc.redis
        self.bull_url = s.bullmq_redis_url or s.redis_url
        # Reads BullMQ's keys directly only when a lock renewal failed (removed? taken over?).
        self.bull = async_client(bullmq_settings(s), round_trip_timeout=10)
        self.records = JobRecords(svc.redis, svc.names, s)
        self.follower = Follower(svc.redis, svc.names.events, on_resync=self._recheck_guards)
        self.held: set[Held] = set()
        self.workers: list[SerialFetchWorker] = []
        self.closing = False
        self._hand_over_lua = svc.redis.register_script(script(__file__, "hand_over"))
        self._beating: asyncio.Task[None] | None = None
        self._checks: set[asyncio.Task[None]] = set()
        self._unhanded = asyncio.Semaphore(UNHANDED_AT_MOST)
        self._heartbeat = svc.names.bridge_heartbeat(process_name())

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        await self._load()
        await self.follower.start()
        for queue in self.rules.queues:
            for i, concurrency in enumerate(split(self.s.bullmq_concurrency)):
                worker = SerialFetchWorker(
                    queue,
                    self._processor(queue),
                    self._worker_opts(concurrency, i),
                    unhanded=self._unhanded,
                )
                worker.on("error", self._on_error)
                worker.on("stalled", self._on_stalled)
                worker.on("lockRenewalFailed", functools.partial(self._on_renewal_failed, queue))
                self.workers.append(worker)
        self._beating = asyncio.create_task(self._heartbeat_loop(), name="bridge-heartbeat")
        log.info(
            "bridging BullMQ queues %s (%s prefix %r) into %s: up to %d jobs held per queue "
            "in %d Workers each",
            ", ".join(self.rules.queues), _redacted(self.bull_url), self.s.bullmq_prefix,
            self.names.intake, self.s.bullmq_concurrency, len(split(self.s.bullmq_concurrency)),
        )

    def _worker_opts(self, concurrency: int, index: int) -> dict[str, Any]:
        return {
            "connection": bullmq_connection(self.s),
            "prefix": self.s.bullmq_prefix,
            "concurrency": concurrency,
            "lockDuration": self.s.bullmq_lock_duration_ms,
            "stalledInterval": self.s.bullmq_stalled_interval_ms,
            "maxStalledCount": self.s.bullmq_max_stalled_count,
            # CLIENT LIST shows who holds the jobs: `bull:<queue>:w:shiftstream-bridge-...`.
            "name": f"shiftstream-bridge-{process_name()}-{index}",
        }

    async def stop(self) -> None:
        """Stop taking jobs and give the held ones back to BullMQ, for the next bridge."""
        self.closing = True
        held = len(self.held)
        for h in list(self.held):
            h.watch.changed.set()
        await asyncio.gather(*(w.close() for w in self.workers), return_exceptions=True)
        for task in (self._beating, *self._checks):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.follower.stop()
        with contextlib.suppress(RedisError, OSError):
            await self.redis.delete(self._heartbeat)
        await self.bull.aclose()
        log.info("bridge stopped; %d held jobs given back to BullMQ", held)

    def _on_error(self, err: Any, *_: Any) -> None:
        # The Worker renews its locks in batches: a job that ends while its batch is on the wire
        # reports a failed renewal. What a failed renewal means is `_check_locks`' business.
        level = logging.DEBUG if str(err).startswith("could not renew lock") else logging.WARNING
        log.log(level, "BullMQ worker: %s", err)

    def _on_stalled(self, job_id: Any, *_: Any) -> None:
        log.info("BullMQ gave back stalled job %s (a bridge holding it died)", job_id)

    async def _load(self) -> None:
        await self.redis.script_load(self._hand_over_lua.script)

    # ------------------------------------------------------------------ one BullMQ job

    def _processor(self, queue: str) -> Any:
        async def process(job: Any, token: str) -> Any:
            return await self.process(queue, job, token)

        return process

    async def process(self, queue: str, job: Any, token: str) -> Any:
        job_id = str(job.id)
        with job_scope(job_id):
            plan = hand_over(
                queue, job_id, int(job.timestamp or 0), job.data, job.opts or {},
                int(job.priority or 0), self.rules,
            )  # fmt: skip
            if isinstance(plan, Refusal):
                handed(job)
                log.warning("%s: refused BullMQ job %s: %s", queue, job_id, plan.reason)
                self.svc.metrics.failure("invalid", stage="bridge")
                raise UnrecoverableError(plan.reason)
            # The request now travels in the intake entry; the BullMQ Job object lives as long
            # as ShiftStream takes, and its decoded data is ~30x the held job's other cost
            # (bench/bridge_capacity.py).
            job.data = None
            held = Held(queue, job, token, Watch(job_id))
            self.held.add(held)
            self.follower.add(held.watch)
            try:
                try:
                    status = await self._hand_over_traced(held, plan, job.opts or {})
                finally:
                    handed(job)
                del plan  # the entry (the request, again) is no longer needed here
                if status is None:
                    return await self._hand_back(held)
                self.svc.metrics.job_in()
                if status != "new":
                    log.info("%s: re-attached to ShiftStream job %s (%s)", queue, job_id, status)
                return await self._follow(held)
            finally:
                self.follower.remove(held.watch)
                self.held.discard(held)

    async def _hand_over_traced(
        self, held: Held, plan: HandOver, opts: dict[str, Any]
    ) -> str | None:
        producer = trace_fields(opts)
        if not tracing_on():
            return await self._hand_over(held, plan, plan.fields | producer)
        tracer = trace.get_tracer(TRACER_NAME)
        with tracer.start_as_current_span(
            f"{held.queue} bridge",
            context=propagate.extract(producer),
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": "bullmq",
                "messaging.operation": "process",
                "messaging.destination.name": held.queue,
                "messaging.message.id": plan.job_id,
                "job.id": plan.job_id,
                "job.priority": plan.priority,
            },
        ):
            carrier: dict[str, str] = {}
            propagate.inject(carrier)
            return await self._hand_over(held, plan, plan.fields | carrier)

    async def _hand_over(self, held: Held, plan: HandOver, fields: dict[str, str]) -> str | None:
        """The hand-over, retried through transient Redis errors; None: the process is
        stopping before it got through (the job goes back to BullMQ)."""
        delay = 0.1
        while True:
            try:
                try:
                    return await self._try_hand_over(held, plan, fields)
                except NoScriptError:  # a restarted Redis: loading it again may meet it down
                    await self._load()
            except TRANSIENT as err:
                if self.closing:
                    return None
                log.warning("handing %s over failed (%s); retrying", plan.job_id, err)
                await asyncio.sleep(delay)
                delay = min(2.0, delay * 2)

    async def _try_hand_over(self, held: Held, plan: HandOver, fields: dict[str, str]) -> str:
        n, job_id = self.names, plan.job_id
        flat = [x for kv in fields.items() for x in kv]
        claim = [n.bridged(job_id), n.intake]
        args: list[str | int] = [
            plan.identity, self.s.idempotency_ttl_seconds, self.s.stream_maxlen
        ]
        sha = self._hand_over_lua.sha
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.evalsha(sha, 2, *claim, *args, "claim", *flat)
            pipe.get(n.terminal(job_id))
            pipe.exists(n.idempotency(job_id))
            pipe.exists(n.job(job_id))
            reply, guard, known, recorded = await pipe.execute()
        status, detail = text(reply[0]), text(reply[1])
        if status == "taken":
            reason = conflict_reason(job_id, detail, self.s.idempotency_ttl_seconds)
            log.warning("%s: refused BullMQ job %s: %s", held.queue, job_id, reason)
            raise UnrecoverableError(reason)
        if status == "again" and guard is None and not known and not recorded:
            # Handed over before, yet ShiftStream knows nothing of it: the intake entry was
            # lost (a Redis that came back without its data). Send it again; if the intake
            # had it after all, its idempotency claim drops the second one.
            reply = await self.redis.evalsha(sha, 2, *claim, *args, "resend", *flat)
            status = text(reply[0])
        if not await self.follower.recall(held.watch, guard):
            held.record_ending = ending_from_record(job_id, await self.records.get(job_id))
            held.watch.changed.set()
        return status

    async def _follow(self, held: Held) -> Any:
        """Until the ShiftStream job ends (its value: the BullMQ return value), or the BullMQ
        job is gone, taken over, or handed back."""
        watch = held.watch
        while True:
            watch.changed.clear()
            if watch.terminal is not None:
                return await self._settle(held, ending(watch.terminal))
            if held.record_ending is not None:
                return await self._settle(held, held.record_ending)
            if held.removed:
                await self._cancel(held)
                raise DelayedError()  # ends the processor without touching the (gone) job
            if held.lost:
                log.info("%s: lock on %s taken by another worker; letting go", held.queue,
                         held.job_id)  # fmt: skip
                raise DelayedError()
            if self.closing:
                return await self._hand_back(held)
            if watch.progress is not None and watch.progress != held.reported:
                held.reported = watch.progress
                try:
                    await held.job.updateProgress(watch.progress)
                except Exception as err:
                    # Best effort: a Redis blip, or the job removed meanwhile (BullMQ's script
                    # refuses it; the next lock renewal reveals the removal), must not fail it.
                    log.debug("progress of %s not passed on: %s", held.job_id, err)
                continue
            await watch.changed.wait()

    async def _settle(self, held: Held, end: Ending) -> Any:
        # No job.log line: the roster's stats and the failedReason say it all, and a log line
        # is one more round trip per job (bench/README.md).
        log.debug("%s: %s", held.job_id, end.summary)
        if isinstance(end, Complete):
            self.svc.metrics.job_out("completed")
            return end.value
        self.svc.metrics.job_out("failed")
        raise UnrecoverableError(end.message)

    async def _hand_back(self, held: Held) -> Any:
        """Back to BullMQ's queue at once (not after its lock expires) for the next bridge."""
        try:
            await held.job.moveToDelayed(int(time.time() * 1000), held.token)
            self.svc.metrics.job_out("handed-back")
        except Exception as err:
            # It stays active without a lock renewer: BullMQ's stalled check gives it back.
            log.info("handing %s back failed (%s); BullMQ's stalled check will", held.job_id, err)
        raise DelayedError()

    async def _cancel(self, held: Held) -> None:
        """The BullMQ job was removed while ShiftStream worked on it: cancel that too."""
        log.info("%s: BullMQ job %s was removed; cancelling it in ShiftStream", held.queue,
                 held.job_id)  # fmt: skip
        entry: Any = {"type": "cancel", "job_id": held.job_id}
        for attempt in range(5):
            try:
                await self.redis.xadd(
                    self.names.intake, entry, maxlen=self.s.stream_maxlen, approximate=True
                )
                self.svc.metrics.job_out("removed")
                return
            except TRANSIENT as err:
                log.warning("cancelling %s failed (%s)", held.job_id, err)
                await asyncio.sleep(0.2 * 2**attempt)

    # ------------------------------------------------------------------ background checks

    def _on_renewal_failed(self, queue: str, job_ids: list[Any]) -> None:
        """BullMQ could not renew these jobs' locks: each was removed, or its lock is another
        worker's now (or it just ended). Costs nothing while all is well, unlike polling every
        held job; noticed within a renewal (a quarter to a half of BULLMQ_LOCK_DURATION_MS)."""
        ids = {str(j) for j in job_ids}
        held = [h for h in self.held if h.queue == queue and h.job_id in ids]
        if held:
            task = asyncio.ensure_future(self._check_locks(held))
            self._checks.add(task)
            task.add_done_callback(self._checks.discard)

    async def _heartbeat_loop(self) -> None:
        while True:
            try:
                await self.redis.set(
                    self._heartbeat,
                    json.dumps({"at": time.time(), "held": len(self.held)}),
                    ex=HEARTBEAT_TTL,
                )
            except (RedisError, *TRANSIENT) as err:
                log.debug("heartbeat not written: %s", err)
            await asyncio.sleep(HEARTBEAT_SECONDS)

    async def _check_locks(self, held: list[Held]) -> None:
        """Which of these held jobs are gone from BullMQ, or locked by someone else now."""
        prefix = self.s.bullmq_prefix
        try:
            async with self.bull.pipeline(transaction=False) as pipe:
                for h in held:
                    key = f"{prefix}:{h.queue}:{h.job_id}"
                    pipe.exists(key)
                    pipe.get(f"{key}:lock")
                replies = await pipe.execute()
        except (RedisError, *TRANSIENT) as err:
            log.debug("checking locks failed: %s", err)  # the next renewal fails again
            return
        for i, h in enumerate(held):
            exists, lock = replies[2 * i], replies[2 * i + 1]
            if not exists:
                h.removed = True
            elif lock is None or text(lock) != h.token:
                h.lost = True
            else:
                continue
            h.watch.changed.set()

    async def _recheck_guards(self) -> None:
        """After the events reader lost Redis for a while: find endings it may have missed."""
        held = list(self.held)
        if not held:
            return
        async with self.redis.pipeline(transaction=False) as pipe:
            for h in held:
                pipe.get(self.names.terminal(h.job_id))
            guards = await pipe.execute()
        for h, guard in zip(held, guards, strict=True):
            if guard is not None and not await self.follower.recall(h.watch, guard):
                h.record_ending = ending_from_record(h.job_id, await self.records.get(h.job_id))
                h.watch.changed.set()


def _redacted(url: str) -> str:
    """The URL without its password, for log lines."""
    head, sep, tail = url.rpartition("@")
    if not sep:
        return url
    scheme, _, creds = head.partition("://")
    user = creds.split(":", 1)[0]
    return f"{scheme}://{user + ':***' if user else '***'}@{tail}"
